/**
 * Optimizer updates as gpu.js kernels, one thread per element: the AdEMAMix and AdamW updates
 * (each state array and the parameter is its own kernel, as gpu.js kernels have one output), the
 * squared-norm reduction of global-norm clipping and the in-place scale of gradients. The
 * step-dependent scalars are `Float` arguments computed by the optimizer on the host in float64
 * (rounded to float32 when passed), so a new step never recompiles a kernel. With the webgpu
 * worker every array stays on the GPU: each output fills the array it replaces.
 */
import type { AdamwUpdateArgs, AdemamixUpdateArgs, F32 } from '../types';
import { checkScaleBy, checkSumSquares, checkUpdateLengths } from '../js/optimizer';
import { call, into, kept, type KernelCall, type KernelOp } from './runtime';

/** m ← beta·m + c·g (c = 1 − beta): the fast and slow EMAs of AdEMAMix, AdamW's first moment. */
const emaKernel = `function (m, g, beta, c) {
  const i = this.thread.x;
  return m[i] * beta + g[i] * c;
}`;

/** nu ← beta2·nu + c2·g² (c2 = 1 − beta2): the second moment. */
const emaSquareKernel = `function (nu, g, beta2, c2) {
  const i = this.thread.x;
  return nu[i] * beta2 + c2 * g[i] * g[i];
}`;

/** θ ← θ − lr·((m1/bc1 + alpha·m2) / (sqrt(nu)/sbc2 + eps) + λ·θ), from the updated m1, m2, nu. */
const ademamixParamKernel = `function (p, m1, m2, nu, bc1, alpha, sbc2, eps, weightDecay, lr) {
  const i = this.thread.x;
  const u = (m1[i] / bc1 + alpha * m2[i]) / (Math.sqrt(nu[i]) / sbc2 + eps) + p[i] * weightDecay;
  return p[i] - lr * u;
}`;

/** θ ← θ·decay + nstep·m / (sqrt(v)/sbc2 + eps), decay = 1 − lr·λ, nstep = −lr/bc1. */
const adamwParamKernel = `function (p, m, v, decay, nstep, sbc2, eps) {
  const i = this.thread.x;
  return p[i] * decay + (nstep * m[i]) / (Math.sqrt(v[i]) / sbc2 + eps);
}`;

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

/** The kernel call of m ← beta·m + (1 − beta)·g. */
function ema(name: string, m: F32, g: F32, beta: number): KernelCall {
  const n = m.length;
  return call(name, `${n}`, () => ({ source: emaKernel, output: [n], argumentTypes: { m: 'Array', g: 'Array', beta: 'Float', c: 'Float' } }), [m, g, beta, 1 - beta]);
}

/** The kernel call of nu ← beta2·nu + (1 − beta2)·g². */
function emaSquare(name: string, nu: F32, g: F32, beta2: number): KernelCall {
  const n = nu.length;
  return call(name, `${n}`, () => ({ source: emaSquareKernel, output: [n], argumentTypes: { nu: 'Array', g: 'Array', beta2: 'Float', c2: 'Float' } }), [nu, g, beta2, 1 - beta2]);
}

/** The AdEMAMix update (see `AdemamixUpdateArgs`): m1, m2, nu, then θ from them, each a kernel. */
export function* ademamixUpdate(a: AdemamixUpdateArgs): KernelOp {
  const { param, grad, m1, m2, nu } = a;
  checkUpdateLengths('ademamixUpdate', param, { grad, m1, m2, nu });
  const n = param.length;
  if (n === 0) return;
  if (m1 !== null) yield* into(m1, ema('ademamix.m1', m1, grad, a.beta1));
  yield* into(m2, ema('ademamix.m2', m2, grad, a.beta3));
  yield* into(nu, emaSquare('ademamix.nu', nu, grad, a.beta2));
  yield* into(param, call('ademamix.param', `${n}`, () => ({
    source: ademamixParamKernel, output: [n],
    argumentTypes: { p: 'Array', m1: 'Array', m2: 'Array', nu: 'Array', bc1: 'Float', alpha: 'Float', sbc2: 'Float', eps: 'Float', weightDecay: 'Float', lr: 'Float' },
  }), [param, m1 ?? grad, m2, nu, a.bc1, a.alpha, Math.sqrt(a.bc2), a.eps, a.weightDecay, a.lr]));
}

/** The AdamW update (see `AdamwUpdateArgs`): m, v, then θ from them, each a kernel. */
export function* adamwUpdate(a: AdamwUpdateArgs): KernelOp {
  const { param, grad, m, v } = a;
  checkUpdateLengths('adamwUpdate', param, { grad, m, v });
  const n = param.length;
  if (n === 0) return;
  yield* into(m, ema('adamw.m', m, grad, a.beta1));
  yield* into(v, emaSquare('adamw.v', v, grad, a.beta2));
  yield* into(param, call('adamw.param', `${n}`, () => ({
    source: adamwParamKernel, output: [n],
    argumentTypes: { p: 'Array', m: 'Array', v: 'Array', decay: 'Float', nstep: 'Float', sbc2: 'Float', eps: 'Float' },
  }), [param, m, v, 1 - a.lr * a.weightDecay, -a.lr / a.bc1, Math.sqrt(a.bc2), a.eps]));
}

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
