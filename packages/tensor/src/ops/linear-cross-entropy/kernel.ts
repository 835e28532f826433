import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import type { LinearCrossEntropyArgs } from './args';
import { linearCrossEntropyReference } from './reference';
import { linearCrossEntropyCpu } from './cpu';
import { wasmGemmAvailable } from '../gemm/cpu';
import { linearCrossEntropyWgsl } from './webgpu';

export type { LinearCrossEntropyArgs } from './args';

/**
 * Fused LM head + cross-entropy (`linearCrossEntropy`): the weighted loss sums and, when dh/dw
 * are given, the gradients of the weighted loss sum. Dtype key: 'bf16' when W holds bf16 bits.
 */
export const linearCrossEntropyKernel = kernelOp<(args: LinearCrossEntropyArgs) => void>('linearCrossEntropy', (a) => (a.w instanceof Uint16Array ? 'bf16' : 'f32'));

defineKernel(linearCrossEntropyKernel, { device: 'cpu', impl: 'reference', run: linearCrossEntropyReference });
defineKernel(linearCrossEntropyKernel, { device: 'cpu', impl: 'wasm', available: wasmGemmAvailable, run: linearCrossEntropyCpu });
onWebgpu((gpu) => {
  defineKernel(linearCrossEntropyKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(linearCrossEntropyWgsl) });
});
