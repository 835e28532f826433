import type { GemmArgs, GemmBf16Args } from './args';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import { jsGemm, wasmGemm, wasmGemmAvailable } from './cpu';
import { gemm } from './webgpu';

/**
 * C = alpha·op(A)·op(B) + beta·C on row-major operands (see `GemmArgs`); B holds bf16 bits when
 * it is a Uint16Array (dtype key 'bf16'). Every `matmul` and `linear` product and their gradients
 * run here.
 */
/** The GEMM kernel's signature. */
export type GemmFn = (args: GemmArgs | GemmBf16Args) => void;

export const gemmKernel = kernelOp<GemmFn>('gemm', (a) => (a.B instanceof Uint16Array ? 'bf16' : 'f32'));

defineKernel(gemmKernel, { device: 'cpu', impl: 'reference', run: jsGemm });
defineKernel(gemmKernel, { device: 'cpu', impl: 'wasm', available: wasmGemmAvailable, run: wasmGemm });
onWebgpu((gpu) => {
  defineKernel(gemmKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(gemm) });
});
