/**
 * Optimizer updates through the backend registry, for `@apertus/ademamix`: where the device in use
 * keeps tensor storage (backend `webgpu`), parameters, gradients and optimizer state are updated
 * there and never read back; `deviceStorage` tells an optimizer which tensors those are.
 */
import { backendOf, kernel } from '../backend';
import type { AdamwUpdateArgs, AdemamixUpdateArgs } from '../kernels/types';
import { currentResidency, hostAccess } from '../residency';
import { Tensor } from '../tensor';
import { kernelF32 } from './util';

/**
 * The float32 storage of `t` as the optimizer kernels take it, without a readback, when `t` is a
 * contiguous f32 tensor and the optimizer ops run on a device that keeps tensor storage (backend
 * `webgpu`); null otherwise (the tensor is updated on the host, through its `data`).
 */
export function deviceStorage(t: unknown): Float32Array | null {
  if (!(t instanceof Tensor) || t.dtype !== 'f32' || !t.isContiguous()) return null;
  const r = currentResidency();
  if (r === null || backendOf('ademamixUpdate').name !== r.backend) return null;
  return kernelF32(t, 'deviceStorage');
}

/** Make the host copy of `a` current (the explicit readback of state the device holds; a no-op on the host). */
export function readBack(a: ArrayBufferView): void {
  hostAccess(a);
}

/** One AdEMAMix update of one parameter, in place, on the backend selected for `ademamixUpdate`. */
export function ademamixUpdate(args: AdemamixUpdateArgs): void {
  kernel('ademamixUpdate')(args);
}

/** One AdamW update of one parameter, in place, on the backend selected for `adamwUpdate`. */
export function adamwUpdate(args: AdamwUpdateArgs): void {
  kernel('adamwUpdate')(args);
}

/** out[0] = acc[0] + Σ x[i]² (acc null: 0) on the backend selected for `sumSquares`; `out` may be `acc`. */
export function sumSquares(x: Float32Array, acc: Float32Array | null, out: Float32Array): void {
  kernel('sumSquares')(x, acc, out);
}

/** out[i] = x[i]·s on the backend selected for `scaleBy`; in place by default (`out` = `x`). */
export function scaleBy(x: Float32Array, s: number, out: Float32Array = x): void {
  kernel('scaleBy')(x, s, out);
}

/**
 * x[i] ← x[i]·s in place.
 * @deprecated Use {@link scaleBy}, the name of its kernel (`scaleBy(x, s)` scales in place); this alias will be removed in a later minor version.
 */
export const scaleInPlace = (x: Float32Array, s: number): void => scaleBy(x, s);
