/**
 * @apertus/tensor/gpujs — the gpu.js kernels of @apertus/tensor: the synchronous gpu.js modes
 * (`webasm`, `cpu`, `headlessgl`, `webgl2`, `webgl`) and the asynchronous `webgpu` mode.
 *
 * A separate entry point so that the main entry never loads gpu.js: `gpu.js` (and, for WebGPU
 * in Node, `webgpu`) are optional peer dependencies, installed only by those who import this
 * (`useDevice('webgpu')` imports it). Packages bring their own gpu.js kernels to the webgpu device
 * through `onWebgpu` of `@apertus/tensor/kernels`, not through this entry.
 * @packageDocumentation
 */
export {
  createGpujsKernels, createWebgpuKernels, createWebgpuSyncKernels, probeGpujsModes, GpujsBackendError, WebgpuUnavailableError, SWIFTSHADER_ICD, adapterName,
  setGpujsScriptUrl, type GpujsMode, type GpujsKernelSet, type GpujsProbe, type WebgpuKernelSet, type WebgpuSyncKernelSet, type WebgpuTransfers, type WebgpuAdapterInfo, type WebgpuMissing,
} from './kernels/gpujs/index';
export { enableGpujs, enableWebgpu, webgpuTransfers, webgpuBuiltKernels } from './gpujs-backend';
