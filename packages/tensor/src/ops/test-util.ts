import { expect } from 'vitest';
import { gradcheck } from '../gradcheck';
import { persistentF32 } from '../kernels/cpu/heap';
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
export function attentionBound(a: { T: number; nh: number; nkv: number; d: number; scale: number; qOffset: number; q: Float32Array; k: Float32Array; v: Float32Array }, ua: number, uo: number, exact: Float64Array): Float64Array {
  const { T, nh, nkv, d, scale, q, k, v } = a, rep = nh / nkv;
  const bound = new Float64Array(T * nh * d);
  for (let t = 0; t < T; t++) {
    const n = a.qOffset + t + 1;
    for (let h = 0; h < nh; h++) {
      const g = Math.floor(h / rep), qo = (t * nh + h) * d;
      let A = 0;
      for (let s = 0; s < n; s++) {
        let x = 0;
        for (let e = 0; e < d; e++) x += Math.abs(q[qo + e]! * k[(s * nkv + g) * d + e]!);
        A = Math.max(A, x * scale);
      }
      const eps = 2 * (d + 1) * ua * A + 2 * ua * A + (4 + 2 * n) * ua;
      for (let e = 0; e < d; e++) {
        let V = 0;
        for (let s = 0; s < n; s++) V = Math.max(V, Math.abs(v[(s * nkv + g) * d + e]!));
        bound[qo + e] = 2 * V * (2 * eps + (n + 3) * ua) + uo * Math.abs(exact[qo + e]!);
      }
    }
  }
  return bound;
}

/** Attention [T, nh, d] of queries over contiguous keys and values [S, nkv, d] in float64, two passes (max, then weights): the exact value to far below float32 rounding. */
export function attentionF64(a: { T: number; nh: number; nkv: number; d: number; scale: number; qOffset: number; q: Float32Array; k: Float32Array; v: Float32Array }): Float64Array {
  const { T, nh, nkv, d, scale, q, k, v } = a, rep = nh / nkv;
  const o = new Float64Array(T * nh * d);
  for (let t = 0; t < T; t++) {
    const n = a.qOffset + t + 1;
    for (let h = 0; h < nh; h++) {
      const g = Math.floor(h / rep), qo = (t * nh + h) * d;
      const z = Array.from({ length: n }, (_, s) => {
        let x = 0;
        for (let e = 0; e < d; e++) x += q[qo + e]! * k[(s * nkv + g) * d + e]!;
        return x * scale;
      });
      const m = Math.max(...z), p = z.map((x) => Math.exp(x - m)), l = p.reduce((x, y) => x + y, 0);
      for (let e = 0; e < d; e++) {
        let x = 0;
        for (let s = 0; s < n; s++) x += p[s]! * v[(s * nkv + g) * d + e]!;
        o[qo + e] = x / l;
      }
    }
  }
  return o;
}

/** Assert |actual − expected| ≤ bound element by element, naming the first element outside. */
export function expectWithinBound(actual: ArrayLike<number>, expected: ArrayLike<number>, bound: ArrayLike<number>): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    if (!(Math.abs(actual[i]! - expected[i]!) <= bound[i]!)) expect.fail(`element ${i}: ${actual[i]} vs ${expected[i]}, bound ${bound[i]}`);
  }
}
