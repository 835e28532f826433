// gpu.js softmax / log-softmax (+ backward) and RMSNorm (+ backward) against the JS reference kernels.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { jsKernels } from '../js/index';
import { createGpujsKernels } from './index';
import { expectAllRanIn, expectClose, randomF32 } from './testing';

const shapes = fc.record({ rows: fc.integer({ min: 1, max: 9 }), n: fc.integer({ min: 1, max: 300 }), seed: fc.nat() });

for (const mode of ['webasm', 'cpu'] as const) {
  describe(`softmax family (${mode})`, () => {
    const ks = createGpujsKernels(mode);
    afterAll(() => ks.dispose());
    const runs = mode === 'cpu' ? 4 : 10;

    it('softmax and its backward on random shapes (property)', () => {
      fc.assert(fc.property(shapes, ({ rows, n, seed }) => {
        const x = randomF32(rows * n, seed, -8, 8);
        const y = new Float32Array(rows * n);
        const y0 = new Float32Array(rows * n);
        ks.softmax(x, rows, n, y);
        jsKernels.softmax(x, rows, n, y0);
        expectClose(y, y0, 'softmax', 1e-5, 1e-9);
        const gy = randomF32(rows * n, seed + 1);
        const gx = new Float32Array(rows * n);
        const gx0 = new Float32Array(rows * n);
        ks.softmaxBackward(y0, gy, rows, n, gx);
        jsKernels.softmaxBackward(y0, gy, rows, n, gx0);
        expectClose(gx, gx0, 'softmaxBackward', 1e-4, 1e-7);
      }), { numRuns: runs });
    });

    it('logSoftmax and its backward on random shapes (property)', () => {
      fc.assert(fc.property(shapes, ({ rows, n, seed }) => {
        const x = randomF32(rows * n, seed, -8, 8);
        const y = new Float32Array(rows * n);
        const y0 = new Float32Array(rows * n);
        ks.logSoftmax(x, rows, n, y);
        jsKernels.logSoftmax(x, rows, n, y0);
        expectClose(y, y0, 'logSoftmax', 2e-6, 4e-6);
        const gy = randomF32(rows * n, seed + 1);
        const gx = new Float32Array(rows * n);
        const gx0 = new Float32Array(rows * n);
        ks.logSoftmaxBackward(y0, gy, rows, n, gx);
        jsKernels.logSoftmaxBackward(y0, gy, rows, n, gx0);
        expectClose(gx, gx0, 'logSoftmaxBackward', 1e-5, 1e-5);
      }), { numRuns: runs });
    });

    it('softmax is shift-invariant and handles large logits without overflow', () => {
      const x = Float32Array.from([1000, 1001, 1002, -1000, 0, 1000]);
      const y = new Float32Array(6);
      ks.softmax(x, 2, 3, y);
      const e = [Math.exp(-2), Math.exp(-1), 1];
      const s = e[0]! + e[1]! + e[2]!;
      expectClose(y.subarray(0, 3), e.map((v) => v / s), 'row 0', 1e-6, 1e-7);
      expectClose(y.subarray(3), [0, 0, 1], 'row 1', 0, 1e-30);
      expect(y[4]).toBe(0); // e^-1000 underflows to 0, not NaN
    });

    it(`ran every kernel in ${mode} (no silent fallback)`, () => expectAllRanIn(ks, mode, 6));
  });

  describe(`rmsnorm (${mode})`, () => {
    const ks = createGpujsKernels(mode);
    afterAll(() => ks.dispose());

    it('forward and backward on random shapes (property)', () => {
      fc.assert(fc.property(shapes, fc.constantFrom(1e-5, 1e-6, 0.1), ({ rows, n, seed }, eps) => {
        const x = randomF32(rows * n, seed, -3, 3);
        const w = randomF32(n, seed + 1, 0.5, 1.5);
        const out = new Float32Array(rows * n);
        const rstd = new Float32Array(rows);
        const out0 = new Float32Array(rows * n);
        const rstd0 = new Float32Array(rows);
        ks.rmsnorm(x, w, rows, n, eps, out, rstd);
        jsKernels.rmsnorm(x, w, rows, n, eps, out0, rstd0);
        expectClose(rstd, rstd0, 'rstd', 2e-6, 0);
        expectClose(out, out0, 'out', 4e-6, 1e-6);
        const gy = randomF32(rows * n, seed + 2);
        const gw = randomF32(n, seed + 3);
        const gw0 = gw.slice();
        const gx = new Float32Array(rows * n);
        const gx0 = new Float32Array(rows * n);
        ks.rmsnormBackward(x, w, rstd0, gy, rows, n, gx, gw);
        jsKernels.rmsnormBackward(x, w, rstd0, gy, rows, n, gx0, gw0);
        expectClose(gx, gx0, 'gx', 1e-4, 1e-5);
        expectClose(gw, gw0, 'gw (accumulated)', 1e-5, 1e-5 * rows);
      }), { numRuns: mode === 'cpu' ? 4 : 10 });
    });

    it('normalises a hidden = 4096 row (loop longer than 1000)', () => {
      // Only the last quarter is non-zero: a loop cut at 1000 iterations would see a zero row.
      const n = 4096;
      const x = new Float32Array(n);
      x.fill(4, 3072);
      const w = new Float32Array(n).fill(1);
      const out = new Float32Array(n);
      const rstd = new Float32Array(1);
      ks.rmsnorm(x, w, 1, n, 0, out, rstd);
      expect(rstd[0]).toBe(0.5); // mean square = 1024 * 16 / 4096 = 4
      expect(out[0]).toBe(0);
      expect(out[n - 1]).toBe(2);
    });

    it(`ran every kernel in ${mode} (no silent fallback)`, () => expectAllRanIn(ks, mode, 4));
  });
}
