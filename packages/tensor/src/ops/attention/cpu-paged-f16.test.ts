// f16 KV pages: the cpu paged attention kernel reads them as the float32 values they hold (bit for
// bit against float32 pages of those values, decode and gathered paths, and the reference), and
// an f16 cache stays within a bound derived from one f16 rounding of every key and value.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { attentionBound, attentionF64, expectWithinBound, pagesOf, scoreTerms, eachQueryHead, type AttentionCase } from '../test-util';
import { Rng } from '../../random';
import { DECODE_MAX_ROWS } from './cpu-decode';
import { kernelSet } from '../../kernels/types';
import { f16RowsInto, f16RowsToF32 } from '../../memory/kv-blocks';
import { persistentU16 } from '../../memory/heap';
import { f32ToF16Bits, f16BitsToF32 } from '../../dtype';
import type { KVPages } from './args';
import { pagedAttention } from './index';
import { Tensor } from '../../tensor';
import { DTypeError } from '../../errors';

const jsKernels = kernelSet('reference');
const cpuKernels = kernelSet('wasm');
const RUNS = Number(process.env.PAGED_RUNS ?? 60);

/** The same pages with every block as f16 bits (on the heap or not). */
function f16Pages(kv: KVPages, heap: boolean): KVPages {
  const blocks = kv.blocks.map((b) => {
    const h = heap ? persistentU16(b.length) : new Uint16Array(b.length);
    f16RowsInto(b as Float32Array, h);
    return h;
  });
  return { ...kv, blocks, dtype: 'f16' };
}

const f16Round = (x: Float32Array): Float32Array => x.map((y) => f16BitsToF32(f32ToF16Bits(y)));

interface Case { T: number; past: number; nkv: number; rep: number; d: number; bs: number; pad: number; heap: boolean; qk: number; seed: number; special: boolean }
const caseArb = (maxT: number, dims: number[]): fc.Arbitrary<Case> => fc.record({
  T: fc.integer({ min: 1, max: maxT }), past: fc.integer({ min: 0, max: 70 }), nkv: fc.integer({ min: 1, max: 3 }), rep: fc.integer({ min: 1, max: 3 }),
  d: fc.constantFrom(...dims), bs: fc.integer({ min: 1, max: 24 }), pad: fc.integer({ min: 0, max: 5 }), heap: fc.boolean(),
  qk: fc.double({ min: 0.05, max: 4, noNaN: true }), seed: fc.integer(), special: fc.boolean(),
});

function makeCase(c: Case) {
  const r = new Rng(c.seed), nh = c.nkv * c.rep, S = c.past + c.T, row = c.nkv * c.d;
  const rnd = (n: number, s: number) => Float32Array.from({ length: n }, () => r.normal() * s);
  const q = rnd(c.T * nh * c.d, c.qk), k = rnd(S * row, c.qk), v = rnd(S * row, 1);
  // Values that exercise the widening: subnormal halves, ±0, the largest half, and ones that round to ±Inf.
  if (c.special) for (const [i, x] of [[0, 3e-6], [1, -4e-8], [2, -0], [3, 65504], [4, 7e4], [5, -1e5]] as const) if (i < v.length) v[(i * 7919) % v.length] = x;
  const kv = pagesOf(k, v, S, c.nkv, c.d, c.bs, c.pad, c.heap);
  const args = (pages: KVPages, out: Float32Array) => ({ T: c.T, nh, d: c.d, q, kv: pages, scale: 1 / Math.sqrt(c.d), qOffset: c.past, out });
  const contiguous: AttentionCase = { T: c.T, nh, nkv: c.nkv, d: c.d, scale: 1 / Math.sqrt(c.d), qOffset: c.past, q, k, v };
  return { n: c.T * nh * c.d, kv, args, contiguous };
}

/** Equal float32 bits, NaN equal to NaN (an Inf value makes NaN outputs; which NaN is not specified). */
function expectSameBits(got: Float32Array, want: Float32Array): void {
  const g = new Uint32Array(got.buffer, got.byteOffset, got.length), w = new Uint32Array(want.buffer, want.byteOffset, want.length);
  for (let i = 0; i < got.length; i++) {
    if (Number.isNaN(got[i]) && Number.isNaN(want[i])) continue;
    if (g[i] !== w[i]) expect.fail(`element ${i}: ${got[i]} vs ${want[i]}`);
  }
}

