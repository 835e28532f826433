import type { F32, I32 } from '../../arrays';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import * as reference from './reference';
import { crossEntropy, crossEntropyBackward } from './webgpu';

/**
 * Row cross-entropy with weights: loss[r] = w[r]·(lse[r] − logits[r, targets[r]]); rows whose
 * target is negative (ignore index) get loss 0 and w treated as 0. `weights` null means all 1.
 * lse[r] is written for the backward pass.
 */
export const crossEntropyKernel = kernelOp<(logits: F32, targets: I32, weights: F32 | null, rows: number, V: number, loss: F32, lse: F32) => void>('crossEntropy');
/** glogits[r, :] = g[r]·w[r]·(softmax(logits[r]) − onehot(targets[r])); g is the per-row upstream gradient. */
export const crossEntropyBackwardKernel = kernelOp<(logits: F32, targets: I32, weights: F32 | null, lse: F32, g: F32, rows: number, V: number, glogits: F32) => void>('crossEntropyBackward');

defineKernel(crossEntropyKernel, { device: 'cpu', impl: 'reference', run: reference.crossEntropy });
defineKernel(crossEntropyBackwardKernel, { device: 'cpu', impl: 'reference', run: reference.crossEntropyBackward });
onWebgpu((gpu) => {
  defineKernel(crossEntropyKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(crossEntropy) });
  defineKernel(crossEntropyBackwardKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(crossEntropyBackward) });
});
