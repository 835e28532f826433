/**
 * Axis reductions as gpu.js kernels: x is viewed as [outer, n, inner] and each thread reduces one
 * (o, i) column over j < n (a constant, so n = 131072 is never cut at gpu.js's loop cap).
 */
import type { F32, I32 } from '../types';
import { checkIndexable, expectLength, inp, call, into, type KernelOp } from './runtime';

/** out[o, i] = sum_j x[o, j, i] (a float32 accumulator; the JS reference sums in float64). */
const sumKernel = `function (x) {
  let s = 0;
  for (let j = 0; j < this.constants.n; j++) {
    s += x[this.thread.y][j][this.thread.x];
  }
  return s;
}`;

/** sumKernel for inner = 1: one thread per row, so the SIMD lanes span four rows. */
const sumRowsKernel = `function (x) {
  let s = 0;
  for (let j = 0; j < this.constants.n; j++) {
    s += x[this.thread.x][j];
  }
  return s;
}`;

/** [max_j x[o, j, i], first j attaining it]; a NaN at j = 0 wins, like the reference. */
const maxKernel = `function (x) {
  let best = -Infinity;
  let arg = 0;
  for (let j = 0; j < this.constants.n; j++) {
    const v = x[this.thread.y][j][this.thread.x];
    if (v > best || (j === 0 && v !== v)) {
      best = v;
      arg = j;
    }
  }
  return [best, arg];
}`;

/** maxKernel for inner = 1. */
const maxRowsKernel = `function (x) {
  let best = -Infinity;
  let arg = 0;
  for (let j = 0; j < this.constants.n; j++) {
    const v = x[this.thread.x][j];
    if (v > best || (j === 0 && v !== v)) {
      best = v;
      arg = j;
    }
  }
  return [best, arg];
}`;

/** out[o, i] = sum_j x[o, j, i] for x viewed as [outer, n, inner]. */
export function* sum(x: F32, outer: number, n: number, inner: number, out: F32): KernelOp {
  checkIndexable('sum', { outer, n, inner });
  expectLength('sum', 'x', x, outer * n * inner);
  expectLength('sum', 'out', out, outer * inner);
  if (outer * inner === 0) return;
  if (n === 0) { out.fill(0); return; }
  const rows = inner === 1;
  yield* into(out, call('sum', `${outer},${n},${inner}`, () => ({
    source: rows ? sumRowsKernel : sumKernel,
    output: rows ? [outer] : [inner, outer],
    constants: { n },
    argumentTypes: { x: 'Input' },
  }), [rows ? inp(x, [n, outer]) : inp(x, [inner, n, outer])]));
}

/** out[o, i] = max_j x[o, j, i]; arg[o, i] = first j attaining it (one kernel returning both). */
export function* max(x: F32, outer: number, n: number, inner: number, out: F32, arg: I32): KernelOp {
  checkIndexable('max', { outer, n, inner });
  expectLength('max', 'x', x, outer * n * inner);
  expectLength('max', 'out', out, outer * inner);
  expectLength('max', 'arg', arg, outer * inner);
  const m = outer * inner;
  if (m === 0) return;
  if (n === 0) { out.fill(-Infinity); arg.fill(0); return; }
  const rows = inner === 1;
  const res = yield call('max', `${outer},${n},${inner}`, () => ({
    source: rows ? maxRowsKernel : maxKernel,
    output: rows ? [outer] : [inner, outer],
    constants: { n },
    argumentTypes: { x: 'Input' },
    components: 2,
  }), [rows ? inp(x, [n, outer]) : inp(x, [inner, n, outer])]);
  for (let i = 0; i < m; i++) {
    out[i] = res[2 * i]!;
    arg[i] = Math.round(res[2 * i + 1]!);
  }
}
