// The cpu paged attention kernel against the reference kernel (within the float32 error bound of
// the SIMD decode kernel) and against the cpu attention kernel on the gathered pages (bit for bit).
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { attentionBound, expectWithinBound, pagesOf } from '../test-util';
import { Rng } from '../../random';
import { pagesAsAttention } from './paged-reference';
import { DECODE_MAX_ROWS } from './cpu-decode';
import { kernelSet } from '../../kernels/types';

const jsKernels = kernelSet('reference');
const cpuKernels = kernelSet('wasm');

/** Runs of each property (raised ×20 once locally: `PAGED_RUNS=1200`). */
const RUNS = Number(process.env.PAGED_RUNS ?? 60);

interface Case { T: number; past: number; nkv: number; rep: number; d: number; bs: number; pad: number; heap: boolean; qk: number; seed: number }

const caseArb = (maxT: number, dims: number[]): fc.Arbitrary<Case> => fc.record({
  T: fc.integer({ min: 1, max: maxT }), past: fc.integer({ min: 0, max: 70 }), nkv: fc.integer({ min: 1, max: 3 }), rep: fc.integer({ min: 1, max: 3 }),
  d: fc.constantFrom(...dims), bs: fc.integer({ min: 1, max: 24 }), pad: fc.integer({ min: 0, max: 5 }), heap: fc.boolean(),
  qk: fc.double({ min: 0.05, max: 4, noNaN: true }), seed: fc.integer(),
});

function makeCase({ T, past, nkv, rep, d, bs, pad, heap, qk, seed }: Case) {
  const r = new Rng(seed), nh = nkv * rep, S = past + T, row = nkv * d;
  const rnd = (n: number, s: number) => Float32Array.from({ length: n }, () => r.normal() * s);
  const q = rnd(T * nh * d, qk), k = rnd(S * row, qk), v = rnd(S * row, 1);
  const kv = pagesOf(k, v, S, nkv, d, bs, pad, heap);
  const args = (out: Float32Array) => ({ T, nh, d, q, kv, scale: 1 / Math.sqrt(d), qOffset: past, out });
  return { T, nh, d, args, contiguous: { T, nh, nkv, d, scale: 1 / Math.sqrt(d), qOffset: past, q, k, v } };
}

describe('paged attention, cpu kernel', () => {
  test('decoding (few rows, d a multiple of 16) reads the pages in place within the SIMD kernel\'s float32 bound of the reference (property)', () => {
    fc.assert(fc.property(caseArb(DECODE_MAX_ROWS, [16, 32, 64]), (c) => {
      const { T, nh, d, args, contiguous } = makeCase(c);
      const got = new Float32Array(T * nh * d).fill(NaN), ref = new Float32Array(T * nh * d);
      cpuKernels.pagedAttention!(args(got));
      jsKernels.pagedAttention(args(ref));
      // The reference is the exact value rounded once to float32 (see its test): the kernel's
      // float32 bound (unit roundoff 2⁻²⁴, attentionBound) plus that rounding.
      expectWithinBound(got, ref, attentionBound(contiguous, 2 ** -24, 2 ** -24, Float64Array.from(ref)));
    }), { numRuns: RUNS });
  });

  test('every query count and head dimension gives the bits of the cpu attention kernel on the gathered pages (property)', () => {
    fc.assert(fc.property(caseArb(20, [8, 16, 24, 32]), (c) => {
      const { T, nh, d, args } = makeCase(c);
      const got = new Float32Array(T * nh * d).fill(NaN), want = new Float32Array(T * nh * d);
      cpuKernels.pagedAttention!(args(got));
      cpuKernels.attention!(pagesAsAttention(args(want)));
      expect(Array.from(got)).toEqual(Array.from(want));
    }), { numRuns: RUNS / 2 });
  });
});
