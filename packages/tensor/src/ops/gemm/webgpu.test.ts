// The device GEMM (tiled, and matrix-vector for decode) against the float64 reference, within the
// first-order bound of its own summation order: the tiled kernel adds each element's K products
// in order (sumErrorBound); the matrix-vector kernel sums per lane (vec4 dots, strided over K),
// then the 64 lane sums in order — or subgroup sums (in an order the adapter chooses) and those in order.
import { describe, test } from 'vitest';
import { bf16ArrayToF32, f16ArrayToF32, f32ArrayToBf16, f32ArrayToF16 } from '../../dtype';
import { expectWithin, randomF32, SLACK, sumErrorBound, U32 } from '../../kernels/float-testing';
import { webgpuForSuite } from '../../webgpu/testing';
import { sgemmReference } from './reference';
import { gemm, matvec } from './webgpu';

/** C = alpha·op(A)·op(B) + beta·C0 in float64 and the bound of the kernel's float32 evaluation. */
function expected(transA: boolean, transB: boolean, M: number, N: number, K: number, A: Float32Array, B: Float32Array, C0: Float32Array, alpha: number, beta: number, order: 'sequential' | number) {
  const C = C0.slice();
  sgemmReference({ transA, transB, M, N, K, A, B, C, alpha, beta });
  const bound = new Float64Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      const terms = Array.from({ length: K }, (_, k) => (transA ? A[k * M + i]! : A[i * K + k]!) * (transB ? B[j * K + k]! : B[k * N + j]!));
      const abs = terms.reduce((a, v) => a + Math.abs(v), 0), s = terms.reduce((a, v) => a + v, 0);
      const eSum = order === 'sequential' ? sumErrorBound(terms, 1) : U32 * (1 + order) * abs;
      const c = beta * C0[i * N + j]!;
      // alpha·s and beta·c each round once, their sum once, the reference once.
      bound[i * N + j] = SLACK * (Math.abs(alpha) * eSum + U32 * (Math.abs(alpha * s) + Math.abs(c) + 2 * Math.abs(C[i * N + j]!)));
    }
  }
  return { C, bound };
}

describe('device GEMM', { timeout: 600_000 }, () => {
  const { ctx, run, host } = webgpuForSuite();

  test('tiled: every layout, edges that are not multiples of 4 or 64, alpha and beta', () => {
    for (const [M, N, K] of [[65, 70, 33], [9, 130, 64], [128, 64, 100], [17, 3, 5]] as const) {
      for (const transA of [false, true]) {
        for (const transB of [false, true]) {
          const A = randomF32(M * K, M + K), B = randomF32(K * N, N + K), C0 = randomF32(M * N, M + N);
          for (const [alpha, beta] of [[1, 0], [0.5, 2]] as const) {
            const C = C0.slice();
            run(gemm)({ transA, transB, M, N, K, A, B, C, alpha, beta });
            host(C);
            const e = expected(transA, transB, M, N, K, A, B, C0, alpha, beta, 'sequential');
            expectWithin(C, e.C, e.bound, `gemm ${transA ? 'T' : 'N'}${transB ? 'T' : 'N'} [${M}, ${N}, ${K}] alpha ${alpha} beta ${beta}`);
          }
        }
      }
    }
  });

  test('tiled with bf16 B, as the bf16 weights of a prefill', () => {
    const M = 40, N = 72, K = 96;
    const A = randomF32(M * K, 1), Bf = randomF32(N * K, 2), B16 = f32ArrayToBf16(Bf), B = bf16ArrayToF32(B16), C = new Float32Array(M * N);
    run(gemm)({ transA: false, transB: true, M, N, K, A, B: B16, C });
    host(C);
    const e = expected(false, true, M, N, K, A, B, new Float32Array(M * N), 1, 0, 'sequential');
    expectWithin(C, e.C, e.bound, 'gemm bf16');
  });

  test('matrix-vector (M ≤ 8): f32, bf16 and f16 weights, K = 14336 and N = 131072', () => {
    for (const [M, N, K] of [[1, 64, 14336], [1, 131072, 64], [8, 1000, 64], [3, 37, 130], [1, 5, 7]] as const) {
      const A = randomF32(M * K, M + K), W = randomF32(N * K, N + K, -1, 1);
      // Per lane ⌈K/256⌉ vec4 dots of 4 products (3 additions each), then at most 64 more (the lanes' or the subgroups' sums).
      const depth = 4 + Math.ceil(K / 256) + 64;
      const C = new Float32Array(M * N);
      run(gemm)({ transA: false, transB: true, M, N, K, A, B: W, C });
      host(C);
      const e = expected(false, true, M, N, K, A, W, new Float32Array(M * N), 1, 0, depth);
      expectWithin(C, e.C, e.bound, `matvec f32 [${M}, ${N}, ${K}]`);
      if (N * K > 1 << 22) continue;
      for (const [name, bits, widen] of [['bf16', f32ArrayToBf16(W), bf16ArrayToF32], ['f16', f32ArrayToF16(W), f16ArrayToF32]] as const) {
        const Y = new Float32Array(M * N);
        const c = ctx();
        c.record((cx: typeof c) => matvec(cx, M, N, K, name, cx.st.input(bits, 'weights'), cx.st.input(A, 'x'), cx.st.output(Y, 'y')))();
        host(Y);
        const w = widen(bits);
        const ew = expected(false, true, M, N, K, A, w, new Float32Array(M * N), 1, 0, depth);
        expectWithin(Y, ew.C, ew.bound, `matvec ${name} [${M}, ${N}, ${K}]`);
      }
    }
  });
});
