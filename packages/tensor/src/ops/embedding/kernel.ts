import type { F32, I32 } from '../../arrays';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import * as reference from './reference';
import { embedding, embeddingBackward } from './webgpu';

/** out[t, :] = table[ids[t], :] with table [V, H]. */
export const embeddingKernel = kernelOp<(ids: I32, table: F32, H: number, out: F32) => void>('embedding');
/** gtable[v, :] = Σ gy[t, :] over the positions t with ids[t] = v, in token order (overwritten; rows without ids are zero). */
export const embeddingBackwardKernel = kernelOp<(ids: I32, gy: F32, H: number, gtable: F32) => void>('embeddingBackward');

defineKernel(embeddingKernel, { device: 'cpu', impl: 'reference', run: reference.embedding });
defineKernel(embeddingBackwardKernel, { device: 'cpu', impl: 'reference', run: reference.embeddingBackward });
onWebgpu((gpu) => {
  defineKernel(embeddingKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(embedding) });
  defineKernel(embeddingBackwardKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(embeddingBackward) });
});
