// The RMSNorm WGSL kernels against the reference kernels, within bounds derived from their float32
// operations: each row's sums are per-thread strided sums and a two-level workgroup sum
// (`treeSumBound`), exp_/log_ within 3 ulp, WGSL's division within 2.5 ulp, inverseSqrt 2 ulp.
import { describe, expect, test } from 'vitest';
import { expectWithin, randomF32, randomI32, SLACK, sumErrorBound, treeSumBound, U32 } from '../../kernels/float-testing';
import { webgpuForSuite } from '../../webgpu/testing';
import * as reference from './reference';
import { rmsnorm, rmsnormBackward } from './webgpu';

describe('RMSNorm WGSL kernels', { timeout: 600_000 }, () => {
  const { run, host, ctx } = webgpuForSuite();

  test('RMSNorm forward and backward', () => {
    for (const [rows, n] of [[5, 48], [3, 4096]] as const) {
      const x = randomF32(rows * n, n), w = randomF32(n, n + 1), gy = randomF32(rows * n, n + 2), eps = 1e-5;
      const out = new Float32Array(rows * n), rstd = new Float32Array(rows), out0 = new Float32Array(rows * n), rstd0 = new Float32Array(rows);
      run(rmsnorm)(x, w, rows, n, eps, out, rstd);
      host(out, rstd);
      reference.rmsnorm(x, w, rows, n, eps, out0, rstd0);
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
      run(rmsnormBackward)(x, w, rstd0, gy, rows, n, gx, gw);
      host(gx, gw);
      reference.rmsnormBackward(x, w, rstd0, gy, rows, n, gx0, gw0);
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

});
