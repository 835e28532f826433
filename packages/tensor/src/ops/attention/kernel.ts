import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import type { AttentionArgs, AttentionBackwardArgs, KVPages, PagedAttentionArgs } from './args';
import * as reference from './reference';
import { pagedAttention as pagedReference } from './paged-reference';
import { cpuAttention, cpuAttentionBackward } from './cpu';
import { cpuPagedAttention } from './cpu-paged';
import { wasmGemmAvailable } from '../gemm/cpu';
import { attention as attentionWgsl, attentionBackward as attentionBackwardWgsl } from './webgpu';
import { pagedAttention as pagedWgsl } from './webgpu-paged';

export type { AttentionArgs, AttentionBackwardArgs, KVPages, PagedAttentionArgs } from './args';

/** Fused causal (GQA, optional document mask) attention forward. */
export const attentionKernel = kernelOp<(args: AttentionArgs) => void>('attention');
/** Fused attention backward recomputing probabilities from the saved lse. */
export const attentionBackwardKernel = kernelOp<(args: AttentionBackwardArgs) => void>('attentionBackward');
/** Attention of a sequence's new queries over its paged KV cache, inference only (see `PagedAttentionArgs`). */
export const pagedAttentionKernel = kernelOp<(args: PagedAttentionArgs) => void>('pagedAttention');

defineKernel(attentionKernel, { device: 'cpu', impl: 'reference', run: reference.attention });
defineKernel(attentionKernel, { device: 'cpu', impl: 'wasm', available: wasmGemmAvailable, run: cpuAttention });
defineKernel(attentionBackwardKernel, { device: 'cpu', impl: 'reference', run: reference.attentionBackward });
defineKernel(attentionBackwardKernel, { device: 'cpu', impl: 'wasm', available: wasmGemmAvailable, run: cpuAttentionBackward });
defineKernel(pagedAttentionKernel, { device: 'cpu', impl: 'reference', run: pagedReference });
defineKernel(pagedAttentionKernel, { device: 'cpu', impl: 'wasm', available: wasmGemmAvailable, run: cpuPagedAttention });
onWebgpu((gpu) => {
  defineKernel(attentionKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(attentionWgsl) });
  defineKernel(attentionBackwardKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(attentionBackwardWgsl) });
  defineKernel(pagedAttentionKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(pagedWgsl) });
});
