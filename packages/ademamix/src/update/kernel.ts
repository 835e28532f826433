/**
 * The optimizer updates as kernel ops of the @apertus/tensor registry: one AdEMAMix and one AdamW
 * update of one parameter, every array updated in place, on the current device. The
 * step-dependent scalars (α and β3 from their schedulers, the bias corrections) are computed by
 * the optimizer on the host in float64; the kernels do the per-element math. Dtype key: 'f64' for
 * Float64Array parameters (float64 math), else 'f32'.
 */
import { kernelOp } from '@apertus/tensor/kernels';
import { ShapeError } from '@apertus/tensor';
import type { Arithmetic } from '../arithmetic';
import type { FloatArray } from '../types';

/**
 * One AdEMAMix update (training-recipe.md §1.1):
 *   m1 ← β1·m1 + (1−β1)·g;  m2 ← β3·m2 + (1−β3)·g;  nu ← β2·nu + (1−β2)·g²
 *   θ ← θ − lr·((m1/bc1 + α·m2) / (sqrt(nu)/sqrt(bc2) + eps) + λ·θ)
 */
export interface AdemamixUpdateArgs {
  /** Parameter θ. */
  param: FloatArray;
  /** Gradient g. */
  grad: FloatArray;
  /** Fast EMA m1, or null when β1 = 0 (m1 is g itself, no buffer). */
  m1: FloatArray | null;
  /** Slow EMA m2 (no bias correction). */
  m2: FloatArray;
  /** Second moment nu. */
  nu: FloatArray;
  beta1: number;
  beta2: number;
  /** β3 at this step (from the β3 scheduler, T_beta3). */
  beta3: number;
  /** α at this step (from the α scheduler, T_alpha). */
  alpha: number;
  /** Bias corrections 1 − β1^t and 1 − β2^t. */
  bc1: number;
  bc2: number;
  eps: number;
  /** Decoupled weight decay λ. */
  weightDecay: number;
  lr: number;
  /** How float32 updates round (see `Arithmetic`); float64 parameters are always torch-exact. */
  arithmetic: Arithmetic;
}

/**
 * One AdamW update:
 *   m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;  θ ← θ·(1 − lr·λ) − (lr/bc1)·m / (sqrt(v)/sqrt(bc2) + eps)
 */
export interface AdamwUpdateArgs {
  param: FloatArray;
  grad: FloatArray;
  /** First moment m. */
  m: FloatArray;
  /** Second moment v. */
  v: FloatArray;
  beta1: number;
  beta2: number;
  /** Bias corrections 1 − β1^t and 1 − β2^t. */
  bc1: number;
  bc2: number;
  eps: number;
  weightDecay: number;
  lr: number;
  /** How float32 updates round (see `Arithmetic`). */
  arithmetic: Arithmetic;
}

const dtypeOf = (a: { param: FloatArray }): string => (a.param instanceof Float64Array ? 'f64' : 'f32');

/** The AdEMAMix update of one parameter (see `AdemamixUpdateArgs`). */
export const ademamixUpdateKernel = kernelOp<(args: AdemamixUpdateArgs) => void>('ademamixUpdate', dtypeOf);
/** The AdamW update of one parameter (see `AdamwUpdateArgs`). */
export const adamwUpdateKernel = kernelOp<(args: AdamwUpdateArgs) => void>('adamwUpdate', dtypeOf);

/** Throw unless every state array has the parameter's length. */
export function checkUpdateLengths(op: string, param: FloatArray, arrays: Record<string, FloatArray | null>): void {
  for (const [name, a] of Object.entries(arrays)) {
    if (a !== null && a.length !== param.length) throw new ShapeError(`${op}: ${name} has ${a.length} elements, param has ${param.length}`);
  }
}
