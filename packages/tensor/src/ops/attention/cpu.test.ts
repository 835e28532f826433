import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { kernelInfo } from '../../registry';
import { Rng } from '../../random';
import type { AttentionArgs } from '../../kernels/types';
import { heapRelease, scratchF32 } from '../../memory/heap';
import { simdRmsnorm, simdRmsnormBackward } from '../rmsnorm/cpu';
import { kernelSet } from '../../kernels/types';
import { tiledAttention } from './cpu';
import { wasmGemm } from '../gemm/cpu';

const jsKernels = kernelSet('reference');
const cpuKernels = kernelSet('wasm');

function randn(n: number, r: Rng): Float32Array {
  return Float32Array.from({ length: n }, () => r.normal());
}

/**
 * Largest difference relative to the reference's largest magnitude, never below `floor`: gradients
 * that are zero in exact arithmetic (one query over one key) come out as rounding noise of O(1) terms.
 */
function maxRel(a: Float32Array, b: Float32Array, floor = 1e-6): number {
  let num = 0, den = floor;
  for (let i = 0; i < a.length; i++) { num = Math.max(num, Math.abs(a[i]! - b[i]!)); den = Math.max(den, Math.abs(b[i]!)); }
  return num / den;
}

describe('cpu attention (GEMM tiles) equals the reference kernel', () => {
  test('default backend for attention is cpu', () => {
    expect(kernelInfo('attention')?.impl).toBe('wasm');
    expect(kernelInfo('attentionBackward')?.impl).toBe('wasm');
  });
  test('forward and backward, odd sizes across tile borders, GQA, KV offset, documents', () => {
    fc.assert(fc.property(
      fc.record({ B: fc.integer({ min: 1, max: 2 }), T: fc.integer({ min: 1, max: 150 }), extra: fc.integer({ min: 0, max: 70 }), nkv: fc.integer({ min: 1, max: 2 }), rep: fc.integer({ min: 1, max: 3 }), d: fc.constantFrom(1, 4, 8, 13), docs: fc.boolean(), seed: fc.integer() }),
      ({ B, T, extra, nkv, rep, d, docs, seed }) => {
        const r = new Rng(seed);
        const S = T + extra, nh = nkv * rep;
        let docQ: Int32Array | undefined, docK: Int32Array | undefined;
        if (docs) {
          docK = new Int32Array(B * S);
          for (let b = 0; b < B; b++) { let id = 0; for (let s = 0; s < S; s++) { if (s > 0 && r.uniform() < 0.05) id++; docK[b * S + s] = id; } }
          docQ = Int32Array.from({ length: B * T }, (_, i) => docK![Math.floor(i / T) * S + extra + (i % T)]!);
        }
        const base = { B, T, S, nh, nkv, d, scale: 1 / Math.sqrt(d), qOffset: extra, q: randn(B * T * nh * d, r), k: randn(B * S * nkv * d, r), v: randn(B * S * nkv * d, r), ...(docQ ? { docQ, docK } : {}) };
        const mk = (): AttentionArgs => ({ ...base, out: new Float32Array(B * T * nh * d), lse: new Float32Array(B * nh * T) });
        const ref = mk(), got = mk();
        jsKernels.attention(ref);
        cpuKernels.attention!(got);
        expect(maxRel(got.out, ref.out)).toBeLessThan(1e-5);
        expect(maxRel(got.lse, ref.lse)).toBeLessThan(1e-5);
        const gout = randn(B * T * nh * d, r);
        const grads = () => ({ gout, gq: new Float32Array(B * T * nh * d), gk: new Float32Array(B * S * nkv * d), gv: new Float32Array(B * S * nkv * d) });
        const gr = { ...ref, ...grads() }, gg = { ...ref, ...grads() };
        jsKernels.attentionBackward(gr);
        cpuKernels.attentionBackward!(gg);
        expect(maxRel(gg.gq, gr.gq, 1e-2)).toBeLessThan(1e-4);
        expect(maxRel(gg.gk, gr.gk, 1e-2)).toBeLessThan(1e-4);
        expect(maxRel(gg.gv, gr.gv, 1e-2)).toBeLessThan(1e-4);
      }), { numRuns: 40 });
  });
});

