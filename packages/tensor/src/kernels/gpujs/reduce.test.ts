// gpu.js sum / max kernels against the JS reference kernels.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { kernelSet } from '../types';
import { createGpujsKernels } from './index';
import { expectAllRanIn, expectWithin, randomF32, SLACK, sumErrorBound, U32 } from './testing';

const jsKernels = kernelSet('reference');

for (const mode of ['webasm', 'cpu'] as const) {
  describe(`reductions (${mode})`, () => {
    const ks = createGpujsKernels(mode);
    afterAll(() => ks.dispose());

    it('sum over [outer, n, inner] for random shapes, including inner = 1 rows (property)', () => {
      fc.assert(fc.property(
        fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 70 }), fc.constantFrom(1, 1, 2, 5, 9), fc.nat(),
        (outer, n, inner, seed) => {
          const x = randomF32(outer * n * inner, seed);
          const out = new Float32Array(outer * inner);
          const out0 = new Float32Array(outer * inner);
          ks.sum(x, outer, n, inner, out);
          jsKernels.sum(x, outer, n, inner, out0);
          // float32 accumulation in j order vs the reference's float64: the partial sums' rounding, + the reference's final rounding.
          const bound = Float64Array.from({ length: outer * inner }, (_, c) => {
            const o = Math.floor(c / inner), i = c % inner;
            return SLACK * (sumErrorBound(Array.from({ length: n }, (_, j) => x[(o * n + j) * inner + i]!)) + U32 * Math.abs(out0[c]!));
          });
          expectWithin(out, out0, bound, `sum [${outer},${n},${inner}]`);
        },
      ), { numRuns: mode === 'cpu' ? 6 : 15 });
    });

    it('max and argmax over random shapes, with ties resolved to the first index (property)', () => {
      fc.assert(fc.property(
        fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 40 }), fc.constantFrom(1, 3, 4), fc.nat(),
        (outer, n, inner, seed) => {
          // Coarse values (multiples of 0.5 in [-2, 2]) make ties frequent.
          const x = randomF32(outer * n * inner, seed).map((v) => Math.round(v * 2) / 2);
          const out = new Float32Array(outer * inner);
          const arg = new Int32Array(outer * inner);
          const out0 = new Float32Array(outer * inner);
          const arg0 = new Int32Array(outer * inner);
          ks.max(x, outer, n, inner, out, arg);
          jsKernels.max(x, outer, n, inner, out0, arg0);
          expect(Array.from(out)).toEqual(Array.from(out0));
          expect(Array.from(arg)).toEqual(Array.from(arg0));
        },
      ), { numRuns: mode === 'cpu' ? 6 : 15 });
    });

    it('max: a NaN at j = 0 wins, a later NaN is skipped, -Infinity rows give index 0', () => {
      const x = Float32Array.from([NaN, 5, 1, /* row 2 */ 1, NaN, 3, /* row 3 */ -Infinity, -Infinity, -Infinity]);
      const out = new Float32Array(3);
      const arg = new Int32Array(3);
      const out0 = new Float32Array(3);
      const arg0 = new Int32Array(3);
      ks.max(x, 3, 3, 1, out, arg);
      jsKernels.max(x, 3, 3, 1, out0, arg0);
      expect(Array.from(out)).toEqual([NaN, 3, -Infinity]);
      expect(Array.from(arg)).toEqual([0, 2, 0]);
      expect(Array.from(out)).toEqual(Array.from(out0));
      expect(Array.from(arg)).toEqual(Array.from(arg0));
    });

    it('sum over a 3000-long axis is not cut at 1000 iterations', () => {
      const x = new Float32Array(2 * 3000).fill(0.5);
      const out = new Float32Array(2);
      ks.sum(x, 2, 3000, 1, out);
      expect(Array.from(out)).toEqual([1500, 1500]);
    });

    it(`ran every kernel in ${mode} (no silent fallback)`, () => expectAllRanIn(ks, mode, 3));
  });
}
