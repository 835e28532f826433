// gpu.js GEMM against a float64 triple-loop oracle written here.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type GemmArgs, createGpujsKernels } from './index';
import { expectAllRanIn, expectWithin, randomF32, SLACK, sumErrorBound, U32 } from './testing';

/**
 * C = alpha op(A) op(B) + beta C in float64 (beta = 0 ignores C entirely), and the error bound of
 * the float32 kernel: it sums the K products in p order (sumErrorBound with one rounding per
 * product), then rounds alpha·acc, beta·C and their sum (U32 on each).
 */
function oracle(g: GemmArgs): { want: Float64Array; bound: Float64Array } {
  const { M, N, K, A, B } = g;
  const alpha = g.alpha ?? 1;
  const beta = g.beta ?? 0;
  const want = new Float64Array(M * N);
  const bound = new Float64Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      const prods = Array.from({ length: K }, (_, p) => (g.transA ? A[p * M + i]! : A[i * K + p]!) * (g.transB ? B[j * K + p]! : B[p * N + j]!));
      const ab = alpha * prods.reduce((a, v) => a + v, 0);
      const bc = beta === 0 ? 0 : beta * g.C[i * N + j]!;
      want[i * N + j] = ab + bc;
      bound[i * N + j] = SLACK * (Math.abs(alpha) * sumErrorBound(prods, 1) + 2 * U32 * (Math.abs(ab) + Math.abs(bc)));
    }
  }
  return { want, bound };
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
          const { want, bound } = oracle(g);
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
