import type { F32, I32 } from '../../arrays';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import type { SampleParams } from './args';
import * as reference from './reference';
import { sampleWgsl } from './webgpu';

export type { SampleParams } from './args';

/** out[r] = the token chosen from row r of logits [rows, V] with params[r] (see `SampleParams`). */
export const sampleKernel = kernelOp<(logits: F32, rows: number, V: number, params: readonly SampleParams[], out: I32) => void>('sample');

defineKernel(sampleKernel, { device: 'cpu', impl: 'reference', run: reference.sampleRows });
onWebgpu((gpu) => {
  defineKernel(sampleKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(sampleWgsl) });
});
