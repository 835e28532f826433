/**
 * @apertus/tensor/kernels — the extension API of the compute layer: declare a kernel op
 * (`kernelOp`), register implementations of it for a device (`defineKernel`), choose among them
 * (`selectKernels`, `kernelInfo`, `listKernels`), write WebAssembly SIMD kernels on the cpu device
 * memory (`wasm`) and WGSL kernels for the webgpu device (`wgsl`, `onWebgpu`), and gpu.js kernel
 * ops (`gpujs`) for gpu.js's CPU and GL modes. Nothing here loads gpu.js. See the package's CONTRIBUTING.md for an op added on every device.
 * @packageDocumentation
 */
export {
  DEVICES, defineKernel, implementationOf, kernelInfo, kernelOp, listKernels, resetKernels, selectKernels,
  type Device, type KernelDef, type KernelFn, type KernelListing, type KernelOp,
} from './registry';
export * as wasm from './wasm/index';
export * as gpujs from './kernels/gpujs/extension';
export { onWebgpu, type WebgpuKernelApi } from './device-hooks';
export * as wgsl from './webgpu/wgsl';
export type { Binding } from './webgpu/runtime';
export { kernelF32 } from './ops/util';
