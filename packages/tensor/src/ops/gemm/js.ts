import type { CheckedGemm } from './args';

/**
 * C = beta * C (beta = 0 clears, ignoring NaNs in C). Shared by every backend for the parts of C
 * the product does not touch (K = 0 or alpha = 0).
 */
export function scaleC(C: Float32Array, n: number, beta: number): void {
  if (beta === 0) C.fill(0, 0, n);
  else if (beta !== 1) for (let i = 0; i < n; i++) C[i] = beta * C[i]!;
}

/** op(B) as a row-major K x N f32 array (a copy when B is transposed or bf16, else B itself). */
function rowMajorB(g: CheckedGemm): Float32Array {
  const { K, N, transB } = g;
  if (!g.bf16 && !transB) return g.B as Float32Array;
  const out = new Float32Array(K * N);
  const src = g.bf16 ? new Float32Array(Uint32Array.from(g.B as Uint16Array, (b) => b << 16).buffer) : (g.B as Float32Array);
  if (!transB) out.set(src.subarray(0, K * N));
  else for (let j = 0; j < N; j++) for (let k = 0; k < K; k++) out[k * N + j] = src[j * K + k]!;
  return out;
}

/**
 * The plain-JavaScript backend: row-by-row axpy form (C[i, :] += alpha * op(A)[i, k] * op(B)[k, :]),
 * which streams B rows and lets V8 keep the inner loop tight. About 1 GFLOPS; used where
 * WebAssembly SIMD is unavailable. C must not overlap A or B.
 */
export function gemmJs(g: CheckedGemm): void {
  const { M, N, K, A, C, alpha, beta, transA } = g;
  scaleC(C, M * N, beta);
  if (K === 0 || alpha === 0 || M === 0 || N === 0) return;
  const B = rowMajorB(g);
  for (let i = 0; i < M; i++) {
    const co = i * N;
    for (let k = 0; k < K; k++) {
      const a = alpha * (transA ? A[k * M + i]! : A[i * K + k]!);
      const bo = k * N;
      for (let j = 0; j < N; j++) C[co + j] = C[co + j]! + a * B[bo + j]!;
    }
  }
}
