import { registerBackend, setBackend, type BackendInfo } from './backend';
import { createGpujsKernels, type GpujsMode } from './kernels/gpujs/index';

/**
 * Build gpu.js kernels for `mode`, register them as backend 'gpujs', and (by default) run every
 * op on them. Throws `GpujsBackendError` if gpu.js would silently run another mode (for example
 * 'headlessgl' where headless-gl is not installed). Use `probeGpujsModes()` to see what works.
 */
export function enableGpujs(mode: GpujsMode, select = true): BackendInfo {
  const kernels = createGpujsKernels(mode);
  const info = { name: 'gpujs', device: `gpu.js ${kernels.mode}` };
  registerBackend(info.name, info.device, kernels);
  if (select) setBackend('gpujs');
  return info;
}
