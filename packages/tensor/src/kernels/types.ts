/**
 * The kernel contracts of @apertus/tensor's own ops, gathered for the gpu.js kernel set (which
 * implements all of them): the argument types live with their ops (`ops/<op>/kernel.ts`), and
 * `KernelSet` is derived from the declared kernel ops.
 */
import { attentionBackwardKernel, attentionKernel, pagedAttentionKernel } from '../ops/attention/kernel';
import { crossEntropyBackwardKernel, crossEntropyKernel } from '../ops/cross-entropy/kernel';
import { binaryKernel, scaleByKernel, unaryBackwardKernel, unaryKernel } from '../ops/elementwise/kernel';
import { embeddingBackwardKernel, embeddingKernel } from '../ops/embedding/kernel';
import { gemmKernel } from '../ops/gemm/kernel';
import { linearCrossEntropyKernel } from '../ops/linear-cross-entropy/kernel';
import { maxKernel, sumKernel, sumSquaresKernel } from '../ops/reduce/kernel';
import { rmsnormBackwardKernel, rmsnormKernel } from '../ops/rmsnorm/kernel';
import { ropeKernel } from '../ops/rope/kernel';
import { logSoftmaxBackwardKernel, logSoftmaxKernel, softmaxBackwardKernel, softmaxKernel } from '../ops/softmax/kernel';
import { copyStridedKernel } from '../ops/view/kernel';
import { implementationOf, type Device } from '../registry';

export type { F32, I32, U16 } from '../arrays';
export type { AttentionArgs, AttentionBackwardArgs, KVPages, PagedAttentionArgs } from '../ops/attention/kernel';
export type { BinaryOp, UnaryOp } from '../ops/elementwise/kernel';
export type { GemmArgs, GemmBf16Args } from '../ops/gemm/args';
export type { LinearCrossEntropyArgs } from '../ops/linear-cross-entropy/kernel';

/** Every kernel op of @apertus/tensor, by name. */
export const TENSOR_KERNELS = {
  gemm: gemmKernel, unary: unaryKernel, unaryBackward: unaryBackwardKernel, binary: binaryKernel, scaleBy: scaleByKernel,
  copyStrided: copyStridedKernel, sum: sumKernel, max: maxKernel, sumSquares: sumSquaresKernel,
  softmax: softmaxKernel, softmaxBackward: softmaxBackwardKernel, logSoftmax: logSoftmaxKernel, logSoftmaxBackward: logSoftmaxBackwardKernel,
  rmsnorm: rmsnormKernel, rmsnormBackward: rmsnormBackwardKernel, embedding: embeddingKernel, embeddingBackward: embeddingBackwardKernel,
  rope: ropeKernel, attention: attentionKernel, attentionBackward: attentionBackwardKernel, pagedAttention: pagedAttentionKernel,
  crossEntropy: crossEntropyKernel, crossEntropyBackward: crossEntropyBackwardKernel, linearCrossEntropy: linearCrossEntropyKernel,
} as const;

/** The kernels of tensor's own ops, by name (what a device's kernel set implements). */
export type KernelSet = { [K in keyof typeof TENSOR_KERNELS]: (typeof TENSOR_KERNELS)[K]['run'] };

/** Names of tensor's own kernel ops. */
export type KernelName = keyof KernelSet;

/** Implementation `impl` of every op of tensor on `device`, by name (tests compare implementations this way). */
export function kernelSet(impl: string, device: Device = 'cpu'): KernelSet {
  const set: Partial<Record<KernelName, unknown>> = {};
  for (const name of Object.keys(TENSOR_KERNELS) as KernelName[]) {
    try { set[name] = implementationOf(TENSOR_KERNELS[name] as never, impl, device); } catch { /* the op has no such implementation */ }
  }
  return set as KernelSet;
}