describe('f16 KV pages', () => {
  test('f16 bits of a row: the native Float16Array path and the portable loop agree, and widening gives back every half exactly (property)', () => {
    fc.assert(fc.property(fc.array(fc.float({ noNaN: true }), { minLength: 1, maxLength: 64 }), (xs) => {
      const src = Float32Array.from(xs), a = new Uint16Array(xs.length), b = new Uint16Array(xs.length), back = new Float32Array(xs.length);
      f16RowsInto(src, a);
      f16RowsInto(src, b, false);
      expect(Array.from(a)).toEqual(Array.from(b));
      f16RowsToF32(a, back);
      expect(Array.from(back)).toEqual(Array.from(a, (h) => f16BitsToF32(h)));
    }), { numRuns: RUNS * 5 });
    // Every half (NaNs excepted) widens to the value f16BitsToF32 gives and rounds back to itself.
    const all = Uint16Array.from({ length: 65536 }, (_, h) => h), w = new Float32Array(65536), again = new Uint16Array(65536);
    f16RowsToF32(all, w);
    f16RowsInto(w, again, false);
    for (let h = 0; h < 65536; h++) if (((h >> 10) & 0x1f) !== 0x1f || (h & 0x3ff) === 0) expect(again[h]).toBe(h);
  });

  test('the cpu kernel reads f16 pages as float32 pages of the same values, bit for bit: decode kernel, gathered path and reference (property)', () => {
    fc.assert(fc.property(caseArb(20, [8, 16, 32, 64]), fc.boolean(), (c, heap16) => {
      const { n, kv, args } = makeCase(c);
      const half = f16Pages(kv, heap16);
      // Float32 pages holding exactly the halves' values (the NaN padding stays NaN).
      const widened: KVPages = { ...kv, blocks: half.blocks.map((b) => { const f = new Float32Array(b.length); f16RowsToF32(b as Uint16Array, f); return f; }) };
      const got = new Float32Array(n).fill(7), want = new Float32Array(n);
      cpuKernels.pagedAttention!(args(half, got));
      cpuKernels.pagedAttention!(args(widened, want));
      expectSameBits(got, want);
      const rGot = new Float32Array(n), rWant = new Float32Array(n);
      jsKernels.pagedAttention(args(half, rGot));
      jsKernels.pagedAttention(args(widened, rWant));
      expectSameBits(rGot, rWant);
    }), { numRuns: RUNS });
  });

  test('decoding over an f16 cache stays within the bound of one f16 rounding of every key and value, against the exact float64 attention of the f32 cache (property)', () => {
    fc.assert(fc.property(caseArb(DECODE_MAX_ROWS, [16, 32, 64]).map((c) => ({ ...c, special: false })), (c) => {
      const { n, kv, args, contiguous } = makeCase(c);
      const got = new Float32Array(n);
      cpuKernels.pagedAttention!(args(f16Pages(kv, true), got));
      const rounded: AttentionCase = { ...contiguous, k: f16Round(contiguous.k), v: f16Round(contiguous.v) };
      const exact = attentionF64(contiguous), exactRounded = attentionF64(rounded);
      // |got − ô| ≤ |got − ô₁₆| + |ô₁₆ − ô|: the kernel's float32 bound on the rounded case (attentionBound),
      // plus the rounding's own effect. Each key and value is off by at most u₁₆ = 2⁻¹¹ relatively (2⁻²⁵
      // absolutely for subnormal halves); a score moves by δ ≤ u₁₆·A + d·2⁻²⁵·scale·Q (A = max_s scale·Σ|q k|,
      // Q = max |q|), each weight p_s / l relatively by at most e^{2δ} − 1, so the convex combination of
      // values by 2(e^{2δ} − 1)·V, and the values' own rounding adds u₁₆·V + 2⁻²⁵; twice that covers the
      // second-order terms.
      const u16 = 2 ** -11, sub = 2 ** -25, bound = attentionBound(rounded, 2 ** -24, 2 ** -24, exactRounded);
      const { d, nkv } = contiguous;
      eachQueryHead(contiguous, (keys, g, qo) => {
        let A = 0, Q = 0;
        for (let s = 0; s < keys; s++) A = Math.max(A, scoreTerms(contiguous, qo, g, s).reduce((x, y) => x + Math.abs(y), 0) * contiguous.scale);
        for (let e = 0; e < d; e++) Q = Math.max(Q, Math.abs(contiguous.q[qo + e]!));
        const delta = u16 * A + d * sub * contiguous.scale * Q;
        for (let e = 0; e < d; e++) {
          let V = 0;
          for (let s = 0; s < keys; s++) V = Math.max(V, Math.abs(contiguous.v[(s * nkv + g) * d + e]!));
          bound[qo + e]! += 2 * (2 * Math.expm1(2 * delta) * V + u16 * V + sub);
        }
      });
      expectWithinBound(got, exact, bound);
    }), { numRuns: RUNS });
  });

  test('pages whose blocks are not of their dtype are refused with a DTypeError naming the op', () => {
    const { kv } = makeCase({ T: 1, past: 3, nkv: 1, rep: 1, d: 16, bs: 4, pad: 0, heap: true, qk: 1, seed: 1, special: false });
    const q = Tensor.zeros([1, 1, 1, 16]);
    expect(() => pagedAttention(q, { ...kv, dtype: 'f16' })).toThrow(DTypeError);
    expect(() => pagedAttention(q, { ...f16Pages(kv, true), dtype: 'f32' })).toThrow(/pagedAttention: f32 pages need Float32Array blocks/);
    // The same pages with their own dtype run.
    expect(pagedAttention(q, f16Pages(kv, true)).shape).toEqual([1, 1, 1, 16]);
  });
});
