/**
 * The optimizer updates, the reference kernels: the scalar loops. `torch-exact` float32 updates
 * round every operation to float32 and fuse torch's fused multiply-adds; `fast` ones compute each
 * element in double and round what is stored; float64 parameters run torch's float64 math.
 */
import { fmaF32, fmaF64 } from '../fma';
import type { FloatArray } from '../types';
import { checkUpdateLengths, type AdamwUpdateArgs, type AdemamixUpdateArgs } from './kernel';

/** The per-step scalars, each already rounded to f32 as `stepF32` rounds them. */
export interface SimdStepScalars {
  b1: number; c1: number; b3: number; c3: number; b2: number; c2: number;
  bc1: number; sbc2: number; eps: number; alpha: number; wd: number; nlr: number;
}
/** The per-step scalars of an AdamW update (f32-rounded for the torch-exact one). */
export interface AdamWScalars { b1: number; c1: number; b2: number; c2: number; decay: number; sbc2: number; eps: number; nstep: number }

/** The AdEMAMix reference kernel (see `AdemamixUpdateArgs`). */
export function ademamixReference(a: AdemamixUpdateArgs): void {
  checkUpdateLengths('ademamixUpdate', a.param, { grad: a.grad, m1: a.m1, m2: a.m2, nu: a.nu });
  if (a.param instanceof Float64Array) stepF64(a.param, a.grad, a.m1 as Float64Array | null, a.m2 as Float64Array, a.nu as Float64Array, a);
  else if (a.arithmetic === 'fast') stepFast(a.param, a.grad, a.m1, a.m2, a.nu, a);
  else stepF32(a.param, a.grad, a.m1 as Float32Array | null, a.m2 as Float32Array, a.nu as Float32Array, a);
}

/** The AdamW reference kernel (see `AdamwUpdateArgs`). */
export function adamwReference(a: AdamwUpdateArgs): void {
  checkUpdateLengths('adamwUpdate', a.param, { grad: a.grad, m: a.m, v: a.v });
  if (a.param instanceof Float64Array) adamwF64(a.param, a.grad, a.m, a.v, a);
  else if (a.arithmetic === 'fast') adamwFast(a.param, a.grad, a.m, a.v, a);
  else adamwF32(a.param, a.grad, a.m as Float32Array, a.v as Float32Array, a);
}

/** Per-step scalars of the update (in double): the scalar fields of `AdemamixUpdateArgs`. */
export type StepConstants = Omit<AdemamixUpdateArgs, 'param' | 'grad' | 'm1' | 'm2' | 'nu' | 'arithmetic'>;

/** The per-step scalars of the float32 update, each rounded to float32 as torch rounds Python scalars. */
export function stepF32Scalars(c: StepConstants): SimdStepScalars {
  const f = Math.fround;
  return {
    b1: f(c.beta1), c1: f(1 - c.beta1), b3: f(c.beta3), c3: f(1 - c.beta3), b2: f(c.beta2), c2: f(1 - c.beta2),
    bc1: f(c.bc1), sbc2: f(Math.sqrt(c.bc2)), eps: f(c.eps), alpha: f(c.alpha), wd: f(c.weightDecay), nlr: f(-c.lr),
  };
}

/**
 * The update for float32 parameters on elements [start, n): every operation rounded to float32,
 * torch's fused ones fused (the SIMD kernel in cpu.ts does elements [0, start) with the same bits).
 */
export function stepF32(data: Float32Array, grad: FloatArray, m1: Float32Array | null, m2: Float32Array, nu: Float32Array, c: StepConstants, start = 0): void {
  const f = Math.fround;
  const { b1, c1, b3, c3, b2, c2, bc1, sbc2, eps, alpha, wd, nlr } = stepF32Scalars(c);
  const n = data.length;
  for (let i = start; i < n; i++) {
    const g = f(grad[i]!);
    const fast = m1 === null ? g : (m1[i] = fmaF32(g, c1, f(m1[i]! * b1)));
    const slow = (m2[i] = fmaF32(g, c3, f(m2[i]! * b3)));
    const sq = (nu[i] = fmaF32(f(c2 * g), g, f(nu[i]! * b2)));
    const denom = f(f(f(Math.sqrt(sq)) / sbc2) + eps);
    let u = f(f(f(fast / bc1) + f(alpha * slow)) / denom);
    const p = data[i]!;
    if (wd !== 0) u = fmaF32(p, wd, u);
    data[i] = f(p + f(nlr * u));
  }
}

/** The scalars of a double-precision update. */
function doubleScalars(c: StepConstants): StepConstants & { c1: number; c2: number; c3: number; sbc2: number; wd: number; nlr: number } {
  return { ...c, c1: 1 - c.beta1, c2: 1 - c.beta2, c3: 1 - c.beta3, sbc2: Math.sqrt(c.bc2), wd: c.weightDecay, nlr: -c.lr };
}

