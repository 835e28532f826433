// The row kernels (softmax family, cross-entropy, RMSNorm, sum, max) against the reference
// kernels, within bounds derived from their float32 operations: each row's sums are per-thread
// strided sums and a 256-leaf tree (`treeSumBound`), exp_/log_ within 3 ulp, WGSL's division
// within 2.5 ulp and inverseSqrt within 2 ulp.
import { describe, expect, test } from 'vitest';
import { expectWithin, randomF32, randomI32, SLACK, sumErrorBound, treeSumBound, U32 } from '../../kernels/float-testing';
import { jsKernels } from '../../kernels/js/index';
import { webgpuForSuite } from '../testing';

/** Per row: max m, Σ exp(x − m), and the relative error of the kernel's Σ (each term off by U32·(|x − m| + 3)). */
function rowStats(x: Float32Array, o: number, n: number): { m: number; s: number; relS: number } {
  let m = -Infinity;
  for (let j = 0; j < n; j++) m = Math.max(m, x[o + j]!);
  const e = Array.from({ length: n }, (_, j) => Math.exp(x[o + j]! - m));
  const s = e.reduce((a, v) => a + v, 0);
  let inTerms = 0;
  for (let j = 0; j < n; j++) inTerms += e[j]! * U32 * (Math.abs(x[o + j]! - m) + 3);
  return { m, s, relS: (treeSumBound(e) + inTerms) / s };
}

