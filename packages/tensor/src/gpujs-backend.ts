import { registerBackend, setBackend, type BackendInfo } from './backend';
import { noteWebgpuSelected } from './device';
import { BackendError } from './errors';
import { installResidency } from './residency';
import { adapterName, createGpujsKernels, createWebgpuSyncKernels, type GpujsMode, type WebgpuSyncKernelSet, type WebgpuTransfers } from './kernels/gpujs/index';
import { call, HostTable, inp, into, kept, type KernelOp } from './kernels/gpujs/runtime';

/** The set `enableWebgpu` started (one per process: it holds the tensors that live on the GPU). */
let webgpuSet: WebgpuSyncKernelSet | null = null;

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
 * implements on them — all of the `KernelSet` (elementwise, reductions, softmax, RMSNorm, RoPE,
 * embedding, attention, cross-entropy, forward and backward, GEMM, the LM-head loss, xIELU,
 * copies of non-contiguous views, and the optimizer updates) — which makes `webgpu` the current
 * device (`currentDevice()`). The tensor API stays synchronous: a
 * worker thread runs the kernels on the GPU while the calling thread waits. Custom ops
 * (`defineOp`) and dtype conversions still run on the CPU. Returns the backend and the
 * adapter's name. Throws `WebgpuUnavailableError` naming what is missing (Vulkan loader or driver,
 * adapter, the `webgpu` package). A second call (e.g. `useDevice('webgpu')` after `useDevice('cpu')`)
 * selects the set started first again: tensors still on its GPU stay readable, where a new set
 * would leave their host memory stale.
 */
export async function enableWebgpu(select = true): Promise<BackendInfo & { readonly adapter: string }> {
  const kernels = webgpuSet ?? await createWebgpuSyncKernels({ resident: true });
  webgpuSet = kernels;
  installResidency(kernels.residency);
  const adapter = adapterName(kernels.adapter);
  const info = { name: 'webgpu', device: `gpu.js webgpu (${adapter})` };
  registerBackend(info.name, info.device, kernels);
  if (select) {
    setBackend('webgpu');
    noteWebgpuSelected(adapter, WEBGPU_KERNEL_API);
  }
  return { ...info, adapter };
}

/**
 * The round trips of backend `webgpu` so far: kernel calls and the bytes they uploaded and read
 * back (tensors live in JavaScript memory, so every call is one). Zeros before `enableWebgpu`.
 */
export function webgpuTransfers(): WebgpuTransfers {
  return webgpuSet?.transfers() ?? { calls: 0, uploads: 0, uploadBytes: 0, readbacks: 0, readbackBytes: 0 };
}

/**
 * Run a kernel op defined outside `@apertus/tensor` — a generator of kernel calls written with
 * `call`, `into`, `kept` and `inp` (see `KernelOp`) — on backend `webgpu`, synchronously, in the
 * worker that runs every other op: the same kernel cache, the same check that each kernel really
 * ran in `webgpu` (never a silent fallback), the same transfer counts (`webgpuTransfers`). A
 * `HostTable` argument stays on the device under its key while its inputs are unchanged (the
 * worker keeps up to 1024 tables and 1 GiB, least recently used first out). Outputs the op
 * copies `into` an array that they fill may stay on the GPU (that array must then be tensor
 * storage, read through the tensor API); an output taken from a plain `call` comes back to the
 * host. Throws a `BackendError` before `enableWebgpu`.
 */
export function runWebgpuOp(op: KernelOp): void {
  if (webgpuSet === null) throw new BackendError("runWebgpuOp: backend webgpu is not started (call useDevice('webgpu') or enableWebgpu() first)");
  webgpuSet.runOp(op);
}

/** The kernels backend `webgpu` has built so far, by `name|key`, each with the mode it ran in (`webgpu`); empty before `enableWebgpu`. */
export function webgpuBuiltKernels(): Record<string, string> {
  return webgpuSet?.builtKernels() ?? {};
}

/**
 * What packages need to run their own gpu.js kernel ops on backend `webgpu`; the main entry's
 * `webgpuKernelApi()` returns it once `enableWebgpu` has selected the backend.
 */
export const WEBGPU_KERNEL_API = { runWebgpuOp, call, into, kept, inp, HostTable } as const;

/** The type of `WEBGPU_KERNEL_API` (what the main entry's `webgpuKernelApi()` returns on device webgpu). */
export type WebgpuKernelApi = typeof WEBGPU_KERNEL_API;
