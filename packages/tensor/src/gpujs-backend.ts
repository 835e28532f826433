import { registerBackend, setBackend, type BackendInfo } from './backend';
import { adapterName, createGpujsKernels, createWebgpuSyncKernels, type GpujsMode } from './kernels/gpujs/index';

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

/**
 * Register the gpu.js `webgpu` kernels as backend 'webgpu' and (by default) run every op it
 * implements on them: all of the `KernelSet` (elementwise, reductions, softmax, RMSNorm, RoPE,
 * embedding, attention, cross-entropy, forward and backward). The tensor API stays synchronous:
 * a worker thread runs the kernels on the GPU while the calling thread waits. GEMM (`matmul`,
 * `linear`, `linearCrossEntropy`), custom ops (`defineOp`, e.g. xIELU), views and copies still
 * run on the CPU. Throws `WebgpuUnavailableError` naming what is missing (Vulkan loader or driver,
 * adapter, the `webgpu` package).
 */
export async function enableWebgpu(select = true): Promise<BackendInfo> {
  const kernels = await createWebgpuSyncKernels();
  const info = { name: 'webgpu', device: `gpu.js webgpu (${adapterName(kernels.adapter)})` };
  registerBackend(info.name, info.device, kernels);
  if (select) setBackend('webgpu');
  return info;
}
