import type { KernelSet } from '../types';
import { attention, attentionBackward } from './attention';

/**
 * Hand-tuned CPU kernels for the ops where the reference loops are too slow: they lean on the
 * WebAssembly SIMD GEMM and are tested against `jsKernels`.
 */
export const cpuKernels: Partial<KernelSet> = { attention, attentionBackward };
