import { GemmError } from './errors';

/** C = alpha * op(A) * op(B) + beta * C on row-major, contiguous arrays (see `index.ts`). */
export interface GemmArgs {
  /** op(A) = A^T: A is stored K x M instead of M x K. */
  transA: boolean;
  /** op(B) = B^T: B is stored N x K instead of K x N. */
  transB: boolean;
  /** Rows of op(A) and C. */
  M: number;
  /** Columns of op(B) and C. */
  N: number;
  /** Columns of op(A), rows of op(B). */
  K: number;
  /** Left operand, M x K (K x M when transA), at least M * K elements. */
  A: Float32Array;
  /** Right operand, K x N (N x K when transB), at least K * N elements. */
  B: Float32Array;
  /** Output, M x N, at least M * N elements. Must not overlap A or B. */
  C: Float32Array;
  /** Scale of the product; default 1. With alpha = 0 the product is skipped (A and B are not read). */
  alpha?: number;
  /** Scale of the old C; default 0, which overwrites C (NaNs already in C are ignored). */
  beta?: number;
}

/**
 * Same as {@link GemmArgs}, but B holds bf16 bit patterns (the upper 16 bits of an f32), as used
 * for bf16 weights at inference: usually transB = true with B = W[N, K].
 */
export interface GemmBf16Args extends Omit<GemmArgs, 'B'> {
  /** Right operand as bf16 bits, K x N (N x K when transB). */
  B: Uint16Array;
}

/** Arguments after validation, with defaults filled in. */
export interface CheckedGemm {
  /** As in {@link GemmArgs}. */
  transA: boolean;
  /** As in {@link GemmArgs}. */
  transB: boolean;
  /** As in {@link GemmArgs}. */
  M: number;
  /** As in {@link GemmArgs}. */
  N: number;
  /** As in {@link GemmArgs}. */
  K: number;
  /** As in {@link GemmArgs}. */
  A: Float32Array;
  /** f32 values, or bf16 bits when `bf16`. */
  B: Float32Array | Uint16Array;
  /** Whether B holds bf16 bits. */
  bf16: boolean;
  /** As in {@link GemmArgs}. */
  C: Float32Array;
  /** Scale of the product (default 1 filled in). */
  alpha: number;
  /** Scale of the old C (default 0 filled in). */
  beta: number;
}

const MAX_DIM = 2 ** 31 - 1;

function dim(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_DIM) {
    throw new GemmError(name, `expected a non-negative integer dimension, got ${String(v)}`);
  }
  return v;
}

function scalar(name: string, v: unknown, dflt: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number') throw new GemmError(name, `expected a number, got ${typeof v}`);
  return v;
}

function operand<T extends Float32Array | Uint16Array>(name: string, arr: unknown, ctor: { new (n: number): T; name: string }, need: number, shape: string): T {
  if (!(arr instanceof ctor)) {
    throw new GemmError(name, `expected a ${ctor.name}, got ${arr === null ? 'null' : (arr as object)?.constructor?.name ?? typeof arr}`);
  }
  if (arr.length < need) {
    throw new GemmError(name, `needs ${need} elements for ${shape}, has ${arr.length}`);
  }
  return arr;
}

/** Validate GEMM arguments (dimensions, array types and lengths); throws {@link GemmError}. */
export function checkGemmArgs(args: GemmArgs | GemmBf16Args, bf16: boolean): CheckedGemm {
  if (typeof args !== 'object' || args === null) throw new GemmError('args', 'expected an object');
  const M = dim('M', args.M), N = dim('N', args.N), K = dim('K', args.K);
  const transA = Boolean(args.transA), transB = Boolean(args.transB);
  const A = operand('A', args.A, Float32Array, M * K, transA ? `${K}x${M} (transA)` : `${M}x${K}`);
  const bShape = transB ? `${N}x${K} (transB)` : `${K}x${N}`;
  const B = bf16 ? operand('B', args.B, Uint16Array, K * N, bShape) : operand('B', args.B, Float32Array, K * N, bShape);
  const C = operand('C', args.C, Float32Array, M * N, `${M}x${N}`);
  const alpha = scalar('alpha', args.alpha, 1);
  const beta = scalar('beta', args.beta, 0);
  return { transA, transB, M, N, K, A, B, bf16, C, alpha, beta };
}