describe('row WGSL kernels', { timeout: 300_000 }, () => {
  const { ks, host } = webgpuForSuite();

  test('softmax, log-softmax and their backward passes, up to a vocabulary of 131072', () => {
    for (const [rows, n] of [[3, 37], [4, 1000], [2, 131072]] as const) {
      const x = randomF32(rows * n, n, -8, 8), gy = randomF32(rows * n, n + 1);
      const y = new Float32Array(rows * n), y0 = new Float32Array(rows * n);
      ks().softmax!(x, rows, n, y);
      host(y);
      jsKernels.softmax(x, rows, n, y0);
      const bS = new Float64Array(rows * n), bL = new Float64Array(rows * n);
      const l0 = new Float32Array(rows * n);
      jsKernels.logSoftmax(x, rows, n, l0);
      for (let r = 0; r < rows; r++) {
        const o = r * n, { m, s, relS } = rowStats(x, o, n), lse = m + Math.log(s);
        for (let j = 0; j < n; j++) {
          // y = exp_(x − m)·(1/s): the difference and exp_, 1/s (2.5 ulp), the product, the reference; s's error.
          bS[o + j] = SLACK * y0[o + j]! * (U32 * (Math.abs(x[o + j]! - m) + 3 + 2.5 + 1 + 1) + relS);
          // y = x − (m + log_ s): log_ (3 ulp) and s's error, the two additions, the reference.
          bL[o + j] = SLACK * (relS + U32 * (3 * Math.abs(Math.log(s)) + Math.abs(lse) + 2 * Math.abs(l0[o + j]!)));
        }
      }
      expectWithin(y, y0, bS, `softmax [${rows}, ${n}]`);
      const l = new Float32Array(rows * n);
      ks().logSoftmax!(x, rows, n, l);
      host(l);
      expectWithin(l, l0, bL, `logSoftmax [${rows}, ${n}]`);

      const gx = new Float32Array(rows * n), gx0 = new Float32Array(rows * n);
      ks().softmaxBackward!(y0, gy, rows, n, gx);
      host(gx);
      jsKernels.softmaxBackward(y0, gy, rows, n, gx0);
      const bB = new Float64Array(rows * n);
      for (let r = 0; r < rows; r++) {
        const o = r * n, eD = treeSumBound(Array.from({ length: n }, (_, j) => gy[o + j]! * y0[o + j]!), 1);
        for (let j = 0; j < n; j++) bB[o + j] = SLACK * (y0[o + j]! * eD + 3 * U32 * Math.abs(gx0[o + j]!));
      }
      expectWithin(gx, gx0, bB, `softmaxBackward [${rows}, ${n}]`);

      const lg = new Float32Array(rows * n), lg0 = new Float32Array(rows * n);
      ks().logSoftmaxBackward!(l0, gy, rows, n, lg);
      host(lg);
      jsKernels.logSoftmaxBackward(l0, gy, rows, n, lg0);
      const bLB = new Float64Array(rows * n);
      for (let r = 0; r < rows; r++) {
        const o = r * n, row = gy.subarray(o, o + n), sg = row.reduce((a, v) => a + v, 0), eS = treeSumBound(row);
        for (let j = 0; j < n; j++) bLB[o + j] = SLACK * (Math.exp(l0[o + j]!) * (eS + 4 * U32 * Math.abs(sg)) + 2 * U32 * Math.abs(lg0[o + j]!));
      }
      expectWithin(lg, lg0, bLB, `logSoftmaxBackward [${rows}, ${n}]`);
    }
  });

  test('cross-entropy forward and backward, weighted and not, with ignored rows, over V = 131072', () => {
    for (const [rows, V] of [[6, 300], [3, 131072]] as const) {
      const x = randomF32(rows * V, V, -6, 6);
      const t = randomI32(rows, V, 0, V);
      t[1] = -100;
      for (const weights of [null, Float32Array.of(1, 0.5, 0, 2, 1, 0.25).subarray(0, rows)]) {
        const loss = new Float32Array(rows), lse = new Float32Array(rows), loss0 = new Float32Array(rows), lse0 = new Float32Array(rows);
        ks().crossEntropy!(x, t, weights, rows, V, loss, lse);
        host(loss, lse);
        jsKernels.crossEntropy(x, t, weights, rows, V, loss0, lse0);
        const bLse = new Float64Array(rows), bLoss = new Float64Array(rows);
        for (let r = 0; r < rows; r++) {
          const { s, relS } = rowStats(x, r * V, V);
          const eL = relS + U32 * (3 * Math.abs(Math.log(s)) + 2 * Math.abs(lse0[r]!));
          bLse[r] = SLACK * eL;
          const w = t[r]! < 0 ? 0 : weights?.[r] ?? 1;
          bLoss[r] = SLACK * (w * (eL + U32 * Math.abs(lse0[r]! - x[r * V + Math.max(0, t[r]!)]!)) + 2 * U32 * Math.abs(loss0[r]!));
        }
        expectWithin(lse, lse0, bLse, `lse [${rows}, ${V}]`);
        expectWithin(loss, loss0, bLoss, `loss [${rows}, ${V}]`);
        const g = randomF32(rows, 3, 0.5, 1.5);
        const gl = new Float32Array(rows * V), gl0 = new Float32Array(rows * V);
        ks().crossEntropyBackward!(x, t, weights, lse0, g, rows, V, gl);
        host(gl);
        jsKernels.crossEntropyBackward(x, t, weights, lse0, g, rows, V, gl0);
        const bG = Float64Array.from(gl0, (v, i) => {
          const r = Math.floor(i / V), w = t[r]! < 0 ? 0 : (weights?.[r] ?? 1) * g[r]!;
          const p = Math.exp(x[i]! - lse0[r]!);
          // w·exp_(x − L) (the difference, exp_, the product; w itself rounds once), minus w at the target.
          return SLACK * (Math.abs(w) * p * U32 * (Math.abs(x[i]! - lse0[r]!) + 3 + 2) + 2 * U32 * Math.abs(v));
        });
        expectWithin(gl, gl0, bG, `crossEntropyBackward [${rows}, ${V}]`);
      }
    }
  });

  test('RMSNorm forward and backward', () => {
    for (const [rows, n] of [[5, 48], [3, 4096]] as const) {
      const x = randomF32(rows * n, n), w = randomF32(n, n + 1), gy = randomF32(rows * n, n + 2), eps = 1e-5;
      const out = new Float32Array(rows * n), rstd = new Float32Array(rows), out0 = new Float32Array(rows * n), rstd0 = new Float32Array(rows);
      ks().rmsnorm!(x, w, rows, n, eps, out, rstd);
      host(out, rstd);
      jsKernels.rmsnorm(x, w, rows, n, eps, out0, rstd0);
      const bR = new Float64Array(rows), bO = new Float64Array(rows * n);
      for (let r = 0; r < rows; r++) {
        const sq = Array.from(x.subarray(r * n, r * n + n), (v) => v * v), ss = sq.reduce((a, v) => a + v, 0);
        // The sum of squares (halved by the square root), /n (2.5 ulp), +eps, inverseSqrt (2 ulp), the reference's rounding.
        const rel = treeSumBound(sq, 1) / (2 * (ss + n * eps)) + 6.5 * U32;
        bR[r] = SLACK * rstd0[r]! * rel;
        for (let j = 0; j < n; j++) bO[r * n + j] = SLACK * Math.abs(out0[r * n + j]!) * (rel + 3 * U32);
      }
      expectWithin(rstd, rstd0, bR, `rstd [${rows}, ${n}]`);
      expectWithin(out, out0, bO, `rmsnorm [${rows}, ${n}]`);
      const gx = new Float32Array(rows * n), gw = new Float32Array(n), gx0 = new Float32Array(rows * n), gw0 = new Float32Array(n);
      ks().rmsnormBackward!(x, w, rstd0, gy, rows, n, gx, gw);
      host(gx, gw);
      jsKernels.rmsnormBackward(x, w, rstd0, gy, rows, n, gx0, gw0);
      const bGx = new Float64Array(rows * n);
      for (let r = 0; r < rows; r++) {
        const rs = rstd0[r]!, o = r * n;
        const pr = Array.from({ length: n }, (_, j) => w[j]! * gy[o + j]! * x[o + j]!), dot = pr.reduce((a, v) => a + v, 0);
        const c = (dot * rs ** 3) / n, eC = (rs ** 3 / n) * (treeSumBound(pr, 2) + 6 * U32 * Math.abs(dot));
        for (let j = 0; j < n; j++) {
          const a = Math.abs(rs * w[j]! * gy[o + j]!), xj = Math.abs(x[o + j]!);
          bGx[o + j] = SLACK * (2 * U32 * a + xj * eC + U32 * xj * Math.abs(c) + 2 * U32 * Math.abs(gx0[o + j]!));
        }
      }
      expectWithin(gx, gx0, bGx, `rmsnormBackward gx [${rows}, ${n}]`);
      const bGw = Float64Array.from({ length: n }, (_, j) => SLACK * 2 * sumErrorBound(Array.from({ length: rows }, (_, r) => gy[r * n + j]! * x[r * n + j]! * rstd0[r]!), 2));
      expectWithin(gw, gw0, bGw, `rmsnormBackward gw [${rows}, ${n}]`);
    }
  });

  test('sum and max/argmax over [outer, n, inner], with a NaN first and ties', () => {
    for (const [outer, n, inner] of [[3, 70, 1], [2, 9, 5], [2, 5000, 1], [1, 3, 300]] as const) {
      const x = randomF32(outer * n * inner, outer + n);
      x[inner + 1] = x[1]!;
      const s = new Float32Array(outer * inner), s0 = new Float32Array(outer * inner);
      ks().sum!(x, outer, n, inner, s);
      host(s);
      jsKernels.sum(x, outer, n, inner, s0);
      const bound = Float64Array.from(s0, (v, t) => {
        const o = Math.floor(t / inner), i = t % inner;
        const terms = Array.from({ length: n }, (_, j) => x[(o * n + j) * inner + i]!);
        return SLACK * ((inner === 1 ? treeSumBound(terms) : sumErrorBound(terms)) + U32 * Math.abs(v));
      });
      expectWithin(s, s0, bound, `sum [${outer}, ${n}, ${inner}]`);
      x[0] = NaN;
      const m = new Float32Array(outer * inner), arg = new Int32Array(outer * inner), m0 = new Float32Array(outer * inner), arg0 = new Int32Array(outer * inner);
      ks().max!(x, outer, n, inner, m, arg);
      host(m, arg);
      jsKernels.max(x, outer, n, inner, m0, arg0);
      expect(Array.from(m)).toEqual(Array.from(m0));
      expect(Array.from(arg)).toEqual(Array.from(arg0));
    }
  });
});
