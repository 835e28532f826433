// The softmax WGSL kernels against the reference kernels, within bounds derived from their float32
// operations: each row's sums are per-thread strided sums and a two-level workgroup sum
// (`treeSumBound`), exp_/log_ within 3 ulp, WGSL's division within 2.5 ulp, inverseSqrt 2 ulp.
import { describe, expect, test } from 'vitest';
import { expectWithin, randomF32, randomI32, SLACK, sumErrorBound, treeSumBound, U32 } from '../../kernels/float-testing';
import { webgpuForSuite } from '../../webgpu/testing';
import * as reference from './reference';
import { logSoftmax, logSoftmaxBackward, softmax, softmaxBackward } from './webgpu';

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


describe('softmax WGSL kernels', { timeout: 600_000 }, () => {
  const { run, host, ctx } = webgpuForSuite();

  test('softmax, log-softmax and their backward passes, up to a vocabulary of 131072', () => {
    for (const [rows, n] of [[3, 37], [4, 1000], [2, 131072]] as const) {
      const x = randomF32(rows * n, n, -8, 8), gy = randomF32(rows * n, n + 1);
      const y = new Float32Array(rows * n), y0 = new Float32Array(rows * n);
      run(softmax)(x, rows, n, y);
      host(y);
      reference.softmax(x, rows, n, y0);
      const bS = new Float64Array(rows * n), bL = new Float64Array(rows * n);
      const l0 = new Float32Array(rows * n);
      reference.logSoftmax(x, rows, n, l0);
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
      run(logSoftmax)(x, rows, n, l);
      host(l);
      expectWithin(l, l0, bL, `logSoftmax [${rows}, ${n}]`);

      const gx = new Float32Array(rows * n), gx0 = new Float32Array(rows * n);
      run(softmaxBackward)(y0, gy, rows, n, gx);
      host(gx);
      reference.softmaxBackward(y0, gy, rows, n, gx0);
      const bB = new Float64Array(rows * n);
      for (let r = 0; r < rows; r++) {
        const o = r * n, eD = treeSumBound(Array.from({ length: n }, (_, j) => gy[o + j]! * y0[o + j]!), 1);
        for (let j = 0; j < n; j++) bB[o + j] = SLACK * (y0[o + j]! * eD + 3 * U32 * Math.abs(gx0[o + j]!));
      }
      expectWithin(gx, gx0, bB, `softmaxBackward [${rows}, ${n}]`);

      const lg = new Float32Array(rows * n), lg0 = new Float32Array(rows * n);
      run(logSoftmaxBackward)(l0, gy, rows, n, lg);
      host(lg);
      reference.logSoftmaxBackward(l0, gy, rows, n, lg0);
      const bLB = new Float64Array(rows * n);
      for (let r = 0; r < rows; r++) {
        const o = r * n, row = gy.subarray(o, o + n), sg = row.reduce((a, v) => a + v, 0), eS = treeSumBound(row);
        for (let j = 0; j < n; j++) bLB[o + j] = SLACK * (Math.exp(l0[o + j]!) * (eS + 4 * U32 * Math.abs(sg)) + 2 * U32 * Math.abs(lg0[o + j]!));
      }
      expectWithin(lg, lg0, bLB, `logSoftmaxBackward [${rows}, ${n}]`);
    }
  });

});
