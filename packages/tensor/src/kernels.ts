/**
 * @apertus/tensor/kernels — the extension API of the compute layer: declare a kernel op
 * (`kernelOp`), register implementations of it for a device (`defineKernel`), choose among them
 * (`selectKernels`, `kernelInfo`, `listKernels`), write WebAssembly SIMD kernels on the cpu device
 * memory (`wasm`) and gpu.js kernels for the webgpu device (`gpujs`, `onWebgpu`). Nothing here
 * loads gpu.js. See the package's CONTRIBUTING.md for an op added on every device.
 * @packageDocumentation
 */
export {
  DEVICES, defineKernel, kernelInfo, kernelOp, listKernels, resetKernels, selectKernels,
  type Device, type KernelDef, type KernelFn, type KernelListing, type KernelOp,
} from './registry';
export * as wasm from './wasm/index';
export * as gpujs from './kernels/gpujs/ops';
export { onWebgpu, type GpujsInput, type WebgpuKernelApi } from './device-hooks';
export { kernelF32 } from './ops/util';
