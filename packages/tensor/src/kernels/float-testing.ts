/**
 * Test helpers for kernel tests (not part of the package API): deterministic random buffers,
 * elementwise closeness checks with a useful failure message, and the float32 rounding error
 * bounds the tests compare against.
 */
import { expect } from 'vitest';

/** Deterministic floats uniform in [lo, hi) from a 32-bit LCG seeded with `seed`. */
export function randomF32(n: number, seed: number, lo = -2, hi = 2): Float32Array {
  const a = new Float32Array(n);
  let s = (seed ^ 0x9e3779b9) >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = lo + ((s >>> 8) / 2 ** 24) * (hi - lo);
  }
  return a;
}

/** Deterministic integers uniform in [lo, hi). */
export function randomI32(n: number, seed: number, lo: number, hi: number): Int32Array {
  const f = randomF32(n, seed, 0, 1);
  return Int32Array.from(f, (u) => lo + Math.min(hi - lo - 1, Math.floor(u * (hi - lo))));
}

/**
 * Assert |actual - expected| <= atol + rtol·|expected| elementwise (NaN matches NaN, ±Infinity
 * must match exactly), naming the first offending index.
 */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string, rtol = 1e-5, atol = 1e-6): void {
  expect(actual.length, `${what}: length`).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    if (Number.isNaN(e)) {
      if (!Number.isNaN(a)) expect.fail(`${what}[${i}]: got ${a}, expected NaN`);
      continue;
    }
    if (!Number.isFinite(e)) {
      if (a !== e) expect.fail(`${what}[${i}]: got ${a}, expected ${e}`);
      continue;
    }
    if (!(Math.abs(a - e) <= atol + rtol * Math.abs(e))) {
      expect.fail(`${what}[${i}]: got ${a}, expected ${e} (|diff| ${Math.abs(a - e)} > ${atol} + ${rtol}·|expected|)`);
    }
  }
}

/** float32 unit roundoff: a correctly rounded float32 operation has relative error at most U32. */
export const U32 = 2 ** -24;

/**
 * Safety factor on the first-order error bounds below: it covers the second-order terms (n·U32²),
 * the reference's own final rounding to float32, and math functions (exp, log) that the kernels
 * evaluate in float64 and round to float32 (≤ 1 U32 + a float64 ulp).
 */
export const SLACK = 2;

/**
 * First-order bound on the rounding error of a left-to-right float32 sum Σ_k t_k:
 * U32·Σ_k (c·|t_k| + |S_k|), with S_k the exact partial sums (each addition after the first
 * rounds S_k by ≤ U32·|S_k|) and c the number of roundings already in each term (a product
 * x·y has c = 1, x·y·z has c = 2; c = 0 for exact terms).
 */
export function sumErrorBound(terms: ArrayLike<number>, roundingsPerTerm = 0): number {
  let s = 0;
  let e = 0;
  for (let k = 0; k < terms.length; k++) {
    const t = terms[k]!;
    s += t;
    e += roundingsPerTerm * Math.abs(t) + (k > 0 ? Math.abs(s) : 0);
  }
  return U32 * e;
}

/**
 * Assert |actual[i] - expected[i]| <= bound[i] elementwise, where the bound is derived from the
 * inputs (float32 rounding analysis of the kernel); ±Infinity and NaN must match exactly.
 * Names the first offending index with its bound.
 */
export function expectWithin(actual: ArrayLike<number>, expected: ArrayLike<number>, bound: ArrayLike<number>, what: string): void {
  expect(actual.length, `${what}: length`).toBe(expected.length);
  expect(bound.length, `${what}: bound length`).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    if (!Number.isFinite(e)) {
      if (!Object.is(a, e)) expect.fail(`${what}[${i}]: got ${a}, expected ${e}`);
      continue;
    }
    if (!(Math.abs(a - e) <= bound[i]!)) {
      expect.fail(`${what}[${i}]: got ${a}, expected ${e} (|diff| ${Math.abs(a - e)} > bound ${bound[i]})`);
    }
  }
}

/**
 * First-order bound on the rounding error of a sum of `terms` computed by a 256-thread workgroup
 * as the device's `wg_sum` does: each thread adds its strided share in order, then 16 threads
 * add 16 of those each, then the 16 sums are added: every term goes through at most
 * ⌈n/256⌉ + 32 additions, plus the `roundingsPerTerm` already in it.
 */
export function treeSumBound(terms: ArrayLike<number>, roundingsPerTerm = 0): number {
  let a = 0;
  for (let k = 0; k < terms.length; k++) a += Math.abs(terms[k]!);
  return U32 * (roundingsPerTerm + Math.ceil(terms.length / 256) + 32) * a;
}

/**
 * A float32 value computed by straight-line code, with a first-order bound on its absolute
 * error: each operation adds the propagated errors of its operands and its own rounding (`ulps`
 * units of U32 of the result: 1 for + − ×, more for a division or square root that is not
 * correctly rounded). For bounds of elementwise kernels (optimizer updates, activations).
 */
export class Rounded {
  constructor(readonly v: number, readonly e = 0) {}
  /** An exact input. */
  static exact(v: number): Rounded { return new Rounded(v, 0); }
  /** A scalar rounded once to float32 (a kernel parameter). */
  static param(v: number): Rounded { return new Rounded(v, U32 * Math.abs(v)); }
  private static of(b: Rounded | number): Rounded { return typeof b === 'number' ? new Rounded(b, 0) : b; }
  add(b: Rounded | number, ulps = 1): Rounded { const o = Rounded.of(b), v = this.v + o.v; return new Rounded(v, this.e + o.e + ulps * U32 * Math.abs(v)); }
  sub(b: Rounded | number, ulps = 1): Rounded { const o = Rounded.of(b), v = this.v - o.v; return new Rounded(v, this.e + o.e + ulps * U32 * Math.abs(v)); }
  mul(b: Rounded | number, ulps = 1): Rounded { const o = Rounded.of(b), v = this.v * o.v; return new Rounded(v, Math.abs(this.v) * o.e + Math.abs(o.v) * this.e + ulps * U32 * Math.abs(v)); }
  div(b: Rounded | number, ulps = 2.5): Rounded { const o = Rounded.of(b), v = this.v / o.v; return new Rounded(v, this.e / Math.abs(o.v) + (Math.abs(this.v) * o.e) / (o.v * o.v) + ulps * U32 * Math.abs(v)); }
  sqrt(ulps = 4.5): Rounded { const v = Math.sqrt(this.v); return new Rounded(v, (v > 0 ? this.e / (2 * v) : Math.sqrt(this.e)) + ulps * U32 * v); }
  /** The same value with more error (a function's own error, in ulps of the value). */
  plusUlps(ulps: number): Rounded { return new Rounded(this.v, this.e + ulps * U32 * Math.abs(this.v)); }
}
