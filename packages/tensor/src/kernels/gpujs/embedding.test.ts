// gpu.js embedding (+ scatter-add backward), rope and cross-entropy kernels against the JS reference kernels.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { kernelSet } from '../types';
import { createGpujsKernels } from './index';
import { expectAllRanIn, expectClose, expectWithin, randomF32, randomI32, SLACK, sumErrorBound, U32 } from './testing';

const jsKernels = kernelSet('reference');


/**
 * Scatter-add in the cpu mode (a float64 accumulator rounded once) or on a GPU (whose float32 adds
 * may be fused or reordered by the shader compiler) against the reference's float32 partial sums:
 * the reference's sum error (its tokens' rows, in token order) plus one rounding.
 */
function scatterBound(ids: Int32Array, gy: Float32Array, H: number, gt0: Float32Array): Float64Array {
  const b = new Float64Array(gt0.length);
  for (let c = 0; c < gt0.length; c++) {
    const v = Math.floor(c / H), j = c % H;
    const terms: number[] = [];
    for (let t = 0; t < ids.length; t++) if (ids[t] === v) terms.push(gy[t * H + j]!);
    b[c] = SLACK * (sumErrorBound(terms) + U32 * Math.abs(gt0[c]!));
  }
  return b;
}

/** rope out = x1·cos ∓ x2·sin from the same float32 table: two products and a sum (3 roundings), and the reference's. */
function ropeBound(x: Float32Array, N: number, heads: number, d: number, positions: Int32Array, invFreq: Float32Array, out0: Float32Array): Float64Array {
  const half = d / 2;
  const b = new Float64Array(x.length);
  for (let t = 0; t < N; t++) {
    for (let i = 0; i < half; i++) {
      const angle = Math.fround(invFreq[i]! * positions[t]!);
      const c = Math.abs(Math.fround(Math.cos(angle))), sn = Math.abs(Math.fround(Math.sin(angle)));
      for (let h = 0; h < heads; h++) {
        const o = (t * heads + h) * d + i;
        const x1 = Math.abs(x[o]!), x2 = Math.abs(x[o + half]!);
        b[o] = SLACK * U32 * (x1 * c + x2 * sn + 2 * Math.abs(out0[o]!));
        b[o + half] = SLACK * U32 * (x2 * c + x1 * sn + 2 * Math.abs(out0[o + half]!));
      }
    }
  }
  return b;
}

/**
 * Cross-entropy, per row with m = max, s = Σ exp(z − m), p = softmax(z): the kernel's Kahan sum of
 * float32 exponentials is off by relS = U32·(2 + Σ_j p_j·(|z_j − m| + 1)) relative, which is
 * log s's absolute error; lse = m + log s adds U32·|log s| and U32·|lse| (+ the reference's rounding);
 * loss = w·((m − z_t) + log s) adds U32 on the difference, the sum, the product and the reference's rounding.
 */
function crossEntropyBound(logits: Float32Array, targets: Int32Array, weights: Float32Array | null, rows: number, V: number, lse0: Float32Array, loss0: Float32Array): { lse: Float64Array; loss: Float64Array } {
  const lse = new Float64Array(rows);
  const loss = new Float64Array(rows);
  for (let r = 0, o = 0; r < rows; r++, o += V) {
    let m = -Infinity;
    for (let j = 0; j < V; j++) m = Math.max(m, logits[o + j]!);
    let s = 0;
    for (let j = 0; j < V; j++) s += Math.exp(logits[o + j]! - m);
    let relS = 2 * U32;
    for (let j = 0; j < V; j++) relS += U32 * (Math.exp(logits[o + j]! - m) / s) * (Math.abs(logits[o + j]! - m) + 1);
    const logS = Math.log(s);
    lse[r] = SLACK * (relS + U32 * (Math.abs(logS) + 2 * Math.abs(lse0[r]!)));
    const t = targets[r]!;
    const w = Math.abs(weights === null ? 1 : weights[r]!);
    loss[r] = t < 0 ? 0 : SLACK * (w * (relS + U32 * (Math.abs(m - logits[o + t]!) + Math.abs(logS))) + 3 * U32 * Math.abs(loss0[r]!));
  }
  return { lse, loss };
}

/**
 * Cross-entropy backward gl_j = w·exp(z_j − lse) − [j = t]·w with w = weight·g: the rounded
 * z_j − lse (U32·|z_j − lse| relative through exp), exp, w and the product (3·U32, + the
 * reference's rounding of w·p), U32·|w| for w at the target, and the subtraction on both sides.
 */
function crossEntropyBackwardBound(logits: Float32Array, targets: Int32Array, weights: Float32Array | null, lse: Float32Array, g: Float32Array, rows: number, V: number, gl0: Float32Array): Float64Array {
  const b = new Float64Array(rows * V);
  for (let r = 0, o = 0; r < rows; r++, o += V) {
    const t = targets[r]!;
    const w = t < 0 ? 0 : Math.abs((weights === null ? 1 : weights[r]!) * g[r]!);
    for (let j = 0; j < V; j++) {
      const d = logits[o + j]! - lse[r]!;
      b[o + j] = SLACK * (w * (Math.exp(d) * U32 * (Math.abs(d) + 4) + (j === t ? U32 : 0)) + 2 * U32 * Math.abs(gl0[o + j]!));
    }
  }
  return b;
}

