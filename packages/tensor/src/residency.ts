/**
 * Device copies of tensor storage. A device whose kernels leave their outputs there (`webgpu`:
 * GPU buffers owned by its worker) installs a `Residency`; while one is
 * installed, a storage's current values may live only on the device, and
 * - every host access (`Tensor.storage`, `data`, `ints`, `item`, `toArray`...) first calls
 *   `hostAccess`, which reads the values back (counted by the device) and hands the storage to
 *   the host: the device copy is dropped, as the host may now write it;
 * - the kernels of every other device get host copies the same way (`registry.ts`);
 * - a recycled block of the cpu device memory (`Tensor.dispose`, `tidy`, garbage collection)
 *   frees the device copies of what it held.
 * Ops pass the storage itself to kernels (`kernelF32` in `ops/util.ts`), never a host copy.
 */

import type { Device } from './device-name';

/** What a device provides to keep tensor storage on it. */
export interface Residency {
  /** The device whose kernels read and write the device copies. */
  readonly device: Device;
  /** Make the host copy of the storage under `a` (a storage or a view of one) current and drop its device copy. */
  toHost(a: ArrayBufferView): void;
  /** Make the host copy of `a` current for reading only: the device copy stays (item(), toArray(), toFloat32()). */
  hostRead(a: ArrayBufferView): void;
  /** The cpu device memory's bytes [addr, addr + bytes) were recycled: free their device copies. */
  recycled(addr: number, bytes: number): void;
}

let active: Residency | null = null;

/** Install (or with null, remove) the residency of a device. */
export function installResidency(r: Residency | null): void {
  active = r;
}

/** The installed residency, if any. */
export function currentResidency(): Residency | null {
  return active;
}

/** Before the host reads or writes `a`: bring its values back from the device, if they are there. */
export function hostAccess(a: ArrayBufferView): void {
  if (active !== null) active.toHost(a);
}

/** Before the host only reads `a` (no write follows): bring its values back, keeping the device copy. */
export function hostRead(a: ArrayBufferView): void {
  if (active !== null) active.hostRead(a);
}

/** The cpu device memory's bytes [addr, addr + bytes) were recycled: free their device copies, if any. */
export function releaseResident(addr: number, bytes: number): void {
  if (active !== null) active.recycled(addr, bytes);
}
