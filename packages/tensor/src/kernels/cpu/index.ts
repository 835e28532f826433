import { relaxedGemm, wasmGemm, wasmGemmAvailable } from '../gemm/index';
import { fusedLinearCrossEntropy } from '../js/linear-cross-entropy';
import type { KernelSet } from '../types';
import { tiledAttention } from './attention';
import { heapRelease, scratchF32 } from './heap';
import { simdRmsnorm } from './rmsnorm';
import { expShift, rowMax, scaleRow } from './softmax-rows';

/** The SIMD row operations of the softmax in the fused loss (see softmax-rows.ts). */
const simdRows = { max: rowMax, expShift, scale: scaleRow };

/** GEMM, tiled attention and the fused LM-head loss on top of the WebAssembly GEMM kernel `gemm`, and RMSNorm. */
function kernelsOn(gemm: KernelSet['gemm']): Partial<KernelSet> {
  return { gemm, linearCrossEntropy: fusedLinearCrossEntropy(gemm, { alloc: scratchF32, release: heapRelease }, simdRows), ...tiledAttention(gemm), ...simdRmsnorm };
}

/**
 * The `cpu` backend: the kernels that lean on the WebAssembly SIMD GEMM (GEMM itself, tiled
 * attention, the fused LM-head loss; their softmax rows in SIMD) and RMSNorm in SIMD, tested
 * against `jsKernels`. Empty where WebAssembly SIMD
 * is missing, so selecting it there throws `BackendError`.
 */
export const cpuKernels: Partial<KernelSet> = wasmGemmAvailable() ? kernelsOn(wasmGemm) : {};

/** The same kernels on the relaxed-SIMD (FMA) GEMM: the `cpu-fma` backend (see `enableCpuFma`). */
export function cpuFmaKernels(): Partial<KernelSet> {
  return kernelsOn(relaxedGemm);
}
