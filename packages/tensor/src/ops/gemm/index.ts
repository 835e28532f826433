/**
 * The GEMM op: C = alpha·op(A)·op(B) + beta·C (see `kernel.ts`), registered for the cpu device as
 * the TypeScript reference and the WebAssembly SIMD engine (wasm/, threads and variants in cpu.ts).
 */
import { checkGemmArgs, type GemmArgs, type GemmBf16Args } from './args';
import { gemmKernel } from './kernel';

/**
 * C = alpha * op(A) * op(B) + beta * C on row-major, contiguous Float32Arrays (see `GemmArgs`),
 * with the kernel the registry chooses for `gemm` on the current device (`kernelInfo(gemmKernel)`). Throws
 * `GemmError` on bad arguments, before touching C.
 *
 * @example
 * ```ts
 * const C = new Float32Array(2 * 2);
 * sgemm({ transA: false, transB: false, M: 2, N: 2, K: 3,
 *   A: new Float32Array([1, 2, 3, 4, 5, 6]), B: new Float32Array([1, 0, 0, 1, 1, 1]), C });
 * // C = [4, 5, 10, 11]
 * ```
 */
export function sgemm(args: GemmArgs): void {
  checkGemmArgs(args, false);
  gemmKernel.run(args);
}

/**
 * {@link sgemm} with B given as bf16 bit patterns (`Uint16Array`), widened to f32 inside the
 * kernel: inference with bf16 weights, usually `transB: true` with B = W[N, K].
 */
export function sgemmBf16(args: GemmBf16Args): void {
  checkGemmArgs(args, true);
  gemmKernel.run(args);
}
