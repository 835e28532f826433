// gpu.js embedding (+ scatter-add backward), rope and cross-entropy kernels against the JS reference kernels.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { jsKernels } from '../js/index';
import { createGpujsKernels } from './index';
import { expectAllRanIn, expectClose, randomF32, randomI32 } from './testing';

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
          const gt = randomF32(V * H, seed + 3);
          const gt0 = gt.slice();
          ks.embeddingBackward(ids, gy, H, gt);
          jsKernels.embeddingBackward(ids, gy, H, gt0);
          // Same float32 additions in the same (token) order as the reference on webasm.
          expectClose(gt, gt0, 'gtable', mode === 'webasm' ? 0 : 1e-6, mode === 'webasm' ? 0 : 1e-6);
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
          expectClose(out, out0, 'rope', 0, 1e-6);
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
          expectClose(lse, lse0, 'lse', 1e-6, 1e-6);
          expectClose(loss, loss0, 'loss', 1e-5, 2e-6);
          const g = randomF32(rows, seed + 3, 0.5, 1.5);
          const gl = new Float32Array(rows * V);
          const gl0 = new Float32Array(rows * V);
          ks.crossEntropyBackward(logits, targets, weights, lse0, g, rows, V, gl);
          jsKernels.crossEntropyBackward(logits, targets, weights, lse0, g, rows, V, gl0);
          // The target's gradient is g·(p − 1) with p ≤ 1: its rounding is float32's ulp of 1 (2⁻²³ ≈ 1.19e-7,
          // times g ≤ 1.5), which a 1e-7 absolute floor did not allow (seed 672371764 hit exactly one ulp).
          expectClose(gl, gl0, 'glogits', 1e-5, 2 * 2 ** -23);
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
