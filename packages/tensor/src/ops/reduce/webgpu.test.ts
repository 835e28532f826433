// The reduction WGSL kernels against the reference kernels, within bounds derived from their float32
// operations: each row's sums are per-thread strided sums and a two-level workgroup sum
// (`treeSumBound`), exp_/log_ within 3 ulp, WGSL's division within 2.5 ulp, inverseSqrt 2 ulp.
import { describe, expect, test } from 'vitest';
import { expectWithin, randomF32, randomI32, SLACK, sumErrorBound, treeSumBound, U32 } from '../../kernels/float-testing';
import { webgpuForSuite } from '../../webgpu/testing';
import * as reference from './reference';
import { max, sum, sumSquares } from './webgpu';
import { scaleBy } from '../elementwise/webgpu';
import * as elementwise from '../elementwise/reference';

describe('reduction WGSL kernels', { timeout: 600_000 }, () => {
  const { run, host, ctx } = webgpuForSuite();

  test('sum and max/argmax over [outer, n, inner], with a NaN first and ties', () => {
    for (const [outer, n, inner] of [[3, 70, 1], [2, 9, 5], [2, 5000, 1], [1, 3, 300]] as const) {
      const x = randomF32(outer * n * inner, outer + n);
      x[inner + 1] = x[1]!;
      const s = new Float32Array(outer * inner), s0 = new Float32Array(outer * inner);
      run(sum)(x, outer, n, inner, s);
      host(s);
      reference.sum(x, outer, n, inner, s0);
      const bound = Float64Array.from(s0, (v, t) => {
        const o = Math.floor(t / inner), i = t % inner;
        const terms = Array.from({ length: n }, (_, j) => x[(o * n + j) * inner + i]!);
        return SLACK * ((inner === 1 ? treeSumBound(terms) : sumErrorBound(terms)) + U32 * Math.abs(v));
      });
      expectWithin(s, s0, bound, `sum [${outer}, ${n}, ${inner}]`);
      x[0] = NaN;
      const m = new Float32Array(outer * inner), arg = new Int32Array(outer * inner), m0 = new Float32Array(outer * inner), arg0 = new Int32Array(outer * inner);
      run(max)(x, outer, n, inner, m, arg);
      host(m, arg);
      reference.max(x, outer, n, inner, m0, arg0);
      expect(Array.from(m)).toEqual(Array.from(m0));
      expect(Array.from(arg)).toEqual(Array.from(arg0));
    }
  });
  test('sumSquares accumulates in place or into a new value; scaleBy in place and not', () => {
    for (const n of [0, 1, 300, 100_000]) {
      const x = randomF32(n, n + 1);
      const sq = Array.from(x, (v) => v * v), exact = sq.reduce((a, v) => a + v, 0);
      // Two passes of workgroup sums: every square through ⌈n/threads⌉ + 32 + ⌈groups/256⌉ + 32 additions.
      const groups = Math.max(1, Math.min(1024, Math.ceil(n / 4096)));
      const bound = (acc: number) => SLACK * (U32 * (1 + Math.ceil(n / (256 * groups)) + 64 + Math.ceil(groups / 256)) * exact + U32 * (exact + acc));
      const acc = Float32Array.of(2.5);
      run(sumSquares)(x, acc, acc);
      host(acc);
      expectWithin(acc, [2.5 + exact], [bound(2.5)], `sumSquares in place n=${n}`);
      const out = new Float32Array(1);
      run(sumSquares)(x, null, out);
      host(out);
      expectWithin(out, [exact], [bound(0)], `sumSquares n=${n}`);
      const y = new Float32Array(n), y0 = new Float32Array(n);
      run(scaleBy)(x, 0.3, y);
      host(y);
      elementwise.scaleBy(x, 0.3, y0);
      expectWithin(y, y0, Float64Array.from(y0, (v) => SLACK * 3 * U32 * Math.abs(v)), 'scaleBy');
      run(scaleBy)(x, 0.3, x);
      host(x);
      expectWithin(x, y0, Float64Array.from(y0, (v) => SLACK * 3 * U32 * Math.abs(v)), 'scaleBy in place');
    }
  });

});
