/**
 * Tensor storage that a device keeps (`webgpu`: GPU buffers), for code that runs kernels on raw
 * arrays (the optimizers of `@apertus/ademamix`): `deviceStorage` hands out a tensor's storage
 * without reading it back, `readBack` makes the host copy of such an array current.
 */
import { currentResidency, hostAccess, hostRead } from '../residency';
import { Tensor } from '../tensor';
import { kernelF32 } from './util';

/**
 * The float32 storage of `t` without a readback, when `t` is a contiguous f32 tensor and the
 * current device keeps tensor storage (`webgpu`); null otherwise (the host copy is current: use
 * `t.data`).
 */
export function deviceStorage(t: unknown): Float32Array | null {
  if (!(t instanceof Tensor) || t.dtype !== 'f32' || !t.isContiguous() || currentResidency() === null) return null;
  return kernelF32(t, 'deviceStorage');
}

/**
 * Make the host copy of `a` current (the explicit readback of state the device holds; a no-op on
 * the host). The device copy is dropped, as the host may now write `a`; with `readOnly` (the
 * host only reads it: a snapshot, a log line) it stays, and the next kernel uses it without an
 * upload.
 */
export function readBack(a: ArrayBufferView, options: { readonly readOnly?: boolean } = {}): void {
  if (options.readOnly) hostRead(a);
  else hostAccess(a);
}
