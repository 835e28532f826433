import { wasmGemm, wasmGemmAvailable } from '../gemm/index';
import { heapRelease, scratchF32 } from './heap';
import { fusedLinearCrossEntropy } from '../js/linear-cross-entropy';
import type { KernelSet } from '../types';
import { attention, attentionBackward } from './attention';

/**
 * The `cpu` backend: the kernels that lean on the WebAssembly SIMD GEMM (GEMM itself, tiled
 * attention, the fused LM-head loss), tested against `jsKernels`. Empty where WebAssembly SIMD
 * is missing, so selecting it there throws `BackendError`.
 */
export const cpuKernels: Partial<KernelSet> = wasmGemmAvailable()
  ? { gemm: wasmGemm, linearCrossEntropy: fusedLinearCrossEntropy(wasmGemm, { alloc: scratchF32, release: heapRelease }), attention, attentionBackward }
  : {};
