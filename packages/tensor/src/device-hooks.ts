/**
 * How packages bring their own kernels to the webgpu device: `onWebgpu(register)` runs `register`
 * when the device starts (or at once, if it has started), with what gpu.js kernel ops need from
 * the device's runtime. `register` calls `defineKernel(op, { device: 'webgpu', ... })`. Kept apart
 * from the optional gpu.js entry so that registering loads nothing.
 */
import type { DeviceArray, KernelOp } from './kernels/gpujs/ops';

/** A gpu.js `Input` (a flat array read as `a[z][y][x]`), as an opaque kernel argument. */
export type GpujsInput = { readonly __gpujsInput: unique symbol };

/** What the webgpu device hands to the kernels of other packages when it starts. */
export interface WebgpuKernelApi {
  /** Run a gpu.js kernel op (a generator of kernel calls, see `call`) on the device, synchronously. */
  run(op: KernelOp): void;
  /** A row-major array (or a kept device output) as a gpu.js input read as `a[z][y][x]`, `dims = [x, y, z]`. */
  inp(data: Float32Array | Int32Array | DeviceArray, dims: readonly number[]): GpujsInput;
}

const hooks: ((api: WebgpuKernelApi) => void)[] = [];
let started: WebgpuKernelApi | null = null;

/** Run `register` with the webgpu device's kernel API when the device starts (now, if it has). */
export function onWebgpu(register: (api: WebgpuKernelApi) => void): void {
  hooks.push(register);
  if (started !== null) register(started);
}

/** The webgpu device started with `api`: run every hook (internal: called by the device's runtime). */
export function webgpuStarted(api: WebgpuKernelApi): void {
  started = api;
  for (const h of hooks) h(api);
}
