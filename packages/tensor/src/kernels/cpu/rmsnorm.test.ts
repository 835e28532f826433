import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Rng } from '../../random';
import { jsKernels } from '../js/index';
import { heapRelease, scratchF32 } from './heap';
import { simdRmsnorm } from './rmsnorm';

/** n random normals scaled by `scale`, on the heap or in a plain array. */
function randn(n: number, r: Rng, scale: number, heap: boolean): Float32Array {
  const a = heap ? scratchF32(n) : new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = r.normal() * scale;
  return a;
}

/** Largest difference relative to the reference's largest magnitude, never below `floor`. */
function maxRel(a: Float32Array, b: Float32Array, floor = 1e-30): number {
  let num = 0, den = floor;
  for (let i = 0; i < a.length; i++) { num = Math.max(num, Math.abs(a[i]! - b[i]!)); den = Math.max(den, Math.abs(b[i]!)); }
  return num / den;
}

describe('cpu RMSNorm (WebAssembly SIMD) equals the reference kernel', () => {
  test('forward and backward, odd widths, on the heap and staged (same bits)', () => {
    fc.assert(fc.property(
      fc.record({ rows: fc.integer({ min: 1, max: 9 }), n: fc.integer({ min: 1, max: 70 }), scale: fc.constantFrom(1e-3, 1, 30), seed: fc.integer() }),
      ({ rows, n, scale, seed }) => {
        const run = (heap: boolean, kernels: typeof simdRmsnorm) => {
          const r = new Rng(seed);
          const x = randn(rows * n, r, scale, heap), w = randn(n, r, 1, heap), gy = randn(rows * n, r, 1, heap);
          const out = heap ? scratchF32(rows * n) : new Float32Array(rows * n), rstd = heap ? scratchF32(rows) : new Float32Array(rows);
          const gx = heap ? scratchF32(rows * n) : new Float32Array(rows * n), gw = heap ? scratchF32(n) : new Float32Array(n);
          gw.fill(0.25); // gradients accumulate into gw
          kernels.rmsnorm(x, w, rows, n, 1e-5, out, rstd);
          kernels.rmsnormBackward(x, w, rstd, gy, rows, n, gx, gw);
          // dx = r·w·gy − x·c cancels (exactly, for n = 1): errors are measured against the size of r·w·gy.
          let terms = 0;
          for (let i = 0; i < rows * n; i++) terms = Math.max(terms, Math.abs(rstd[Math.floor(i / n)]! * w[i % n]! * gy[i]!));
          const res = { out: out.slice(), rstd: rstd.slice(), gx: gx.slice(), gw: gw.slice(), terms };
          if (heap) for (const a of [x, w, gy, out, rstd, gx, gw]) heapRelease(a);
          return res;
        };
        const ref = run(false, jsKernels), got = run(true, simdRmsnorm), staged = run(false, simdRmsnorm);
        expect(maxRel(got.rstd, ref.rstd)).toBeLessThanOrEqual(2 ** -23);
        expect(maxRel(got.out, ref.out)).toBeLessThan(4e-7);
        expect(maxRel(got.gx, ref.gx, ref.terms)).toBeLessThan(4e-6);
        expect(maxRel(got.gw, ref.gw)).toBeLessThan(4e-6);
        for (const k of ['out', 'rstd', 'gx', 'gw'] as const) expect(Array.from(staged[k])).toEqual(Array.from(got[k]));
      }), { numRuns: 150 });
  });
});
