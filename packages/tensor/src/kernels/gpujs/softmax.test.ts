// gpu.js softmax / log-softmax (+ backward) and RMSNorm (+ backward) against the JS reference kernels.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { kernelSet } from '../types';
import { createGpujsKernels } from './index';
import { expectAllRanIn, expectClose, expectWithin, randomF32, SLACK, sumErrorBound, U32 } from './testing';

const jsKernels = kernelSet('reference');

// Per-element error bounds of the float32 kernels against the float64 reference (see softmax.ts
// and rmsnorm.ts for the kernels' order of operations). Row r of an array a is a[r·n .. r·n + n).

/** Per row: the max m and, relative to the exact Σ exp(x − m), the float32 error of the kernel's Kahan sum. */
function rowStats(x: Float32Array, y0: Float32Array, o: number, n: number): { m: number; relS: number; logS: number } {
  let m = -Infinity;
  for (let j = 0; j < n; j++) m = Math.max(m, x[o + j]!);
  let s = 0;
  // Each term exp(x_j − m) carries U32·(|x_j − m| + 1) (the rounded difference, then exp), weighted
  // by its share y_j of the sum; Kahan summation adds 2·U32.
  let relS = 2 * U32;
  for (let j = 0; j < n; j++) {
    s += Math.exp(x[o + j]! - m);
    relS += U32 * y0[o + j]! * (Math.abs(x[o + j]! - m) + 1);
  }
  return { m, relS, logS: Math.log(s) };
}

/** softmax y_i = exp(x_i − m)·(1/s): relative U32·|x_i − m| from the difference, + exp, 1/s, product, and s's error. */
function softmaxBound(x: Float32Array, y0: Float32Array, rows: number, n: number): Float64Array {
  const b = new Float64Array(rows * n);
  for (let r = 0, o = 0; r < rows; r++, o += n) {
    const { m, relS } = rowStats(x, y0, o, n);
    for (let j = 0; j < n; j++) b[o + j] = SLACK * y0[o + j]! * (U32 * (Math.abs(x[o + j]! - m) + 4) + relS);
  }
  return b;
}

/** log-softmax y_i = (x_i − m) − log s: the difference, log s (s's relative error + its rounding), the subtraction, the reference's rounding. */
function logSoftmaxBound(x: Float32Array, y0: Float32Array, rows: number, n: number): Float64Array {
  const b = new Float64Array(rows * n);
  const p = y0.map(Math.exp);
  for (let r = 0, o = 0; r < rows; r++, o += n) {
    const { m, relS, logS } = rowStats(x, p, o, n);
    for (let j = 0; j < n; j++) {
      b[o + j] = SLACK * (U32 * (Math.abs(x[o + j]! - m) + Math.abs(logS) + 2 * Math.abs(y0[o + j]!)) + relS);
    }
  }
  return b;
}

/**
 * softmax backward gx_i = y_i·(gy_i − Σ_j gy_j·y_j): the float32 dot product's error
 * (sumErrorBound of the rounded products) times y_i, then the subtraction, product and the
 * reference's rounding (3·U32·|gx_i|). The bracket cancels, so the error does not scale with |gx_i|.
 */
function softmaxBackwardBound(y: Float32Array, gy: Float32Array, gx0: Float32Array, rows: number, n: number): Float64Array {
  const b = new Float64Array(rows * n);
  for (let r = 0, o = 0; r < rows; r++, o += n) {
    const eDot = sumErrorBound(Array.from({ length: n }, (_, j) => gy[o + j]! * y[o + j]!), 1);
    for (let j = 0; j < n; j++) b[o + j] = SLACK * (y[o + j]! * eDot + 3 * U32 * Math.abs(gx0[o + j]!));
  }
  return b;
}

/** log-softmax backward gx_i = gy_i − exp(y_i)·s, s = Σ_j gy_j: exp(y_i) times (the sum's error + exp and product rounding), the subtraction and the reference's rounding. */
function logSoftmaxBackwardBound(y: Float32Array, gy: Float32Array, gx0: Float32Array, rows: number, n: number): Float64Array {
  const b = new Float64Array(rows * n);
  for (let r = 0, o = 0; r < rows; r++, o += n) {
    const row = gy.subarray(o, o + n);
    const s = row.reduce((a, v) => a + v, 0);
    const eS = sumErrorBound(row);
    for (let j = 0; j < n; j++) b[o + j] = SLACK * (Math.exp(y[o + j]!) * (eS + 2 * U32 * Math.abs(s)) + 2 * U32 * Math.abs(gx0[o + j]!));
  }
  return b;
}

/**
 * RMSNorm forward: rstd = 1/sqrt(Σx²/n + eps). The float32 sum of squares (sumErrorBound with one
 * rounding per square) is halved by the square root and damped by eps; /n, +eps, sqrt, 1/ and the
 * reference's rounding add 5·U32 relative. out = w·(x·rstd) inherits rstd's error plus 3·U32.
 */
