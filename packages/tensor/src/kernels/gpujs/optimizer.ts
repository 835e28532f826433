/**
 * The squared-norm reduction of global-norm clipping and the in-place scale of gradients as gpu.js
 * kernels. With the webgpu worker every array stays on the GPU: each output fills the array it
 * replaces.
 */
import type { F32 } from '../types';
import { checkSumSquares } from '../../ops/reduce/reference';
import { checkScaleBy } from '../../ops/elementwise/reference';
import { call, into, kept, type KernelOp } from './runtime';

/** Elements per thread of the first stage of `sumSquares`. */
export const SUM_SQUARES_CHUNK = 256;

/** partial[t] = Σ_{j < CHUNK} x[t·CHUNK + j]², left to right (the last chunk stops at n). */
const squaresKernel = `function (x) {
  let s = 0;
  for (let j = 0; j < this.constants.chunk; j++) {
    const i = this.thread.x * this.constants.chunk + j;
    if (i < this.constants.n) {
      s += x[i] * x[i];
    }
  }
  return s;
}`;

/** x[i]·s. */
const scaleKernel = `function (x, s) {
  return x[this.thread.x] * s;
}`;

/**
 * out[0] = acc[0] + Σ x[i]²: float32 partial sums of SUM_SQUARES_CHUNK elements in parallel, then
 * one thread adds them to acc[0] in order. With `out` = `acc` the squared norms of several
 * tensors add up on the device and only the final value need come back.
 */
export function* sumSquares(x: F32, acc: F32 | null, out: F32): KernelOp {
  checkSumSquares(acc, out);
  const n = x.length;
  const parts = Math.ceil(n / SUM_SQUARES_CHUNK);
  const partial = n === 0 ? null : yield* kept(call('sumSquares.chunks', `${n}`, () => ({
    source: squaresKernel, output: [parts], constants: { chunk: SUM_SQUARES_CHUNK, n }, argumentTypes: { x: 'Array' },
  }), [x]));
  // Without acc, and for an empty x, the same loop with no acc term or no partial sums.
  const first = acc === null ? '0' : 'acc[0]';
  const loop = partial === null ? '' : 'for (let t = 0; t < this.constants.parts; t++) {\n    s += partial[t];\n  }';
  const args = [...(partial === null ? [] : [partial]), ...(acc === null ? [] : [acc])];
  const types = { ...(partial === null ? {} : { partial: 'Array' as const }), ...(acc === null ? {} : { acc: 'Array' as const }) };
  yield* into(out, call('sumSquares.total', `${parts},${acc === null}`, () => ({
    source: `function (${Object.keys(types).join(', ')}) {\n  let s = ${first};\n  ${loop}\n  return s;\n}`,
    output: [1], constants: { parts }, argumentTypes: types,
  }), args));
}

/** out[i] = x[i]·s; `out` may be `x`. */
export function* scaleBy(x: F32, s: number, out: F32): KernelOp {
  checkScaleBy(x, out);
  const n = x.length;
  if (n === 0) return;
  yield* into(out, call('scaleBy', `${n}`, () => ({ source: scaleKernel, output: [n], argumentTypes: { x: 'Array', s: 'Float' } }), [x, s]));
}
