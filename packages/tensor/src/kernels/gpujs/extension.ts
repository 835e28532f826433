// The gpu.js kernel-op helpers a package outside @apertus/tensor writes a webgpu kernel with
// (`@apertus/tensor/kernels` exports them as `gpujs`; see CONTRIBUTING.md). The host tables and
// the runtime that drives the ops stay inside the package.
export { call, checkIndexable, expectLength, into, kept, MAX_COORD, type ArgType, type DeviceArray, type KernelCall, type KernelOp, type KernelSource, type KernelSpec } from './ops';
