import type { F32 } from '../../arrays';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import * as reference from './reference';
import { logSoftmax, logSoftmaxBackward, softmax, softmaxBackward } from './webgpu';

type Rows = (x: F32, rows: number, n: number, out: F32) => void;
type RowsBackward = (y: F32, gy: F32, rows: number, n: number, gx: F32) => void;

/** Row softmax over the last axis of x viewed as [rows, n]. */
export const softmaxKernel = kernelOp<Rows>('softmax');
/** gx = y·(gy − Σ gy·y) per row. */
export const softmaxBackwardKernel = kernelOp<RowsBackward>('softmaxBackward');
/** Row log-softmax. */
export const logSoftmaxKernel = kernelOp<Rows>('logSoftmax');
/** gx = gy − exp(y)·Σ gy per row. */
export const logSoftmaxBackwardKernel = kernelOp<RowsBackward>('logSoftmaxBackward');

defineKernel(softmaxKernel, { device: 'cpu', impl: 'reference', run: reference.softmax });
defineKernel(softmaxBackwardKernel, { device: 'cpu', impl: 'reference', run: reference.softmaxBackward });
defineKernel(logSoftmaxKernel, { device: 'cpu', impl: 'reference', run: reference.logSoftmax });
defineKernel(logSoftmaxBackwardKernel, { device: 'cpu', impl: 'reference', run: reference.logSoftmaxBackward });
onWebgpu((gpu) => {
  defineKernel(softmaxKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(softmax) });
  defineKernel(softmaxBackwardKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(softmaxBackward) });
  defineKernel(logSoftmaxKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(logSoftmax) });
  defineKernel(logSoftmaxBackwardKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(logSoftmaxBackward) });
});