describe('cpu attention skips the causally masked end of a tile row', () => {
  test('the bits of softmax rows over whole tile rows (forward and backward, odd sizes, GQA, KV offset, documents)', () => {
    const skipping = tiledAttention(wasmGemm), whole = tiledAttention(wasmGemm, (_a, _t0, _i, _s0, nk) => nk);
    fc.assert(fc.property(
      fc.record({ T: fc.integer({ min: 1, max: 200 }), extra: fc.integer({ min: 0, max: 70 }), rep: fc.integer({ min: 1, max: 2 }), d: fc.constantFrom(4, 13, 32), docs: fc.boolean(), seed: fc.integer() }),
      ({ T, extra, rep, d, docs, seed }) => {
        const r = new Rng(seed);
        const B = 2, nkv = 2, S = T + extra, nh = nkv * rep;
        const docK = docs ? Int32Array.from({ length: B * S }, (_, i) => Math.floor((i % S) / 37)) : undefined;
        const docQ = docK ? Int32Array.from({ length: B * T }, (_, i) => docK[Math.floor(i / T) * S + extra + (i % T)]!) : undefined;
        const base = { B, T, S, nh, nkv, d, scale: 1 / Math.sqrt(d), qOffset: extra, q: randn(B * T * nh * d, r), k: randn(B * S * nkv * d, r), v: randn(B * S * nkv * d, r), ...(docQ ? { docQ, docK } : {}) };
        const gout = randn(B * T * nh * d, r);
        const run = (k: typeof whole) => {
          const f = { ...base, out: new Float32Array(B * T * nh * d), lse: new Float32Array(B * nh * T) };
          k.attention(f);
          const g = { ...f, gout, gq: new Float32Array(B * T * nh * d), gk: new Float32Array(B * S * nkv * d), gv: new Float32Array(B * S * nkv * d) };
          k.attentionBackward(g);
          return [f.out, f.lse, g.gq, g.gk, g.gv].map((x) => Array.from(new Uint32Array(x.buffer)));
        };
        expect(run(skipping)).toEqual(run(whole));
      }), { numRuns: 30 });
  });
});

/** n random normals scaled by `scale`, on the heap or in a plain array. */
function randnOn(n: number, r: Rng, scale: number, heap: boolean): Float32Array {
  const a = heap ? scratchF32(n) : new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = r.normal() * scale;
  return a;
}

describe('cpu RMSNorm (WebAssembly SIMD) equals the reference kernel', () => {
  test('forward and backward, odd widths, on the heap and staged (same bits)', () => {
    fc.assert(fc.property(
      fc.record({ rows: fc.integer({ min: 1, max: 9 }), n: fc.integer({ min: 1, max: 70 }), scale: fc.constantFrom(1e-3, 1, 30), seed: fc.integer() }),
      ({ rows, n, scale, seed }) => {
        const simd = { rmsnorm: simdRmsnorm, rmsnormBackward: simdRmsnormBackward };
        const run = (heap: boolean, kernels: typeof simd) => {
          const r = new Rng(seed);
          const x = randnOn(rows * n, r, scale, heap), w = randnOn(n, r, 1, heap), gy = randnOn(rows * n, r, 1, heap);
          const out = heap ? scratchF32(rows * n) : new Float32Array(rows * n), rstd = heap ? scratchF32(rows) : new Float32Array(rows);
          const gx = heap ? scratchF32(rows * n) : new Float32Array(rows * n), gw = heap ? scratchF32(n) : new Float32Array(n);
          gw.fill(0.25); // overwritten by the kernel
          kernels.rmsnorm(x, w, rows, n, 1e-5, out, rstd);
          kernels.rmsnormBackward(x, w, rstd, gy, rows, n, gx, gw);
          // dx = r·w·gy − x·c cancels (exactly, for n = 1): errors are measured against the size of r·w·gy.
          let terms = 0;
          for (let i = 0; i < rows * n; i++) terms = Math.max(terms, Math.abs(rstd[Math.floor(i / n)]! * w[i % n]! * gy[i]!));
          // gw[j] = Σ_rows gy·x·r can cancel as well: its errors are measured against Σ_rows |gy·x·r|.
          const sums = new Float64Array(n);
          for (let i = 0; i < rows * n; i++) sums[i % n]! += Math.abs(gy[i]! * x[i]! * rstd[Math.floor(i / n)]!);
          const termsW = Math.max(...sums);
          const res = { out: out.slice(), rstd: rstd.slice(), gx: gx.slice(), gw: gw.slice(), terms, termsW };
          if (heap) for (const a of [x, w, gy, out, rstd, gx, gw]) heapRelease(a);
          return res;
        };
        const ref = run(false, jsKernels), got = run(true, simd), staged = run(false, simd);
        expect(maxRel(got.rstd, ref.rstd)).toBeLessThanOrEqual(2 ** -23);
        expect(maxRel(got.out, ref.out)).toBeLessThan(4e-7);
        expect(maxRel(got.gx, ref.gx, ref.terms)).toBeLessThan(4e-6);
        expect(maxRel(got.gw, ref.gw, ref.termsW)).toBeLessThan(4e-6);
        for (const k of ['out', 'rstd', 'gx', 'gw'] as const) expect(Array.from(staged[k])).toEqual(Array.from(got[k]));
      }), { numRuns: 150 });
  });
});