function rmsnormBound(x: Float32Array, w: Float32Array, rstd0: Float32Array, out0: Float32Array, rows: number, n: number, eps: number): { rstd: Float64Array; out: Float64Array } {
  const rstd = new Float64Array(rows);
  const out = new Float64Array(rows * n);
  for (let r = 0, o = 0; r < rows; r++, o += n) {
    const sq = Array.from(x.subarray(o, o + n), (v) => v * v);
    const ss = sq.reduce((a, v) => a + v, 0);
    const rel = sumErrorBound(sq, 1) / (2 * (ss + n * eps)) + 5 * U32;
    rstd[r] = SLACK * rstd0[r]! * rel;
    for (let j = 0; j < n; j++) out[o + j] = SLACK * Math.abs(out0[o + j]!) * (rel + 3 * U32);
  }
  return { rstd, out };
}

/**
 * RMSNorm backward with the reference's rstd: c = rstd³/n·Σ_k w_k·gy_k·x_k (the dot's error, two
 * roundings per term, then 4·U32 for ·rstd³/n); gx = rstd·w·gy − x·c (2·U32 on the first product,
 * x times c's error + U32 on the second, the subtraction and the reference's rounding 2·U32·|gx|);
 * gw accumulates gy·x·rstd row by row in float32 in both kernels (two roundings per term, one per partial sum each side).
 */
function rmsnormBackwardBound(x: Float32Array, w: Float32Array, rstd: Float32Array, gy: Float32Array, gx0: Float32Array, rows: number, n: number): { gx: Float64Array; gw: Float64Array } {
  const gx = new Float64Array(rows * n);
  for (let r = 0, o = 0; r < rows; r++, o += n) {
    const rs = rstd[r]!;
    const p = Array.from({ length: n }, (_, j) => w[j]! * gy[o + j]! * x[o + j]!);
    const dot = p.reduce((a, v) => a + v, 0);
    const c = (dot * rs ** 3) / n;
    const eC = (rs ** 3 / n) * (sumErrorBound(p, 2) + 4 * U32 * Math.abs(dot));
    for (let j = 0; j < n; j++) {
      const a = Math.abs(rs * w[j]! * gy[o + j]!);
      const xj = Math.abs(x[o + j]!);
      gx[o + j] = SLACK * (2 * U32 * a + xj * eC + U32 * xj * Math.abs(c) + 2 * U32 * Math.abs(gx0[o + j]!));
    }
  }
  const gwB = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    const terms = Array.from({ length: rows }, (_, r) => gy[r * n + j]! * x[r * n + j]! * rstd[r]!);
    gwB[j] = SLACK * 2 * sumErrorBound(terms, 2);
  }
  return { gx, gw: gwB };
}

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
        expectWithin(y, y0, softmaxBound(x, y0, rows, n), 'softmax');
        const gy = randomF32(rows * n, seed + 1);
        const gx = new Float32Array(rows * n);
        const gx0 = new Float32Array(rows * n);
        ks.softmaxBackward(y0, gy, rows, n, gx);
        jsKernels.softmaxBackward(y0, gy, rows, n, gx0);
        expectWithin(gx, gx0, softmaxBackwardBound(y0, gy, gx0, rows, n), 'softmaxBackward');
      }), { numRuns: runs });
    });

    it('logSoftmax and its backward on random shapes (property)', () => {
      fc.assert(fc.property(shapes, ({ rows, n, seed }) => {
        const x = randomF32(rows * n, seed, -8, 8);
        const y = new Float32Array(rows * n);
        const y0 = new Float32Array(rows * n);
        ks.logSoftmax(x, rows, n, y);
        jsKernels.logSoftmax(x, rows, n, y0);
        expectWithin(y, y0, logSoftmaxBound(x, y0, rows, n), 'logSoftmax');
        const gy = randomF32(rows * n, seed + 1);
        const gx = new Float32Array(rows * n);
        const gx0 = new Float32Array(rows * n);
        ks.logSoftmaxBackward(y0, gy, rows, n, gx);
        jsKernels.logSoftmaxBackward(y0, gy, rows, n, gx0);
        expectWithin(gx, gx0, logSoftmaxBackwardBound(y0, gy, gx0, rows, n), 'logSoftmaxBackward');
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
        const bound = rmsnormBound(x, w, rstd0, out0, rows, n, eps);
        expectWithin(rstd, rstd0, bound.rstd, 'rstd');
        expectWithin(out, out0, bound.out, 'out');
        const gy = randomF32(rows * n, seed + 2);
        // Random initial contents: the kernels overwrite gw.
        const gw = randomF32(n, seed + 3);
        const gw0 = randomF32(n, seed + 4);
        const gx = new Float32Array(rows * n);
        const gx0 = new Float32Array(rows * n);
        ks.rmsnormBackward(x, w, rstd0, gy, rows, n, gx, gw);
        jsKernels.rmsnormBackward(x, w, rstd0, gy, rows, n, gx0, gw0);
        const gBound = rmsnormBackwardBound(x, w, rstd0, gy, gx0, rows, n);
        expectWithin(gx, gx0, gBound.gx, 'gx');
        expectWithin(gw, gw0, gBound.gw, 'gw');
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
