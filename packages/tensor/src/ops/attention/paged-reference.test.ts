// The reference paged attention kernel against a float64 recomputation over contiguous keys and values.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { attentionBound, attentionF64, expectWithinBound, pagesOf } from '../test-util';
import { Rng } from '../../random';
import { pagesAsAttention } from './paged-reference';
import { kernelSet } from '../../kernels/types';

const jsKernels = kernelSet('reference');

/** Runs of each property (raised ×20 once locally: `PAGED_RUNS=1200`). */
const RUNS = Number(process.env.PAGED_RUNS ?? 60);

describe('paged attention, reference kernel', () => {
  test('within float32 storage rounding of a float64 recomputation, for any block size, layout and query count (property)', () => {
    fc.assert(fc.property(
      fc.record({
        T: fc.integer({ min: 1, max: 12 }), past: fc.integer({ min: 0, max: 40 }), nkv: fc.integer({ min: 1, max: 3 }), rep: fc.integer({ min: 1, max: 3 }),
        d: fc.integer({ min: 1, max: 20 }), bs: fc.integer({ min: 1, max: 9 }), pad: fc.integer({ min: 0, max: 5 }), extra: fc.integer({ min: 0, max: 4 }),
        qk: fc.double({ min: 0.05, max: 4, noNaN: true }), seed: fc.integer(),
      }),
      ({ T, past, nkv, rep, d, bs, pad, extra, qk, seed }) => {
        const r = new Rng(seed), nh = nkv * rep, S = past + T + extra, row = nkv * d;
        const rnd = (n: number, s: number) => Float32Array.from({ length: n }, () => r.normal() * s);
        const q = rnd(T * nh * d, qk), k = rnd(S * row, qk), v = rnd(S * row, 1);
        const a = { T, nh, nkv, d, scale: 1 / Math.sqrt(d), qOffset: past, q, k, v };
        // Rows past qOffset + T − 1 (the `extra` tokens held, the rest of the last block) are never read: NaN there would show.
        const kv = pagesOf(k, v, S, nkv, d, bs, pad, false);
        const out = new Float32Array(T * nh * d).fill(NaN);
        jsKernels.pagedAttention({ T, nh, d, q, kv, scale: a.scale, qOffset: past, out });
        const exact = attentionF64(a);
        // Float64 arithmetic (unit roundoff 2⁻⁵³), the output stored as float32 (2⁻²⁴).
        expectWithinBound(out, exact, attentionBound(a, 2 ** -53, 2 ** -24, exact));
      }), { numRuns: RUNS });
  });

  test('gathers whole blocks: S is the blocks the queries see times the block size', () => {
    const d = 2, S = 11, k = Float32Array.from({ length: S * d }, (_, i) => i), v = k.map((x) => -x);
    const kv = pagesOf(k, v, S, 1, d, 4, 1, false);
    const g = pagesAsAttention({ T: 2, nh: 1, d, q: new Float32Array(2 * d), kv, scale: 1, qOffset: 3, out: new Float32Array(2 * d) });
    expect([g.B, g.S, g.nkv, g.qOffset]).toEqual([1, 8, 1, 3]);
    expect(Array.from(g.k)).toEqual(Array.from(k.subarray(0, 8 * d)));
    expect(Array.from(g.v)).toEqual(Array.from(v.subarray(0, 8 * d)));
  });
});
