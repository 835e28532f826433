import { defineKernel, removeKernels, selectKernels, type Device } from './registry';
import { createGpujsKernels, type GpujsKernelSet, type GpujsMode } from './kernels/gpujs/index';
import { TENSOR_KERNELS, type KernelName } from './kernels/types';

/** Register every op of a gpu.js kernel set as implementation `impl` of `device`. */
function register(device: Device, impl: string, set: GpujsKernelSet, rank?: number): void {
  for (const name of Object.keys(TENSOR_KERNELS) as KernelName[]) {
    defineKernel(TENSOR_KERNELS[name] as never, { device, impl, ...(rank === undefined ? {} : { rank }), run: set[name] as never });
  }
}

/**
 * Build gpu.js kernels for `mode` (one that runs on the CPU or through GL: `webasm`, `cpu`,
 * `headlessgl`, …), register them as implementation 'gpujs' of the cpu device (never chosen by
 * default) and, with `select`, run every op on them (`selectKernels('gpujs')`). Throws
 * `GpujsBackendError` if gpu.js would silently run another mode (for example 'headlessgl' where
 * headless-gl is not installed). Use `probeGpujsModes()` to see what works. Returns the mode.
 */
export function enableGpujs(mode: GpujsMode, select = true): string {
  const kernels = createGpujsKernels(mode);
  removeKernels('cpu', 'gpujs');
  register('cpu', 'gpujs', kernels, -1);
  if (select) selectKernels('gpujs');
  return kernels.mode;
}
