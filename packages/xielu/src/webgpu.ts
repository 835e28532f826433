/**
 * xIELU as gpu.js kernels: one thread per element for y and gx, and the two parameter sums
 * reduced on the device in two passes (one thread per chunk of `CHUNK` elements returning
 * `[Σp, Σn]` of its chunk, then one thread summing the chunk partials of each sum).
 *
 * expm1(m) for m = min(x, ε) ≤ ε < 0 is written out: gpu.js's WGSL `expm1` is `exp(x) − 1`,
 * which cancels for the tiny |m| near ε (at m = −10⁻⁶ it keeps no correct digit). For
 * |m| < ln2/2 the kernel uses expm1(m) = m + m²·P(m) with the Cephes `expf` polynomial (as the
 * SIMD kernel of the cpu backend does after its range reduction); below, exp(m) − 1 has no
 * cancellation (|result| ≥ 0.29).
 */
import { gpujs, type WebgpuKernelApi } from '@apertus/tensor/kernels';
import { checkXielu } from './reference';

const { call, checkIndexable, into, kept } = gpujs;
type F32 = Float32Array;
type KernelOp = gpujs.KernelOp;

/** Elements per thread of the first summation pass. */
export const XIELU_CHUNK = 256;

/** Kernel statements: `e` ← expm1(m) for m ≤ 0 (see the file comment). */
const EXPM1 = `let e = 0;
  if (m > -0.34657359) {
    const p = ((((0.00019875691500 * m + 0.0013981999507) * m + 0.0083334519073) * m + 0.041665795894) * m + 0.16666665459) * m + 0.50000001201;
    e = m + m * m * p;
  } else {
    e = Math.exp(m) - 1;
  }`;

const forwardKernel = `function (x, ap, spn, beta, eps) {
  const v = x[this.thread.x];
  if (v > 0) {
    return v * (ap[0] * v + beta);
  }
  let m = v;
  if (v > eps) {
    m = eps;
  }
  ${EXPM1}
  return (beta + spn[0]) * (e - v) + beta * v;
}`;

const gxKernel = `function (x, gy, ap, spn, beta, eps) {
  const v = x[this.thread.x];
  const g = gy[this.thread.x];
  if (v > 0) {
    return g * (2 * ap[0] * v + beta);
  }
  const an = beta + spn[0];
  if (v > eps) {
    return g * (beta - an);
  }
  const m = v;
  ${EXPM1}
  return g * (an * e + beta);
}`;

/** [Σ_{x>0} g·x², Σ_{x≤0} g·(expm1(min(x, ε)) − x)] over the chunk of this thread. */
const partsKernel = `function (x, gy, eps) {
  let sp = 0;
  let sn = 0;
  for (let j = 0; j < this.constants.chunk; j++) {
    const i = this.thread.x * this.constants.chunk + j;
    if (i < this.constants.n) {
      const v = x[i];
      const g = gy[i];
      if (v > 0) {
        sp += g * v * v;
      } else {
        let m = v;
        if (v > eps) {
          m = eps;
        }
        ${EXPM1}
        sn += g * (e - v);
      }
    }
  }
  return [sp, sn];
}`;

/** Σ_c parts[c][which] (which = 0: Σp, 1: Σn), in chunk order. */
const totalKernel = `function (parts, which) {
  let s = 0;
  for (let c = 0; c < this.constants.chunks; c++) {
    s += parts[c][which];
  }
  return s;
}`;

/** out = xIELU(x) with αp = alpha_p[0], αn = β + softplus_n[0]. */
export function* xieluGpujs(x: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, out: F32): KernelOp {
  checkXielu('xielu', x, alpha_p, softplus_n, { out });
  const n = x.length;
  checkIndexable('xielu', { n });
  if (n === 0) return;
  yield* into(out, call('xielu', `${n}`, () => ({
    source: forwardKernel, output: [n],
    argumentTypes: { x: 'Array', ap: 'Array', spn: 'Array', beta: 'Float', eps: 'Float' },
  }), [x, alpha_p, softplus_n, beta, eps]));
}

/** gx = gy·∂out/∂x; sumP[0] = Σ_{x>0} gy·x², sumN[0] = Σ_{x≤0} gy·(expm1(min(x, ε)) − x). */
export function* xieluBackwardGpujs(gpu: Pick<WebgpuKernelApi, 'inp'>, x: F32, gy: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, gx: F32, sumP: F32, sumN: F32): KernelOp {
  checkXielu('xieluBackward', x, alpha_p, softplus_n, { gy, gx, sumP, sumN });
  const n = x.length;
  checkIndexable('xieluBackward', { n });
  if (n === 0) {
    sumP[0] = 0;
    sumN[0] = 0;
    return;
  }
  yield* into(gx, call('xieluBackward.gx', `${n}`, () => ({
    source: gxKernel, output: [n],
    argumentTypes: { x: 'Array', gy: 'Array', ap: 'Array', spn: 'Array', beta: 'Float', eps: 'Float' },
  }), [x, gy, alpha_p, softplus_n, beta, eps]));
  const chunks = Math.ceil(n / XIELU_CHUNK);
  const parts = yield* kept(call('xieluBackward.parts', `${n}`, () => ({
    source: partsKernel, output: [chunks], constants: { n, chunk: XIELU_CHUNK }, components: 2,
    argumentTypes: { x: 'Array', gy: 'Array', eps: 'Float' },
  }), [x, gy, eps]));
  const total = () => ({
    source: totalKernel, output: [1], constants: { chunks }, argumentTypes: { parts: 'Input', which: 'Integer' } as const,
  });
  yield* into(sumP, call('xieluBackward.total', `${chunks}`, total, [gpu.inp(parts, [2, chunks]), 0]));
  yield* into(sumN, call('xieluBackward.total', `${chunks}`, total, [gpu.inp(parts, [2, chunks]), 1]));
}
