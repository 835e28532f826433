/**
 * GEMM as a gpu.js kernel with the `GemmArgs` contract of `kernels/gemm`: C = alpha·op(A)·op(B)
 * + beta·C, row-major, one thread per C element, the K loop bound a constant. Four kernel texts
 * (transA × transB) so every index pattern is static. BLAS conventions: with beta = 0, C is not
 * read (NaNs in C do not leak); with alpha = 0, A and B are not read.
 */
import { ShapeError } from '../../errors';
import { bf16ArrayToF32 } from '../../dtype';
import type { GemmArgs, GemmBf16Args } from '../../ops/gemm/cpu';
import { checkIndexable, inp, call, into, kept, type KernelOp } from './runtime';

export type { GemmArgs } from '../../ops/gemm/cpu';

// Thread (x, y) = (j, i). A is read as A[i][p] (stored [M, K]) or A[p][i] (stored [K, M]);
// B as B[p][j] (stored [K, N]) or B[j][p] (stored [N, K]).
const gemmNN = `function (A, B, alpha) {
  let acc = 0;
  for (let p = 0; p < this.constants.K; p++) {
    acc += A[this.thread.y][p] * B[p][this.thread.x];
  }
  return alpha * acc;
}`;
const gemmTN = `function (A, B, alpha) {
  let acc = 0;
  for (let p = 0; p < this.constants.K; p++) {
    acc += A[p][this.thread.y] * B[p][this.thread.x];
  }
  return alpha * acc;
}`;
const gemmNT = `function (A, B, alpha) {
  let acc = 0;
  for (let p = 0; p < this.constants.K; p++) {
    acc += A[this.thread.y][p] * B[this.thread.x][p];
  }
  return alpha * acc;
}`;
const gemmTT = `function (A, B, alpha) {
  let acc = 0;
  for (let p = 0; p < this.constants.K; p++) {
    acc += A[p][this.thread.y] * B[this.thread.x][p];
  }
  return alpha * acc;
}`;

/** beta·C + the product computed by the first kernel (a second, elementwise kernel). */
const axpby = `function (P, C, beta) {
  return P[this.thread.x] + beta * C[this.thread.x];
}`;

const KERNELS = { NN: gemmNN, TN: gemmTN, NT: gemmNT, TT: gemmTT };

/** C = alpha·op(A)·op(B) + beta·C on the gpu.js runtime. */
export function* gemm(input: GemmArgs | GemmBf16Args): KernelOp {
  // bf16 weights (B as bf16 bits) are widened to f32 once per call: the kernels read f32.
  const args: GemmArgs = input.B instanceof Uint16Array ? { ...input, B: bf16ArrayToF32(input.B) } : (input as GemmArgs);
  const { transA, transB, M, N, K, A, B, C } = args;
  const alpha = args.alpha ?? 1;
  const beta = args.beta ?? 0;
  checkIndexable('gemm', { M, N, K });
  if (A.length < M * K) throw new ShapeError(`gemm: A has ${A.length} elements, needs ${transA ? `${K} x ${M}` : `${M} x ${K}`}`);
  if (B.length < K * N) throw new ShapeError(`gemm: B has ${B.length} elements, needs ${transB ? `${N} x ${K}` : `${K} x ${N}`}`);
  if (C.length < M * N) throw new ShapeError(`gemm: C has ${C.length} elements, needs ${M} x ${N}`);
  if (M * N === 0) return;
  const c = C.subarray(0, M * N);
  if (K === 0 || alpha === 0) {
    if (beta === 0) c.fill(0);
    else yield* into(c, call('gemm.axpby', `${M * N}`, axpbySpec(M * N), [new Float32Array(M * N), c, beta]));
    return;
  }
  const variant = `${transA ? 'T' : 'N'}${transB ? 'T' : 'N'}` as keyof typeof KERNELS;
  const product = call(`gemm.${variant}`, `${M},${N},${K}`, () => ({
    source: KERNELS[variant], output: [N, M], constants: { K },
    argumentTypes: { A: 'Input', B: 'Input', alpha: 'Float' },
  }), [inp(A.subarray(0, M * K), transA ? [M, K] : [K, M]), inp(B.subarray(0, K * N), transB ? [K, N] : [N, K]), alpha]);
  if (beta === 0) {
    yield* into(c, product);
    return;
  }
  const P = yield* kept(product);
  yield* into(c, call('gemm.axpby', `${M * N}`, axpbySpec(M * N), [P, c, beta]));
}

function axpbySpec(n: number) {
  return () => ({ source: axpby, output: [n], argumentTypes: { P: 'Array', C: 'Array', beta: 'Float' } as const });
}
