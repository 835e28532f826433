import { wasmGemm, wasmGemmAvailable } from '../gemm/index';
import { fusedLinearCrossEntropy } from '../js/linear-cross-entropy';
import type { KernelSet } from '../types';
import { tiledAttention } from './attention';
import { simdBinary } from './binary';
import { heapRelease, scratchF32 } from './heap';
import { pagedDecodeAttention } from './paged-attention';
import { simdRmsnorm } from './rmsnorm';
import { expShift, rowMax, scaleRow } from './softmax-rows';
import { simdXielu } from './xielu';

/** The SIMD row operations of the softmax in the fused loss (see softmax-rows.ts). */
const simdRows = { max: rowMax, expShift, scale: scaleRow };

/**
 * The `cpu` backend: the kernels that lean on the WebAssembly SIMD GEMM (GEMM itself, tiled
 * attention, the fused LM-head loss; their softmax rows in SIMD), paged decode attention,
 * RMSNorm, xIELU and same-layout add/sub/mul in SIMD, tested against `jsKernels`. The GEMM runs
 * the variant of `setGemmVariant` (FMA by default where the CPU has it). Empty where WebAssembly
 * SIMD is missing, so selecting it there throws `BackendError`.
 */
export const cpuKernels: Partial<KernelSet> = wasmGemmAvailable() ? simdKernels() : {};

/** The kernels above, built where WebAssembly SIMD runs. */
function simdKernels(): Partial<KernelSet> {
  const attention = tiledAttention(wasmGemm);
  return {
    gemm: wasmGemm, linearCrossEntropy: fusedLinearCrossEntropy(wasmGemm, { alloc: scratchF32, release: heapRelease }, simdRows),
    ...attention, pagedAttention: pagedDecodeAttention(attention.attention), ...simdRmsnorm, ...simdXielu, ...simdBinary,
  };
}

