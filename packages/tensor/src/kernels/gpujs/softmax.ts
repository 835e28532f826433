/**
 * Row softmax / log-softmax and their backward passes as gpu.js kernels. Each op is two kernels:
 * per-row statistics (one thread per row, loop over n from `this.constants`) and an elementwise
 * apply (one thread per element reading its row's statistics).
 */
import type { F32 } from '../types';
import { checkIndexable, expectLength, inp, call, into, kept, type DeviceArray, type KernelCall, type KernelOp } from './runtime';

/**
 * [m, s] per row: m = max_j x[r, j], s = sum_j exp(x[r, j] - m) (Kahan-compensated: a float32 sum
 * of 131072 terms would otherwise drift by ~1e-3). Keeping m and s apart, rather than
 * lse = m + log s, keeps x - m exact in the apply kernels even for logits around 1000.
 */
const statsKernel = `function (x) {
  let m = -Infinity;
  for (let j = 0; j < this.constants.n; j++) {
    const v = x[this.thread.x][j];
    if (v > m) {
      m = v;
    }
  }
  let s = 0;
  let c = 0;
  for (let j = 0; j < this.constants.n; j++) {
    const y = Math.exp(x[this.thread.x][j] - m) - c;
    const t = s + y;
    c = (t - s) - y;
    s = t;
  }
  return [m, s];
}`;

/** softmax = exp(x - m) * (1 / s). */
const softmaxApply = `function (x, st) {
  return Math.exp(x[this.thread.y][this.thread.x] - st[this.thread.y][0]) * (1 / st[this.thread.y][1]);
}`;

/** log-softmax = (x - m) - log s. */
const logSoftmaxApply = `function (x, st) {
  return (x[this.thread.y][this.thread.x] - st[this.thread.y][0]) - Math.log(st[this.thread.y][1]);
}`;

/** dot[r] = sum_j gy[r, j] * y[r, j]. */
const dotKernel = `function (y, gy) {
  let s = 0;
  for (let j = 0; j < this.constants.n; j++) {
    s += gy[this.thread.x][j] * y[this.thread.x][j];
  }
  return s;
}`;

/** gx = y * (gy - dot). */
const softmaxBackwardApply = `function (y, gy, dot) {
  return y[this.thread.y][this.thread.x] * (gy[this.thread.y][this.thread.x] - dot[this.thread.y]);
}`;

/** s[r] = sum_j gy[r, j]. */
const rowSumKernel = `function (gy) {
  let s = 0;
  for (let j = 0; j < this.constants.n; j++) {
    s += gy[this.thread.x][j];
  }
  return s;
}`;

/** gx = gy - exp(y) * s. */
const logSoftmaxBackwardApply = `function (y, gy, s) {
  return gy[this.thread.y][this.thread.x] - Math.exp(y[this.thread.y][this.thread.x]) * s[this.thread.y];
}`;

function check(op: string, rows: number, n: number, arrays: Record<string, F32>): boolean {
  checkIndexable(op, { rows, n });
  for (const [name, a] of Object.entries(arrays)) expectLength(op, name, a, rows * n);
  return rows * n > 0;
}

/** Per-row [max, sum exp(x - max)] of x [rows, n], interleaved. */
function* rowStats(x: F32, rows: number, n: number): Generator<KernelCall, DeviceArray, Float32Array> {
  return yield* kept(call('softmax.stats', `${rows},${n}`, () => ({
    source: statsKernel, output: [rows], constants: { n }, argumentTypes: { x: 'Input' }, components: 2,
  }), [inp(x, [n, rows])]));
}

/** Row softmax over the last axis of x viewed as [rows, n]. */
export function* softmax(x: F32, rows: number, n: number, out: F32): KernelOp {
  if (!check('softmax', rows, n, { x, out })) return;
  const st = yield* rowStats(x, rows, n);
  yield* into(out, call('softmax.apply', `${rows},${n}`, () => ({
    source: softmaxApply, output: [n, rows], argumentTypes: { x: 'Input', st: 'Input' },
  }), [inp(x, [n, rows]), inp(st, [2, rows])]));
}

/** Row log-softmax. */
export function* logSoftmax(x: F32, rows: number, n: number, out: F32): KernelOp {
  if (!check('logSoftmax', rows, n, { x, out })) return;
  const st = yield* rowStats(x, rows, n);
  yield* into(out, call('logSoftmax.apply', `${rows},${n}`, () => ({
    source: logSoftmaxApply, output: [n, rows], argumentTypes: { x: 'Input', st: 'Input' },
  }), [inp(x, [n, rows]), inp(st, [2, rows])]));
}

/** gx = y * (gy - sum(gy * y)) per row. */
export function* softmaxBackward(y: F32, gy: F32, rows: number, n: number, gx: F32): KernelOp {
  if (!check('softmaxBackward', rows, n, { y, gy, gx })) return;
  const dot = yield* kept(call('softmaxBackward.dot', `${rows},${n}`, () => ({
    source: dotKernel, output: [rows], constants: { n }, argumentTypes: { y: 'Input', gy: 'Input' },
  }), [inp(y, [n, rows]), inp(gy, [n, rows])]));
  yield* into(gx, call('softmaxBackward.apply', `${rows},${n}`, () => ({
    source: softmaxBackwardApply, output: [n, rows], argumentTypes: { y: 'Input', gy: 'Input', dot: 'Array' },
  }), [inp(y, [n, rows]), inp(gy, [n, rows]), dot]));
}

/** gx = gy - exp(y) * sum(gy) per row. */
export function* logSoftmaxBackward(y: F32, gy: F32, rows: number, n: number, gx: F32): KernelOp {
  if (!check('logSoftmaxBackward', rows, n, { y, gy, gx })) return;
  const s = yield* kept(call('logSoftmaxBackward.sum', `${rows},${n}`, () => ({
    source: rowSumKernel, output: [rows], constants: { n }, argumentTypes: { gy: 'Input' },
  }), [inp(gy, [n, rows])]));
  yield* into(gx, call('logSoftmaxBackward.apply', `${rows},${n}`, () => ({
    source: logSoftmaxBackwardApply, output: [n, rows], argumentTypes: { y: 'Input', gy: 'Input', s: 'Array' },
  }), [inp(y, [n, rows]), inp(gy, [n, rows]), s]));
}
