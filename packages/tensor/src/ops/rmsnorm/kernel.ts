import type { F32 } from '../../arrays';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import * as reference from './reference';
import { simdRmsnorm, simdRmsnormBackward, simdRmsnormAvailable } from './cpu';
import { rmsnorm, rmsnormBackward } from './webgpu';

/** out = w·x / sqrt(mean(x²) + eps) per row of length n; rstd[row] = 1/sqrt(mean(x²) + eps). */
export const rmsnormKernel = kernelOp<(x: F32, w: F32, rows: number, n: number, eps: number, out: F32, rstd: F32) => void>('rmsnorm');
/** gx and gw overwritten (gw summed over rows). */
export const rmsnormBackwardKernel = kernelOp<(x: F32, w: F32, rstd: F32, gy: F32, rows: number, n: number, gx: F32, gw: F32) => void>('rmsnormBackward');

defineKernel(rmsnormKernel, { device: 'cpu', impl: 'reference', run: reference.rmsnorm });
defineKernel(rmsnormKernel, { device: 'cpu', impl: 'wasm', available: simdRmsnormAvailable, run: simdRmsnorm });
defineKernel(rmsnormBackwardKernel, { device: 'cpu', impl: 'reference', run: reference.rmsnormBackward });
defineKernel(rmsnormBackwardKernel, { device: 'cpu', impl: 'wasm', available: simdRmsnormAvailable, run: simdRmsnormBackward });
onWebgpu((gpu) => {
  defineKernel(rmsnormKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(rmsnorm) });
  defineKernel(rmsnormBackwardKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(rmsnormBackward) });
});
