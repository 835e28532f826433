// Non-finite values named: the first parameter (or gradient) holding a NaN or ±∞, so a diverged
// step or a damaged checkpoint is reported with its tensor instead of training on silently.

import { deviceStorage, type Tensor } from '@apertus/tensor';
import { NonFiniteWeightError } from './errors';

/** The first non-finite value of `x`, or null when every value is finite. */
function firstNonFinite(x: Float32Array): number | null {
  for (let i = 0; i < x.length; i++) if (!Number.isFinite(x[i]!)) return x[i]!;
  return null;
}

/** Name of the first parameter whose gradient holds a NaN or ±∞ (null when there is none). */
export function nonFiniteGradient(params: Iterable<readonly [string, Tensor]>): string | null {
  for (const [name, p] of params) if (p.grad !== null && firstNonFinite(p.grad.toFloat32()) !== null) return name;
  return null;
}

/**
 * Throw {@link NonFiniteWeightError} naming the first parameter that holds a NaN or ±∞. Parameters
 * that live on a device (backend webgpu) are read back only with `readDevice` (a checkpoint reads
 * them anyway): after each training step they stay there, as a non-finite weight makes the next
 * step's loss non-finite, and the next checkpoint names it.
 * @param step - the step reported (the one just applied, or the checkpoint's)
 * @param readDevice - also check (read back) parameters that live on a device
 */
export function assertFiniteParameters(params: Iterable<readonly [string, Tensor]>, step: number, readDevice = true): void {
  for (const [name, p] of params) {
    if (!readDevice && deviceStorage(p) !== null) continue;
    const bad = firstNonFinite(p.toFloat32());
    if (bad !== null) throw new NonFiniteWeightError(step, name, bad);
  }
}
