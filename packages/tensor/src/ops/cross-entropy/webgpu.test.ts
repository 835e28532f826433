// The cross-entropy WGSL kernels against the reference kernels, within bounds derived from their float32
// operations: each row's sums are per-thread strided sums and a two-level workgroup sum
// (`treeSumBound`), exp_/log_ within 3 ulp, WGSL's division within 2.5 ulp, inverseSqrt 2 ulp.
import { describe, expect, test } from 'vitest';
import { expectWithin, randomF32, randomI32, SLACK, sumErrorBound, treeSumBound, U32 } from '../../kernels/float-testing';
import { webgpuForSuite } from '../../webgpu/testing';
import * as reference from './reference';
import { crossEntropy, crossEntropyBackward } from './webgpu';

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


describe('cross-entropy WGSL kernels', { timeout: 600_000 }, () => {
  const { run, host, ctx } = webgpuForSuite();

  test('cross-entropy forward and backward, weighted and not, with ignored rows, over V = 131072', () => {
    for (const [rows, V] of [[6, 300], [3, 131072]] as const) {
      const x = randomF32(rows * V, V, -6, 6);
      const t = randomI32(rows, V, 0, V);
      t[1] = -100;
      for (const weights of [null, Float32Array.of(1, 0.5, 0, 2, 1, 0.25).subarray(0, rows)]) {
        const loss = new Float32Array(rows), lse = new Float32Array(rows), loss0 = new Float32Array(rows), lse0 = new Float32Array(rows);
        run(crossEntropy)(x, t, weights, rows, V, loss, lse);
        host(loss, lse);
        reference.crossEntropy(x, t, weights, rows, V, loss0, lse0);
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
        run(crossEntropyBackward)(x, t, weights, lse0, g, rows, V, gl);
        host(gl);
        reference.crossEntropyBackward(x, t, weights, lse0, g, rows, V, gl0);
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

});
