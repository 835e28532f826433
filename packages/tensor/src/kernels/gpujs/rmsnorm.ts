/**
 * RMSNorm forward and backward as gpu.js kernels:
 *   forward:  rstd[r] = 1 / sqrt(mean_j x[r, j]^2 + eps);  out[r, j] = w[j] * (x[r, j] * rstd[r])
 *   backward: c[r] = rstd^3 / n * sum_k w[k] gy[r, k] x[r, k]
 *             gx[r, j] = rstd[r] w[j] gy[r, j] - x[r, j] c[r];  gw[j] = sum_r gy[r, j] x[r, j] rstd[r]
 * Each output is its own kernel (webasm has no kernel maps).
 */
import type { F32 } from '../types';
import { checkIndexable, expectLength, inp, call, into, kept, type KernelOp } from './runtime';

/** rstd[r] over a row of n = this.constants.n values. */
const rstdKernel = `function (x, eps) {
  let ss = 0;
  for (let j = 0; j < this.constants.n; j++) {
    const v = x[this.thread.x][j];
    ss += v * v;
  }
  return 1 / Math.sqrt(ss / this.constants.n + eps);
}`;

/** out[r, j] = w[j] * (x[r, j] * rstd[r]), rounded in that order like the float32 reference. */
const normKernel = `function (x, w, rstd) {
  return w[this.thread.x] * Math.fround(x[this.thread.y][this.thread.x] * rstd[this.thread.y]);
}`;

/** c[r] = (sum_j w[j] gy[r, j] x[r, j]) * rstd^3 / n. */
const coefKernel = `function (x, w, gy, rstd) {
  let dot = 0;
  for (let j = 0; j < this.constants.n; j++) {
    dot += w[j] * gy[this.thread.x][j] * x[this.thread.x][j];
  }
  const rs = rstd[this.thread.x];
  return (dot * rs * rs * rs) / this.constants.n;
}`;

/** gx[r, j] = rstd[r] w[j] gy[r, j] - x[r, j] c[r]. */
const gxKernel = `function (x, w, gy, rstd, c) {
  return rstd[this.thread.y] * w[this.thread.x] * gy[this.thread.y][this.thread.x] - x[this.thread.y][this.thread.x] * c[this.thread.y];
}`;

/** gw[j] = sum_r gy[r, j] x[r, j] rstd[r], accumulated row by row like the reference. */
const gwKernel = `function (x, gy, rstd) {
  let s = 0;
  for (let r = 0; r < this.constants.rows; r++) {
    s += gy[r][this.thread.x] * x[r][this.thread.x] * rstd[r];
  }
  return s;
}`;

/** out = w * x / sqrt(mean(x^2) + eps) per row of length n; rstd[row] = 1/sqrt(mean(x^2)+eps). */
export function* rmsnorm(x: F32, w: F32, rows: number, n: number, eps: number, out: F32, rstd: F32): KernelOp {
  checkIndexable('rmsnorm', { rows, n });
  expectLength('rmsnorm', 'x', x, rows * n);
  expectLength('rmsnorm', 'w', w, n);
  expectLength('rmsnorm', 'out', out, rows * n);
  expectLength('rmsnorm', 'rstd', rstd, rows);
  if (rows === 0) return;
  if (n === 0) { rstd.fill(NaN); return; } // the mean of an empty row is 0/0, as in the reference
  const key = `${rows},${n}`;
  const xs = inp(x, [n, rows]);
  const rs = yield* into(rstd, call('rmsnorm.rstd', key, () => ({
    source: rstdKernel, output: [rows], constants: { n }, argumentTypes: { x: 'Input', eps: 'Float' },
  }), [xs, eps]));
  yield* into(out, call('rmsnorm.out', key, () => ({
    source: normKernel, output: [n, rows], argumentTypes: { x: 'Input', w: 'Array', rstd: 'Array' },
  }), [xs, w, rs]));
}

/** gx and gw overwritten (gw summed over rows): gw is computed on the device, nothing is uploaded for it. */
export function* rmsnormBackward(x: F32, w: F32, rstd: F32, gy: F32, rows: number, n: number, gx: F32, gw: F32): KernelOp {
  checkIndexable('rmsnormBackward', { rows, n });
  expectLength('rmsnormBackward', 'x', x, rows * n);
  expectLength('rmsnormBackward', 'w', w, n);
  expectLength('rmsnormBackward', 'rstd', rstd, rows);
  expectLength('rmsnormBackward', 'gy', gy, rows * n);
  expectLength('rmsnormBackward', 'gx', gx, rows * n);
  expectLength('rmsnormBackward', 'gw', gw, n);
  if (rows * n === 0) return;
  const key = `${rows},${n}`;
  const xs = inp(x, [n, rows]);
  const gys = inp(gy, [n, rows]);
  const c = yield* kept(call('rmsnormBackward.coef', key, () => ({
    source: coefKernel, output: [rows], constants: { n },
    argumentTypes: { x: 'Input', w: 'Array', gy: 'Input', rstd: 'Array' },
  }), [xs, w, gys, rstd]));
  // gw first: it reads gy, which the caller may reuse as gx.
  yield* into(gw, call('rmsnormBackward.gw', key, () => ({
    source: gwKernel, output: [n], constants: { rows },
    argumentTypes: { x: 'Input', gy: 'Input', rstd: 'Array' },
  }), [xs, gys, rstd]));
  yield* into(gx, call('rmsnormBackward.gx', key, () => ({
    source: gxKernel, output: [n, rows],
    argumentTypes: { x: 'Input', w: 'Array', gy: 'Input', rstd: 'Array', c: 'Array' },
  }), [xs, w, gys, rstd, c]));
}
