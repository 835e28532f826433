import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Tensor } from '@apertus/tensor';
import { wasm as wasmKernels } from '@apertus/tensor/kernels';
import { softplus } from './math';
import { xieluBackwardJs, xieluForwardJs } from './reference';
import { xieluBackwardSimd, xieluForwardSimd, xieluSimdAvailable } from './cpu';

// Error bounds, per element, in units of u = 2⁻²⁴ (float32 unit roundoff) against the float64
// reference rounded once: the SIMD expm1 is within 4u·|expm1| (measured worst 1.33u on
// [−2·10⁴, −10⁻¹³]); each f32 operation adds at most u of its operands' magnitudes; αp, αn are
// rounded to f32 (u each). A floor of 2⁻¹⁴⁶ covers results in the subnormal range.
const u = 2 ** -24, floor = 2 ** -146;
const f = Math.fround;

const scalars = fc.record({
  a_p: fc.double({ min: -3, max: 3, noNaN: true }),
  a_n: fc.double({ min: -3, max: 3, noNaN: true }),
  beta: fc.float({ min: 0, max: 1, noNaN: true }),
  eps: fc.float({ min: f(-1e-3), max: f(-1e-9), noNaN: true }),
});
// |x| ≤ 1e4 keeps every f32 intermediate finite; fc.float also yields ±0, subnormals and ε itself.
const values = (n: number) => fc.array(fc.float({ min: -1e4, max: 1e4, noNaN: true }), { minLength: 0, maxLength: n });
const RUNS = 200;

describe('xIELU in WebAssembly SIMD against the float64 reference', () => {
  test('is available here (WebAssembly SIMD)', () => {
    expect(xieluSimdAvailable()).toBe(true);
  });

  test('forward: every element within its error bound', () => {
    fc.assert(fc.property(values(41), scalars, (xsIn, { a_p, a_n, beta, eps }) => {
      const xs = Float32Array.from([...xsIn, eps, -0, 0]);
      const ap = softplus(a_p), an = beta + softplus(a_n);
      const ref = new Float32Array(xs.length), got = new Float32Array(xs.length);
      xieluForwardJs(xs, ref, ap, an, beta, eps);
      xieluForwardSimd(xs, got, ap, an, beta, eps);
      for (let i = 0; i < xs.length; i++) {
        const v = xs[i]!;
        const scale = v > 0 ? Math.abs(v) * (ap * Math.abs(v) + beta) : an * (Math.abs(Math.expm1(Math.min(v, eps))) + Math.abs(v)) + beta * Math.abs(v);
        const tol = (v > 0 ? 8 : 12) * u * scale + floor;
        if (!(Math.abs(got[i]! - ref[i]!) <= tol)) throw new Error(`x=${v}: ${got[i]} vs ${ref[i]} (tolerance ${tol})`);
      }
    }), { numRuns: RUNS });
  });

  test('backward: gx per element and the two parameter sums within their error bounds', () => {
    fc.assert(fc.property(values(41), scalars, fc.integer({ min: 0, max: 2 ** 31 - 1 }), (xsIn, { a_p, a_n, beta, eps }, seed) => {
      const xs = Float32Array.from([...xsIn, eps, -0, 0]);
      let s = seed | 1;
      const gy = xs.map(() => { s ^= s << 13; s ^= s >>> 17; s ^= s << 5; return f((s >>> 0) / 2 ** 31 - 1); });
      const ap = softplus(a_p), an = beta + softplus(a_n);
      const ref = new Float32Array(xs.length), got = new Float32Array(xs.length);
      const [rp, rn] = xieluBackwardJs(xs, gy, ref, ap, an, beta, eps);
      const [gp, gn] = xieluBackwardSimd(xs, gy, got, ap, an, beta, eps);
      let sumP = 0, sumN = 0;
      for (let i = 0; i < xs.length; i++) {
        const v = xs[i]!, g = Math.abs(gy[i]!), em1 = Math.abs(Math.expm1(Math.min(v, eps)));
        const tol = floor + (v > 0 ? 8 * u * g * (2 * ap * Math.abs(v) + beta) : v <= eps ? 8 * u * g * (an * em1 + beta) : 4 * u * g * (beta + an));
        if (!(Math.abs(got[i]! - ref[i]!) <= tol)) throw new Error(`x=${v}, g=${gy[i]}: ${got[i]} vs ${ref[i]} (tolerance ${tol})`);
        if (v > 0) sumP += g * v * v; else sumN += g * (em1 + Math.abs(v));
      }
      // f64 sums in another order: (n + 2)·2⁻⁵³ of Σ|terms|; Σn also carries expm1's 4u.
      const n = xs.length + 2;
      expect(Math.abs(gp - rp)).toBeLessThanOrEqual(n * 2 ** -53 * sumP);
      expect(Math.abs(gn - rn)).toBeLessThanOrEqual((4 * u + n * 2 ** -53) * sumN + floor);
    }), { numRuns: RUNS });
  });

  test('the same bits whether the arrays live on the cpu heap or are staged', () => {
    const n = 1003;
    const xs = Float32Array.from({ length: n }, (_, i) => f(Math.sin(i * 12.9898) * 8));
    const gy = Float32Array.from({ length: n }, (_, i) => f(Math.cos(i * 78.233)));
    const hx = Tensor.zeros([n]).data, hg = Tensor.zeros([n]).data, hy = Tensor.zeros([n]).data, hgx = Tensor.zeros([n]).data;
    hx.set(xs); hg.set(gy);
    expect(wasmKernels.heapAddress(hx)).toBeGreaterThanOrEqual(0);
    expect(wasmKernels.heapAddress(xs)).toBe(-1);
    const y = new Float32Array(n), gx = new Float32Array(n);
    const ap = softplus(0.2), an = 0.5 + softplus(-1), eps = f(-1e-6);
    xieluForwardSimd(xs, y, ap, an, 0.5, eps);
    xieluForwardSimd(hx, hy, ap, an, 0.5, eps);
    expect(hy).toEqual(y);
    const a = xieluBackwardSimd(xs, gy, gx, ap, an, 0.5, eps);
    const b = xieluBackwardSimd(hx, hg, hgx, ap, an, 0.5, eps);
    expect(hgx).toEqual(gx);
    expect(b).toEqual(a);
  });
});
