import { expect } from 'vitest';
import { gradcheck } from '../gradcheck';
import { persistentF32 } from '../memory/heap';
import type { KVPages } from '../kernels/types';
import { Rng } from '../random';
import { Tensor } from '../tensor';

/** Random float32 tensor requiring grad. */
export function param(shape: number[], rng: Rng, std = 1): Tensor {
  return Tensor.randn(shape, rng, std).requireGrad();
}

/** Assert two arrays agree to `tol` relative to max(1, |expected|). */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-5): void {
  expect(actual.length).toBe(expected.length);
  let worst = 0, at = -1;
  for (let i = 0; i < expected.length; i++) {
    const e = Math.abs(actual[i]! - expected[i]!) / Math.max(1, Math.abs(expected[i]!));
    if (!(e <= worst)) { worst = e; at = i; }
  }
  if (!(worst <= tol)) expect.fail(`max relative error ${worst} at ${at}: ${actual[at]} vs ${expected[at]}`);
}

/** Assert autograd matches central finite differences. */
export function expectGrads(f: (xs: Tensor[]) => Tensor, inputs: Tensor[], tol = 2e-2, eps = 1e-2): void {
  const r = gradcheck(f, inputs, { eps });
  if (!(r.maxError <= tol)) expect.fail(`gradcheck: error ${r.maxError} at input ${r.worst.input}[${r.worst.index}]: analytic ${r.worst.analytic}, numeric ${r.worst.numeric}`);
}

/**
 * One sequence's keys and values [S, heads, d] cut into pages of `bs` tokens: in each block the
 * key rows from float `pad`, the value rows 3 floats after them; the rows past S are NaN (no
 * kernel may read them). Blocks on the cpu heap (`heap`) or in plain arrays.
 */
export function pagesOf(k: Float32Array, v: Float32Array, S: number, heads: number, d: number, bs: number, pad: number, heap: boolean): KVPages {
  const row = heads * d;
  const nb = Math.ceil(S / bs), keys = pad, values = pad + bs * row + 3;
  const blocks = Array.from({ length: nb }, (_, b) => {
    const blk = heap ? persistentF32(values + bs * row) : new Float32Array(values + bs * row);
    blk.fill(NaN);
    const n = Math.min(bs, S - b * bs);
    blk.set(k.subarray(b * bs * row, (b * bs + n) * row), keys);
    blk.set(v.subarray(b * bs * row, (b * bs + n) * row), values);
    return blk;
  });
  return { blocks, blockSize: bs, keys, values, heads, length: S };
}

/** Queries [T, nh, d] over contiguous keys and values [S, nkv, d], query t at position qOffset + t. */
export interface AttentionCase { T: number; nh: number; nkv: number; d: number; scale: number; qOffset: number; q: Float32Array; k: Float32Array; v: Float32Array }

/**
 * Per-element bound of |o − ô| for an attention output o [T, nh, d] (keys and values [S, nkv, d],
 * query t sees the n = qOffset + t + 1 first keys) computed in arithmetic of unit roundoff `ua`,
 * exp within 4 units, and stored with unit roundoff `uo`, against the exact value ô (a float64
 * recomputation is exact to far below it). A score z_s = scale·q·k_s is off by at most
 * (d + 1)·ua·A, A = max_s scale·Σ_e |q_e k_se|; z_s − m, exp and the two scores' errors, and at
 * most n rescalings of a running sum (exp and a product, 2·ua each), make each weight p_s
 * relatively off by ε ≤ 2(d + 1)·ua·A + 2·ua·A + (4 + 2n)·ua; a convex combination of values moves
 * by at most 2ε·V (V = max_s |v_se|), the sum over n keys adds n·ua·V, l and the division 3·ua·V;
 * twice that covers the second-order terms. Storing rounds once more: uo·|ô|.
 */
export function attentionBound(a: AttentionCase, ua: number, uo: number, exact: Float64Array): Float64Array {
  const { d, v, nkv } = a;
  const bound = new Float64Array(a.T * a.nh * d);
  eachQueryHead(a, (n, g, qo) => {
    let A = 0;
    for (let s = 0; s < n; s++) A = Math.max(A, scoreTerms(a, qo, g, s).reduce((x, y) => x + Math.abs(y), 0) * a.scale);
    const eps = 2 * (d + 1) * ua * A + 2 * ua * A + (4 + 2 * n) * ua;
    for (let e = 0; e < d; e++) {
      let V = 0;
      for (let s = 0; s < n; s++) V = Math.max(V, Math.abs(v[(s * nkv + g) * d + e]!));
      bound[qo + e] = 2 * V * (2 * eps + (n + 3) * ua) + uo * Math.abs(exact[qo + e]!);
    }
  });
  return bound;
}

/** Attention [T, nh, d] of queries over contiguous keys and values [S, nkv, d] in float64, two passes (max, then weights): the exact value to far below float32 rounding. */
export function attentionF64(a: AttentionCase): Float64Array {
  const { d, v, nkv } = a;
  const o = new Float64Array(a.T * a.nh * d);
  eachQueryHead(a, (n, g, qo) => {
    const z = Array.from({ length: n }, (_, s) => scoreTerms(a, qo, g, s).reduce((x, y) => x + y, 0) * a.scale);
    const m = Math.max(...z), p = z.map((x) => Math.exp(x - m)), l = p.reduce((x, y) => x + y, 0);
    for (let e = 0; e < d; e++) {
      let x = 0;
      for (let s = 0; s < n; s++) x += p[s]! * v[(s * nkv + g) * d + e]!;
      o[qo + e] = x / l;
    }
  });
  return o;
}

/** The products q_e·k_se of query row `qo`'s score against key s of kv head g (in float64). */
export function scoreTerms(a: AttentionCase, qo: number, g: number, s: number): number[] {
  return Array.from({ length: a.d }, (_, e) => a.q[qo + e]! * a.k[(s * a.nkv + g) * a.d + e]!);
}

/** Calls f for each query row t and head h of an attention case: the keys row t sees (n = qOffset + t + 1), h's kv head g and the row's offset qo in [T, nh, d]. */
export function eachQueryHead(a: AttentionCase, f: (n: number, g: number, qo: number) => void): void {
  const rep = a.nh / a.nkv;
  for (let t = 0; t < a.T; t++) for (let h = 0; h < a.nh; h++) f(a.qOffset + t + 1, Math.floor(h / rep), (t * a.nh + h) * a.d);
}

/** Assert |actual − expected| ≤ bound element by element, naming the first element outside. */
export function expectWithinBound(actual: ArrayLike<number>, expected: ArrayLike<number>, bound: ArrayLike<number>): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    if (!(Math.abs(actual[i]! - expected[i]!) <= bound[i]!)) expect.fail(`element ${i}: ${actual[i]} vs ${expected[i]}, bound ${bound[i]}`);
  }
}
