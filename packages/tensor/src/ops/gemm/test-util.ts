/**
 * Helpers shared by the GEMM tests: deterministic random operands and an error bound.
 * (Not exported from the package.)
 */
import { resetKernels, selectKernels } from '../../registry';
import { sgemmReference } from './reference';
import type { GemmArgs } from './args';
import { setGemmThreads, setGemmVariant } from './cpu';

/**
 * The GEMM kernels under test: the `js` reference, and the `cpu` (WebAssembly SIMD) one with
 * either variant (`relaxed`: FMA, the default where the CPU has it; `simd`: mul + add) on 1 and
 * 2 threads.
 */
export const GEMM_BACKENDS = ['js', 'cpu relaxed 1 thread', 'cpu relaxed 2 threads', 'cpu simd 1 thread', 'cpu simd 2 threads'] as const;

/** Select one of {@link GEMM_BACKENDS} for the `gemm` op through the kernel registry. */
export function useGemm(b: (typeof GEMM_BACKENDS)[number]): void {
  if (b === 'js') selectKernels('reference', ['gemm']);
  else resetKernels();
  if (b !== 'js') setGemmVariant(b.includes('relaxed') ? 'relaxed' : 'simd');
  setGemmThreads(b.endsWith('1 thread') ? 1 : 2);
}

/** xorshift32 stream of floats in [-1, 1), so large operands are cheap to build from a seed. */
export function randomArray(n: number, seed: number): Float32Array {
  let s = (seed | 0) || 0x9e3779b9;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = (s >>> 0) / 2 ** 31 - 1;
  }
  return out;
}

/** Sizes that stress edge tiles: ones, primes and 2^k +- 1 around the micro-tile and block sizes. */
export const ODD_SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 63, 65, 129] as const;

/**
 * Per-element error bound for float32 GEMM: (K + 4) * 2^-22 * S, with S the same GEMM on absolute
 * values (|alpha| sum |a||b| + |beta| |c|). A correct f32 kernel stays far inside (K u S is the
 * classical worst case); any wrong index or missed term breaks it by orders of magnitude.
 */
export function errorBound(args: GemmArgs): Float32Array {
  const abs = (x: Float32Array): Float32Array => x.map(Math.abs);
  const S = abs(args.C);
  sgemmReference({ ...args, A: abs(args.A), B: abs(args.B), C: S, alpha: Math.abs(args.alpha ?? 1), beta: Math.abs(args.beta ?? 0) });
  const scale = (args.K + 4) * 2 ** -22;
  return S.map((s) => s * scale + 1e-30);
}

/** Largest violation ratio |got - want| / bound (<= 1 passes); NaN mismatches count as Infinity. */
export function worstRatio(got: Float32Array, want: Float32Array, bound: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const g = got[i]!, w = want[i]!;
    if (Number.isNaN(g) !== Number.isNaN(w)) return Infinity;
    if (Number.isNaN(w)) continue;
    worst = Math.max(worst, Math.abs(g - w) / bound[i]!);
  }
  return worst;
}
