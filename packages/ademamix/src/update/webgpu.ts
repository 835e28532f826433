/**
 * The AdEMAMix and AdamW updates as gpu.js kernels for the webgpu device, one thread per element
 * (each state array and the parameter is its own kernel, as gpu.js kernels have one output). The
 * step-dependent scalars are `Float` arguments computed by the optimizer on the host in float64
 * (rounded to float32 when passed), so a new step never recompiles a kernel. Every array stays on
 * the GPU: each output fills the array it replaces. Registered when the device starts (`onWebgpu`).
 */
import { gpujs } from '@apertus/tensor/kernels';
import { checkUpdateLengths, type AdamwUpdateArgs, type AdemamixUpdateArgs } from './kernel';

const { call, into } = gpujs;
type GpujsKernelCall = gpujs.KernelCall;
type GpujsOp = gpujs.KernelOp;
type F32 = Float32Array;

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

/** The kernel call of m ← beta·m + (1 − beta)·g. */
function ema(name: string, m: F32, g: F32, beta: number): GpujsKernelCall {
  const n = m.length;
  return call(name, `${n}`, () => ({ source: emaKernel, output: [n], argumentTypes: { m: 'Array', g: 'Array', beta: 'Float', c: 'Float' } }), [m, g, beta, 1 - beta]);
}

/** The kernel call of nu ← beta2·nu + (1 − beta2)·g². */
function emaSquare(name: string, nu: F32, g: F32, beta2: number): GpujsKernelCall {
  const n = nu.length;
  return call(name, `${n}`, () => ({ source: emaSquareKernel, output: [n], argumentTypes: { nu: 'Array', g: 'Array', beta2: 'Float', c2: 'Float' } }), [nu, g, beta2, 1 - beta2]);
}

/** The AdEMAMix update (see `AdemamixUpdateArgs`): m1, m2, nu, then θ from them, each a kernel. */
export function* ademamixUpdateGpujs(a: AdemamixUpdateArgs): GpujsOp {
  const { param, grad, m1, m2, nu } = a as { param: F32; grad: F32; m1: F32 | null; m2: F32; nu: F32 };
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
export function* adamwUpdateGpujs(a: AdamwUpdateArgs): GpujsOp {
  const { param, grad, m, v } = a as { param: F32; grad: F32; m: F32; v: F32 };
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

