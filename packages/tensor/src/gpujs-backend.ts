import { webgpuStarted, type GpujsInput } from './device-hooks';
import { defineKernel, removeKernels, selectKernels, setKernelDevice, type Device } from './registry';
import { installResidency } from './residency';
import { adapterName, createGpujsKernels, createWebgpuSyncKernels, type GpujsKernelSet, type GpujsMode, type WebgpuSyncKernelSet, type WebgpuTransfers } from './kernels/gpujs/index';
import { inp } from './kernels/gpujs/runtime';
import { TENSOR_KERNELS, type KernelName } from './kernels/types';

/** The set `enableWebgpu` started (one per process: it holds the tensors that live on the GPU). */
let webgpuSet: WebgpuSyncKernelSet | null = null;

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

/**
 * Start the gpu.js `webgpu` kernels (a worker thread owns the GPU device; the calling thread waits
 * for each kernel call, so the tensor API stays synchronous) and register them as implementation
 * 'gpujs' of the webgpu device: all of tensor's ops, and the kernels packages register through
 * `onWebgpu`. Installs the device's residency (op outputs stay on the GPU until the host reads
 * them) and, with `select` (the default), makes webgpu the current device: every op runs there
 * (`useDevice('webgpu')` calls this; a browser worker whose bundle holds this entry calls it
 * directly). Returns the adapter's name. Throws `WebgpuUnavailableError` naming what is missing (Vulkan loader or driver, adapter,
 * the `webgpu` package). A second call returns the set started first: tensors still on its GPU
 * stay readable, where a new set would leave their host memory stale.
 */
export async function enableWebgpu(select = true): Promise<string> {
  if (webgpuSet === null) {
    const kernels = await createWebgpuSyncKernels({ resident: true });
    webgpuSet = kernels;
    installResidency(kernels.residency);
    register('webgpu', 'gpujs', kernels);
    webgpuStarted({ run: (op) => kernels.runOp(op), inp: (data, dims) => inp(data, dims) as unknown as GpujsInput });
  }
  const adapter = adapterName(webgpuSet.adapter);
  if (select) setKernelDevice('webgpu', adapter);
  return adapter;
}

/**
 * The round trips of the webgpu device so far: kernel calls and the bytes they uploaded and read
 * back. Zeros before `enableWebgpu`.
 */
export function webgpuTransfers(): WebgpuTransfers {
  return webgpuSet?.transfers() ?? { calls: 0, uploads: 0, uploadBytes: 0, readbacks: 0, readbackBytes: 0 };
}

/** The kernels the webgpu device has built so far, by `name|key`, each with the mode it ran in (`webgpu`); empty before `enableWebgpu`. */
export function webgpuBuiltKernels(): Record<string, string> {
  return webgpuSet?.builtKernels() ?? {};
}
