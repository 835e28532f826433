/**
 * Weighted row cross-entropy as gpu.js kernels.
 *   forward:  one thread per row returns [lse, loss] (an Array(2) return, so the logits are read
 *             in one kernel): lse = max + log(sum exp(logits - max)), loss = w (lse - logits[target])
 *   backward: one thread per logit: g w (exp(logits - lse) - [j == target]); inside the LM-head
 *             loss (`linearCrossEntropy`) with g = 1 and lse read from the forward's [lse, loss]
 *             rows where they are (on the GPU, nothing goes up for it)
 * Rows with a negative target (ignore index) have loss 0 and zero gradient. The V loop bound is
 * a constant, so V = 131072 is never cut at gpu.js's 1000-iteration loop cap.
 */
import { ShapeError } from '../../errors';
import type { F32, I32 } from '../types';
import { checkIndexable, expectLength, inp, call, into, type KernelCall, type KernelOp } from './runtime';

const forwardKernel = `function (logits, targets, weights) {
  let m = -Infinity;
  for (let j = 0; j < this.constants.V; j++) {
    const v = logits[this.thread.x][j];
    if (v > m) {
      m = v;
    }
  }
  // Kahan-compensated: a plain float32 sum over V = 131072 terms drifts by ~1e-3.
  let s = 0;
  let c = 0;
  for (let j = 0; j < this.constants.V; j++) {
    const y = Math.exp(logits[this.thread.x][j] - m) - c;
    const t = s + y;
    c = (t - s) - y;
    s = t;
  }
  const t = targets[this.thread.x];
  const w = weights[this.thread.x];
  let loss = 0;
  if (t >= 0 && w !== 0) {
    // (m - x_t) + log s rather than lse - x_t: exact difference first, as lse is rounded to float32.
    loss = w * ((m - logits[this.thread.x][t]) + Math.log(s));
  }
  return [m + Math.log(s), loss];
}`;

const backwardKernel = `function (logits, targets, weights, lse, g) {
  const t = targets[this.thread.y];
  let w = 0;
  if (t >= 0) {
    w = weights[this.thread.y] * g[this.thread.y];
  }
  if (w === 0) {
    return 0;
  }
  let p = w * Math.exp(logits[this.thread.y][this.thread.x] - lse[this.thread.y]);
  if (this.thread.x === t) {
    p = p - w;
  }
  return p;
}`;

/** The backward with g = 1 and lse = stats[row][0] (the forward's output, bound as [2, rows]). */
const backwardFromStatsKernel = `function (logits, targets, weights, stats) {
  const t = targets[this.thread.y];
  let w = 0;
  if (t >= 0) {
    w = weights[this.thread.y];
  }
  if (w === 0) {
    return 0;
  }
  let p = w * Math.exp(logits[this.thread.y][this.thread.x] - stats[this.thread.y][0]);
  if (this.thread.x === t) {
    p = p - w;
  }
  return p;
}`;

function checkArgs(op: string, logits: F32, targets: I32, weights: F32 | null, rows: number, V: number): F32 {
  checkIndexable(op, { rows, V });
  expectLength(op, 'logits', logits, rows * V);
  expectLength(op, 'targets', targets, rows);
  for (let r = 0; r < rows; r++) {
    if (targets[r]! >= V) throw new ShapeError(`${op}: targets[${r}] = ${targets[r]} is not below V = ${V}`);
  }
  if (weights === null) return new Float32Array(rows).fill(1);
  expectLength(op, 'weights', weights, rows);
  return weights;
}

/** The forward kernel: [lse, loss] per row (2·rows values, read back: the losses are summed on the host). */
export function* rowStats(logits: F32, targets: I32, w: F32, rows: number, V: number): Generator<KernelCall, Float32Array, Float32Array> {
  if (V === 0) throw new ShapeError('crossEntropy: V must be positive');
  return yield call('crossEntropy', `${rows},${V}`, () => ({
    source: forwardKernel, output: [rows], constants: { V }, components: 2,
    argumentTypes: { logits: 'Input', targets: 'Array', weights: 'Array' },
  }), [inp(logits, [V, rows]), targets, w]);
}

/**
 * glogits[r, :] = w[r]·(softmax(logits[r]) − onehot(targets[r])) from `stats`, the [lse, loss]
 * rows `rowStats` returned in the same op (a buffer still on the GPU in the webgpu worker).
 */
export function* crossEntropyBackwardFromStats(logits: F32, targets: I32, w: F32, stats: Float32Array, rows: number, V: number, glogits: F32): KernelOp {
  expectLength('crossEntropyBackward', 'stats', stats, 2 * rows);
  if (rows * V === 0) return;
  yield* into(glogits, call('crossEntropyBackward.stats', `${rows},${V}`, () => ({
    source: backwardFromStatsKernel, output: [V, rows],
    argumentTypes: { logits: 'Input', targets: 'Array', weights: 'Array', stats: 'Input' },
  }), [inp(logits, [V, rows]), targets, w, inp(stats, [2, rows])]));
}

/** loss[r] = w[r] * (lse[r] - logits[r, targets[r]]); lse[r] saved for the backward pass. */
export function* crossEntropy(logits: F32, targets: I32, weights: F32 | null, rows: number, V: number, loss: F32, lse: F32): KernelOp {
  const w = checkArgs('crossEntropy', logits, targets, weights, rows, V);
  expectLength('crossEntropy', 'loss', loss, rows);
  expectLength('crossEntropy', 'lse', lse, rows);
  if (rows === 0) return;
  const res = yield* rowStats(logits, targets, w, rows, V);
  for (let r = 0; r < rows; r++) {
    lse[r] = res[2 * r]!;
    loss[r] = res[2 * r + 1]!;
  }
}

/** glogits[r, :] = g[r] * w[r] * (softmax(logits[r]) - onehot(targets[r])). */
export function* crossEntropyBackward(logits: F32, targets: I32, weights: F32 | null, lse: F32, g: F32, rows: number, V: number, glogits: F32): KernelOp {
  const w = checkArgs('crossEntropyBackward', logits, targets, weights, rows, V);
  expectLength('crossEntropyBackward', 'lse', lse, rows);
  expectLength('crossEntropyBackward', 'g', g, rows);
  expectLength('crossEntropyBackward', 'glogits', glogits, rows * V);
  if (rows * V === 0) return;
  yield* into(glogits, call('crossEntropyBackward', `${rows},${V}`, () => ({
    source: backwardKernel, output: [V, rows],
    argumentTypes: { logits: 'Input', targets: 'Array', weights: 'Array', lse: 'Array', g: 'Array' },
  }), [inp(logits, [V, rows]), targets, w, lse, g]));
}