/** The update in double precision, rounding only what is stored (`arithmetic: 'fast'`). */
export function stepFast(data: FloatArray, grad: FloatArray, m1: FloatArray | null, m2: FloatArray, nu: FloatArray, c: StepConstants): void {
  const { beta1, beta2, beta3, alpha, bc1, eps, c1, c2, c3, sbc2, wd, nlr } = doubleScalars(c);
  const n = data.length;
  for (let i = 0; i < n; i++) {
    const g = grad[i]!;
    let fast = g;
    if (m1 !== null) { m1[i] = m1[i]! * beta1 + g * c1; fast = m1[i]!; }
    m2[i] = m2[i]! * beta3 + g * c3;
    nu[i] = nu[i]! * beta2 + c2 * g * g;
    const p = data[i]!;
    const u = (fast / bc1 + alpha * m2[i]!) / (Math.sqrt(nu[i]!) / sbc2 + eps) + p * wd;
    data[i] = p + nlr * u;
  }
}

/** The update for float64 parameters, with torch's fused multiply-adds. */
export function stepF64(data: Float64Array, grad: FloatArray, m1: Float64Array | null, m2: Float64Array, nu: Float64Array, c: StepConstants): void {
  const { beta1, beta2, beta3, alpha, bc1, eps, c1, c2, c3, sbc2, wd, nlr } = doubleScalars(c);
  const n = data.length;
  for (let i = 0; i < n; i++) {
    const g = grad[i]!;
    const fast = m1 === null ? g : (m1[i] = fmaF64(g, c1, m1[i]! * beta1));
    const slow = (m2[i] = fmaF64(g, c3, m2[i]! * beta3));
    const sq = (nu[i] = fmaF64(c2 * g, g, nu[i]! * beta2));
    const denom = Math.sqrt(sq) / sbc2 + eps;
    let u = (fast / bc1 + alpha * slow) / denom;
    const p = data[i]!;
    if (wd !== 0) u = fmaF64(p, wd, u);
    data[i] = p + nlr * u;
  }
}

/** The constants of one AdamW step of one group: hyperparameters and bias corrections 1 − βᵗ (the scalar fields of `AdamwUpdateArgs`). */
export type AdamWConstants = Omit<AdamwUpdateArgs, 'param' | 'grad' | 'm' | 'v' | 'arithmetic'>;

/** The per-step scalars of AdamW: rounded to float32 for the torch-exact update, in double for `fast`. */
export function adamwScalars(c: AdamWConstants, fast: boolean): AdamWScalars {
  const f = fast ? (x: number): number => x : Math.fround;
  return {
    b1: f(c.beta1), c1: f(1 - c.beta1), b2: f(c.beta2), c2: f(1 - c.beta2),
    decay: f(1 - c.lr * c.weightDecay), sbc2: f(Math.sqrt(c.bc2)), eps: f(c.eps), nstep: f(-c.lr / c.bc1),
  };
}

/**
 * The update for float32 parameters on elements [start, n): every operation rounded to float32,
 * torch's fused ones fused (the SIMD kernel does [0, start) with the same bits).
 */
export function adamwF32(data: Float32Array, grad: FloatArray, m: Float32Array, v: Float32Array, c: AdamWConstants, start = 0): void {
  const f = Math.fround;
  const { b1, c1, b2, c2, decay, sbc2, eps, nstep } = adamwScalars(c, false);
  for (let i = start; i < data.length; i++) {
    const g = f(grad[i]!);
    const p = f(data[i]! * decay); // = data[i] when weightDecay = 0 (decay = 1)
    const mi = (m[i] = fmaF32(g, c1, f(m[i]! * b1)));
    const vi = (v[i] = fmaF32(f(c2 * g), g, f(v[i]! * b2)));
    const denom = f(f(f(Math.sqrt(vi)) / sbc2) + eps);
    data[i] = f(p + f(f(nstep * mi) / denom));
  }
}

/**
 * The update in double precision per element on elements [start, n), rounded only where stored
 * (`arithmetic: 'fast'`; the SIMD kernel does [0, start) on f64 lanes with the same bits).
 */
export function adamwFast(data: FloatArray, grad: FloatArray, m: FloatArray, v: FloatArray, c: AdamWConstants, start = 0): void {
  const { beta1, beta2, eps } = c;
  const c1 = 1 - beta1, c2 = 1 - beta2, sbc2 = Math.sqrt(c.bc2), nstep = -c.lr / c.bc1, decay = 1 - c.lr * c.weightDecay;
  for (let i = start; i < data.length; i++) {
    const g = grad[i]!;
    m[i] = m[i]! * beta1 + g * c1;
    v[i] = v[i]! * beta2 + c2 * g * g;
    data[i] = data[i]! * decay + (nstep * m[i]!) / (Math.sqrt(v[i]!) / sbc2 + eps);
  }
}

/** The update for float64 parameters, with torch's fused multiply-adds. */
export function adamwF64(data: FloatArray, grad: FloatArray, m: FloatArray, v: FloatArray, c: AdamWConstants): void {
  const { beta1, beta2, eps } = c;
  const c1 = 1 - beta1, c2 = 1 - beta2, sbc2 = Math.sqrt(c.bc2), nstep = -c.lr / c.bc1, decay = 1 - c.lr * c.weightDecay;
  for (let i = 0; i < data.length; i++) {
    const g = grad[i]!;
    const p = c.weightDecay !== 0 ? data[i]! * decay : data[i]!;
    const mi = (m[i] = fmaF64(g, c1, m[i]! * beta1));
    const vi = (v[i] = fmaF64(c2 * g, g, v[i]! * beta2));
    data[i] = p + (nstep * mi) / (Math.sqrt(vi) / sbc2 + eps);
  }
}
