/**
 * Optimizer updates, the reference kernels: each element's update in double precision, rounded to
 * float32 only where it is stored (what `@apertus/ademamix` calls `arithmetic: 'fast'`). The
 * optimizers' own float32 paths on the cpu device (torch-exact, SIMD) stay in that package; these
 * are what the device kernels are tested against and what the registry runs when no device
 * backend is selected.
 */
import { ShapeError } from '../../errors';
import type { AdamwUpdateArgs, AdemamixUpdateArgs, F32 } from '../types';

/** Throw unless every state array has the parameter's length. */
export function checkUpdateLengths(op: string, param: F32, arrays: Record<string, F32 | null>): void {
  for (const [name, a] of Object.entries(arrays)) {
    if (a !== null && a.length !== param.length) throw new ShapeError(`${op}: ${name} has ${a.length} elements, param has ${param.length}`);
  }
}

/** AdEMAMix, training-recipe.md §1.1 (see `AdemamixUpdateArgs`). */
export function ademamixUpdate(a: AdemamixUpdateArgs): void {
  const { param, grad, m1, m2, nu, beta1, beta2, beta3, alpha, bc1, eps, weightDecay, lr } = a;
  checkUpdateLengths('ademamixUpdate', param, { grad, m1, m2, nu });
  const sbc2 = Math.sqrt(a.bc2);
  for (let i = 0; i < param.length; i++) {
    const g = grad[i]!;
    let fast = g;
    if (m1 !== null) { m1[i] = m1[i]! * beta1 + g * (1 - beta1); fast = m1[i]!; }
    m2[i] = m2[i]! * beta3 + g * (1 - beta3);
    nu[i] = nu[i]! * beta2 + (1 - beta2) * g * g;
    const p = param[i]!;
    const u = (fast / bc1 + alpha * m2[i]!) / (Math.sqrt(nu[i]!) / sbc2 + eps) + p * weightDecay;
    param[i] = p - lr * u;
  }
}

/** AdamW (see `AdamwUpdateArgs`). */
export function adamwUpdate(a: AdamwUpdateArgs): void {
  const { param, grad, m, v, beta1, beta2, bc1, eps, weightDecay, lr } = a;
  checkUpdateLengths('adamwUpdate', param, { grad, m, v });
  const sbc2 = Math.sqrt(a.bc2);
  const decay = 1 - lr * weightDecay;
  const nstep = -lr / bc1;
  for (let i = 0; i < param.length; i++) {
    const g = grad[i]!;
    m[i] = m[i]! * beta1 + g * (1 - beta1);
    v[i] = v[i]! * beta2 + (1 - beta2) * g * g;
    param[i] = param[i]! * decay + (nstep * m[i]!) / (Math.sqrt(v[i]!) / sbc2 + eps);
  }
}

/** ShapeError unless `acc` (when given) and `out` hold one value each. */
export function checkSumSquares(acc: F32 | null, out: F32): void {
  if (out.length !== 1 || (acc !== null && acc.length !== 1)) throw new ShapeError('sumSquares: acc and out hold one value each');
}

/** ShapeError unless `out` has `x`'s length. */
export function checkScaleBy(x: F32, out: F32): void {
  if (out.length !== x.length) throw new ShapeError(`scaleBy: out has ${out.length} elements, x has ${x.length}`);
}

/** out[0] = acc[0] + Σ x[i]², summed in double. */
export function sumSquares(x: F32, acc: F32 | null, out: F32): void {
  checkSumSquares(acc, out);
  let s = acc === null ? 0 : acc[0]!;
  for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
  out[0] = s;
}

/** out[i] = x[i]·s (the product in double, rounded once); `out` may be `x`. */
export function scaleBy(x: F32, s: number, out: F32): void {
  checkScaleBy(x, out);
  for (let i = 0; i < x.length; i++) out[i] = x[i]! * s;
}
