import { heapRelease, scratchF32 } from '../../memory/heap';
import { wasmGemm } from '../gemm/cpu';
import { expShift, rowMax, scaleRow } from './cpu-rows';
import { fusedLinearCrossEntropy } from './reference';

/** The cpu kernel: the fused loss on the WebAssembly GEMM, its logits in heap scratch, the softmax rows in SIMD (cpu-rows.ts). */
export const linearCrossEntropyCpu = fusedLinearCrossEntropy(wasmGemm, { alloc: scratchF32, release: heapRelease }, { max: rowMax, expShift, scale: scaleRow });
