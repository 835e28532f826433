import type { F32 } from '../../arrays';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import type { BinaryOp, UnaryOp } from './args';
import * as reference from './reference';
import { simdBinary, simdBinaryAvailable } from './cpu';
import { binary, scaleBy, unary, unaryBackward } from './webgpu';

export type { BinaryOp, UnaryOp } from './args';

/** out[i] = f(x[i]). */
export const unaryKernel = kernelOp<(op: UnaryOp, x: F32, out: F32) => void>('unary');
/** gx[i] = gy[i]·f'(x[i]); y = f(x) is passed so kernels can reuse it (exp, sigmoid…). */
export const unaryBackwardKernel = kernelOp<(op: UnaryOp, x: F32, y: F32, gy: F32, gx: F32) => void>('unaryBackward');
/**
 * out = a (op) b with broadcasting. `outShape` has rank r; `aStrides`/`bStrides` are the operands'
 * element strides for each of the r output axes (0 on a broadcast axis).
 */
export const binaryKernel = kernelOp<(op: BinaryOp, a: F32, aStrides: readonly number[], b: F32, bStrides: readonly number[], outShape: readonly number[], out: F32) => void>('binary');
/** out[i] = x[i]·s; `out` may be `x` (gradient clipping in place, loss-gradient scaling). */
export const scaleByKernel = kernelOp<(x: F32, s: number, out: F32) => void>('scaleBy');

defineKernel(unaryKernel, { device: 'cpu', impl: 'reference', run: reference.unary });
defineKernel(unaryBackwardKernel, { device: 'cpu', impl: 'reference', run: reference.unaryBackward });
defineKernel(binaryKernel, { device: 'cpu', impl: 'reference', run: reference.binary });
defineKernel(binaryKernel, { device: 'cpu', impl: 'wasm', available: simdBinaryAvailable, run: simdBinary });
defineKernel(scaleByKernel, { device: 'cpu', impl: 'reference', run: reference.scaleBy });
onWebgpu((gpu) => {
  defineKernel(unaryKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(unary) });
  defineKernel(unaryBackwardKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(unaryBackward) });
  defineKernel(binaryKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(binary) });
  defineKernel(scaleByKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(scaleBy) });
});
