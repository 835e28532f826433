import { checkGemmArgs, type CheckedGemm, type GemmArgs } from './args';

/**
 * Plain triple loop with a double-precision accumulator: the test oracle for every backend.
 * Semantics are those of {@link GemmArgs}: beta = 0 ignores C, alpha = 0 skips the product.
 */
export function sgemmReference(args: GemmArgs): void {
  referenceChecked(checkGemmArgs(args, false));
}

/** bf16 bits -> f32 value. */
export function bf16ToF32(bits: number): number {
  BF16_SCRATCH_U32[0] = bits << 16;
  return BF16_SCRATCH_F32[0]!;
}
const BF16_SCRATCH_U32 = new Uint32Array(1);
const BF16_SCRATCH_F32 = new Float32Array(BF16_SCRATCH_U32.buffer);

/** The reference on validated arguments (f32 or bf16 B). */
export function referenceChecked(g: CheckedGemm): void {
  const { M, N, K, A, B, C, alpha, beta, transA, transB, bf16 } = g;
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let s = 0;
      if (alpha !== 0) {
        for (let k = 0; k < K; k++) {
          const a = transA ? A[k * M + i]! : A[i * K + k]!;
          const bRaw = transB ? B[j * K + k]! : B[k * N + j]!;
          s += a * (bf16 ? bf16ToF32(bRaw) : bRaw);
        }
      }
      const c = beta === 0 ? 0 : beta * C[i * N + j]!;
      C[i * N + j] = alpha * s + c;
    }
  }
}