for (const mode of ['webasm', 'cpu'] as const) {
  describe(`embedding, rope, cross-entropy (${mode})`, () => {
    const ks = createGpujsKernels(mode);
    afterAll(() => ks.dispose());
    const runs = mode === 'cpu' ? 4 : 10;

    it('embedding gather and scatter-add backward with repeated ids (property)', () => {
      fc.assert(fc.property(
        fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 17 }), fc.nat(),
        (V, N, H, seed) => {
          const table = randomF32(V * H, seed);
          // Draw ids from a small range so repeats (the scatter-add case) are common.
          const ids = randomI32(N, seed + 1, 0, Math.min(V, 1 + (seed % 6)));
          const out = new Float32Array(N * H);
          const out0 = new Float32Array(N * H);
          ks.embedding(ids, table, H, out);
          jsKernels.embedding(ids, table, H, out0);
          expect(Array.from(out)).toEqual(Array.from(out0));
          const gy = randomF32(N * H, seed + 2);
          // Random initial contents: the kernel overwrites every cell.
          const gt = randomF32(V * H, seed + 3);
          const gt0 = randomF32(V * H, seed + 4);
          ks.embeddingBackward(ids, gy, H, gt);
          jsKernels.embeddingBackward(ids, gy, H, gt0);
          // Same float32 additions in the same (token) order as the reference on webasm: exact.
          if (mode === 'webasm') expect(Array.from(gt)).toEqual(Array.from(gt0));
          else expectWithin(gt, gt0, scatterBound(ids, gy, H, gt0), 'gtable');
        },
      ), { numRuns: runs });
    });

    it('rope forward and inverse on random shapes, positions up to 131071 (property)', () => {
      fc.assert(fc.property(
        fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 12 }), fc.boolean(), fc.nat(),
        (N, heads, half, inverse, seed) => {
          const d = 2 * half;
          const x = randomF32(N * heads * d, seed);
          const positions = randomI32(N, seed + 1, 0, 131072);
          // llama3-style inverse frequencies, theta = 12e6
          const invFreq = Float32Array.from({ length: half }, (_, i) => 12e6 ** (-(2 * i) / d));
          const out = new Float32Array(x.length);
          const out0 = new Float32Array(x.length);
          ks.rope(x, N, heads, d, positions, invFreq, inverse, out);
          jsKernels.rope(x, N, heads, d, positions, invFreq, inverse, out0);
          expectWithin(out, out0, ropeBound(x, N, heads, d, positions, invFreq, out0), 'rope');
        },
      ), { numRuns: runs });
    });

    it('rope: the inverse rotation undoes the forward one', () => {
      const N = 3, heads = 2, d = 8;
      const x = randomF32(N * heads * d, 7);
      const positions = Int32Array.from([0, 17, 4000]);
      const invFreq = Float32Array.from({ length: 4 }, (_, i) => 10000 ** (-(2 * i) / d));
      const y = new Float32Array(x.length);
      const back = new Float32Array(x.length);
      ks.rope(x, N, heads, d, positions, invFreq, false, y);
      ks.rope(y, N, heads, d, positions, invFreq, true, back);
      expectClose(back, x, 'inverse(forward(x))', 0, 2e-6);
      expectClose(y.subarray(0, d), x.subarray(0, d), 'position 0 is the identity', 0, 0);
    });

    it('cross-entropy forward and backward with weights and ignored rows (property)', () => {
      fc.assert(fc.property(
        fc.integer({ min: 1, max: 7 }), fc.integer({ min: 1, max: 200 }), fc.boolean(), fc.nat(),
        (rows, V, weighted, seed) => {
          const logits = randomF32(rows * V, seed, -6, 6);
          const targets = randomI32(rows, seed + 1, -1, V); // -1 = ignore index
          const weights = weighted ? randomF32(rows, seed + 2, 0, 2) : null;
          if (weights !== null) weights[0] = 0;
          const loss = new Float32Array(rows);
          const lse = new Float32Array(rows);
          const loss0 = new Float32Array(rows);
          const lse0 = new Float32Array(rows);
          ks.crossEntropy(logits, targets, weights, rows, V, loss, lse);
          jsKernels.crossEntropy(logits, targets, weights, rows, V, loss0, lse0);
          const bound = crossEntropyBound(logits, targets, weights, rows, V, lse0, loss0);
          expectWithin(lse, lse0, bound.lse, 'lse');
          expectWithin(loss, loss0, bound.loss, 'loss');
          const g = randomF32(rows, seed + 3, 0.5, 1.5);
          const gl = new Float32Array(rows * V);
          const gl0 = new Float32Array(rows * V);
          ks.crossEntropyBackward(logits, targets, weights, lse0, g, rows, V, gl);
          jsKernels.crossEntropyBackward(logits, targets, weights, lse0, g, rows, V, gl0);
          expectWithin(gl, gl0, crossEntropyBackwardBound(logits, targets, weights, lse0, g, rows, V, gl0), 'glogits');
        },
      ), { numRuns: runs });
    });

    it('cross-entropy gradient rows sum to zero and ignored rows are exactly zero', () => {
      const rows = 3, V = 50;
      const logits = randomF32(rows * V, 9);
      const targets = Int32Array.from([4, -1, 49]);
      const loss = new Float32Array(rows);
      const lse = new Float32Array(rows);
      ks.crossEntropy(logits, targets, null, rows, V, loss, lse);
      expect(loss[1]).toBe(0);
      const gl = new Float32Array(rows * V);
      ks.crossEntropyBackward(logits, targets, null, lse, new Float32Array(rows).fill(1), rows, V, gl);
      expect(gl.subarray(V, 2 * V).every((v) => v === 0)).toBe(true);
      for (const r of [0, 2]) {
        let s = 0;
        for (let j = 0; j < V; j++) s += gl[r * V + j]!;
        expect(Math.abs(s)).toBeLessThan(1e-6);
      }
    });

    it(`ran every kernel in ${mode} (no silent fallback)`, () => expectAllRanIn(ks, mode, 6));
  });
}
