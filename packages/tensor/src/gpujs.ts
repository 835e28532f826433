/**
 * @apertus/tensor/gpujs — the gpu.js kernels of @apertus/tensor: the synchronous gpu.js modes
 * (`webasm`, `cpu`, `headlessgl`, `webgl2`, `webgl`) and the asynchronous `webgpu` mode.
 *
 * A separate entry point so that the main entry never loads gpu.js: `gpu.js` (and, for WebGPU
 * in Node, `webgpu`) are optional peer dependencies, installed only by those who import this.
 * @packageDocumentation
 */
export {
  createGpujsKernels, createWebgpuKernels, createWebgpuSyncKernels, probeGpujsModes, GpujsBackendError, WebgpuUnavailableError, SWIFTSHADER_ICD, adapterName,
  setGpujsScriptUrl, type GpujsMode, type GpujsKernelSet, type GpujsProbe, type WebgpuKernelSet, type WebgpuSyncKernelSet, type WebgpuTransfers, type WebgpuAdapterInfo, type WebgpuMissing,
} from './kernels/gpujs/index';
export { enableGpujs, enableWebgpu, webgpuTransfers, runWebgpuOp, webgpuBuiltKernels, type WebgpuKernelApi } from './gpujs-backend';
/**
 * Defining a gpu.js kernel op outside this package (run it with `runWebgpuOp`, or a set's
 * `runOp`): a generator that `yield`s `call(name, key, spec, args)` for each kernel launch
 * (`yield* into(out, call(...))` to copy the output into `out`, `yield* kept(call(...))` to pass
 * it to a later call of the same op without reading it back) and receives each output. Kernel
 * sources are strings; sizes are Integer `constants`; `inp(flat, [x, y, z])` binds a row-major
 * buffer read as `a[z][y][x]`; a `HostTable` is data the webgpu worker keeps on the device by key.
 */
export {
  call, into, kept, inp, HostTable, type KernelOp, type KernelCall, type KernelSpec, type KernelSource, type ArgType, type DeviceArray,
} from './kernels/gpujs/runtime';
