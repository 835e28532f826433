/**
 * @apertus/tensor/gpujs — the gpu.js kernels of @apertus/tensor in gpu.js's synchronous modes
 * (`webasm`, `cpu`, `headlessgl`, `webgl2`, `webgl`), registered as implementation 'gpujs' of the
 * cpu device. The webgpu device runs WGSL kernels (`useDevice('webgpu')`), not gpu.js.
 *
 * A separate entry point so that the main entry never loads gpu.js, an optional peer dependency
 * installed only by those who import this.
 * @packageDocumentation
 */
export { createGpujsKernels, probeGpujsModes, GpujsBackendError, type GpujsMode, type GpujsKernelSet, type GpujsProbe } from './kernels/gpujs/index';
export { enableGpujs } from './gpujs-backend';
