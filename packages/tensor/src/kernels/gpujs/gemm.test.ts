// gpu.js GEMM against a float64 triple-loop oracle written here.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type GemmArgs, createGpujsKernels } from './index';
import { expectAllRanIn, expectWithin, randomF32, SLACK, sumErrorBound, U32 } from './testing';

/**
 * The kernel sums the K products in p order in float32 (sumErrorBound with one rounding per
 * product), then rounds alpha·acc, beta·C and their sum: U32 on each.
 */
function gemmBound(g: GemmArgs, C0: Float32Array): Float64Array {
  const { M, N, K, A, B } = g;
  const alpha = g.alpha ?? 1;
  const beta = g.beta ?? 0;
  const b = new Float64Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      const prods = Array.from({ length: K }, (_, p) => (g.transA ? A[p * M + i]! : A[i * K + p]!) * (g.transB ? B[j * K + p]! : B[p * N + j]!));
      const acc = prods.reduce((a, v) => a + v, 0);
      const bc = beta === 0 ? 0 : Math.abs(beta * C0[i * N + j]!);
      b[i * N + j] = SLACK * (Math.abs(alpha) * sumErrorBound(prods, 1) + U32 * (Math.abs(alpha * acc) + bc + Math.abs(alpha * acc) + bc));
    }
  }
  return b;
}

/** C = alpha op(A) op(B) + beta C in float64 (beta = 0 ignores C entirely). */
function oracle(g: GemmArgs): Float64Array {
  const { M, N, K, A, B } = g;
  const alpha = g.alpha ?? 1;
  const beta = g.beta ?? 0;
  const C = new Float64Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let p = 0; p < K; p++) s += (g.transA ? A[p * M + i]! : A[i * K + p]!) * (g.transB ? B[j * K + p]! : B[p * N + j]!);
      C[i * N + j] = alpha * s + (beta === 0 ? 0 : beta * g.C[i * N + j]!);
    }
  }
  return C;
}

for (const mode of ['webasm', 'cpu'] as const) {
  describe(`gemm (${mode})`, () => {
    const ks = createGpujsKernels(mode);
    afterAll(() => ks.dispose());

    it('all transpose combinations, odd sizes, alpha and beta (property)', () => {
      fc.assert(fc.property(
        fc.integer({ min: 1, max: 13 }), fc.integer({ min: 1, max: 13 }), fc.integer({ min: 1, max: 40 }),
        fc.boolean(), fc.boolean(), fc.constantFrom(1, 0.5, -2), fc.constantFrom(0, 1, 0.25), fc.nat(),
        (M, N, K, transA, transB, alpha, beta, seed) => {
          const g: GemmArgs = { transA, transB, M, N, K, A: randomF32(M * K, seed), B: randomF32(K * N, seed + 1), C: randomF32(M * N, seed + 2), alpha, beta };
          const want = oracle(g);
          const bound = gemmBound(g, g.C.slice());
          ks.gemm(g);
          expectWithin(g.C, want, bound, `gemm ${transA ? 'T' : 'N'}${transB ? 'T' : 'N'} ${M}x${N}x${K}`);
        },
      ), { numRuns: mode === 'cpu' ? 8 : 20 });
    });

    it('beta = 0 does not read C (NaNs in C do not leak), and K = 1100 is not cut at 1000', () => {
      const M = 3, N = 5, K = 1100;
      const g: GemmArgs = { transA: false, transB: true, M, N, K, A: new Float32Array(M * K).fill(1), B: new Float32Array(K * N).fill(0.5), C: new Float32Array(M * N).fill(NaN) };
      ks.gemm(g);
      expect(Array.from(g.C)).toEqual(new Array(M * N).fill(550));
    });

    it('alpha = 0 does not read A or B, and buffers longer than needed are accepted (extra C untouched)', () => {
      const g: GemmArgs = { transA: false, transB: false, M: 2, N: 2, K: 3, A: new Float32Array(6).fill(NaN), B: new Float32Array(6).fill(NaN), C: Float32Array.from([1, 2, 3, 4, 99]), alpha: 0, beta: 2 };
      ks.gemm(g);
      expect(Array.from(g.C)).toEqual([2, 4, 6, 8, 99]);
      const h: GemmArgs = { transA: true, transB: false, M: 2, N: 1, K: 2, A: Float32Array.from([1, 2, 3, 4, 7, 7]), B: Float32Array.from([1, 1, 7]), C: new Float32Array(3).fill(5) };
      ks.gemm(h); // op(A) = [[1, 3], [2, 4]]
      expect(Array.from(h.C)).toEqual([4, 6, 5]);
    });

    it(`ran every kernel in ${mode} (no silent fallback)`, () => expectAllRanIn(ks, mode, 2));
  });
}
