import { backward, gradcheck, sum, Tensor, Rng } from '@apertus/tensor';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { sigmoid, xieluGrads, xieluValue } from './math';
import { initXielu, xielu } from './xielu';

// Spec §3.4: values at a_p = 0.20338232, a_n = −1.05022561, β = 0.5, ε = −1e-6 (float64).
const a_p = Math.log(Math.expm1(0.8)), a_n = Math.log(Math.expm1(0.3));
const TABLE: [number, number, number, number, number, number][] = [
  // x, f, df/dx, df/da_p, df/da_n, df/dβ
  [-10, 2.20003631994381, -0.29996368, 0, 2.33264778, -0.9999546],
  [-3, 0.13982965469429, -0.26017035, 0, 0.53126746, -0.95021293],
  [-1, -0.20569644706285, -0.00569645, 0, 0.09534765, -0.63212056],
  [-0.5, -0.16477547222989, 0.18522453, 0, 0.02761081, -0.39346934],
  [-0.001, -4.996001333e-4, 0.4992004, 0, 1.29548e-7, -9.995e-4],
  [0, -7.999996e-7, -0.3, 0, -2.59182e-7, -1e-6],
  [0.5, 0.45, 1.3, 0.13766776, 0, 0.5],
  [1, 1.3, 2.1, 0.55067104, 0, 1],
  [3, 8.7, 5.3, 4.95603932, 0, 3],
];

describe('xIELU scalar math (spec §3.4 table, float64)', () => {
  test('init constants', () => {
    expect(a_p).toBeCloseTo(0.2033823208110246, 15);
    expect(a_n).toBeCloseTo(-1.0502256128148464, 15);
    expect(sigmoid(a_p)).toBeCloseTo(0.55067104, 8);
    expect(sigmoid(a_n)).toBeCloseTo(0.25918178, 8);
  });
  test.each(TABLE)('x = %d', (x, f, dx, dap, dan, dbeta) => {
    expect(xieluValue(x, a_p, a_n, 0.5, -1e-6)).toBeCloseTo(f, 12);
    const g = xieluGrads(x, a_p, a_n, 0.5, -1e-6);
    const close = (a: number, b: number) => expect(Math.abs(a - b)).toBeLessThanOrEqual(5e-9 + 1e-6 * Math.abs(b));
    close(g.dx, dx); close(g.da_p, dap); close(g.da_n, dan); close(g.dbeta, dbeta);
  });
  test('derivatives agree with central differences in float64 away from the kinks', () => {
    fc.assert(fc.property(fc.double({ min: -20, max: 20, noNaN: true }).filter((x) => Math.abs(x) > 1e-3), fc.double({ min: -2, max: 2, noNaN: true }), fc.double({ min: -2, max: 2, noNaN: true }), (x, ap, an) => {
      const h = 1e-6, g = xieluGrads(x, ap, an, 0.5, -1e-6);
      const num = (f: (d: number) => number) => (f(h) - f(-h)) / (2 * h);
      const ok = (a: number, b: number) => Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(b));
      return ok(g.dx, num((d) => xieluValue(x + d, ap, an, 0.5, -1e-6)))
        && ok(g.da_p, num((d) => xieluValue(x, ap + d, an, 0.5, -1e-6)))
        && ok(g.da_n, num((d) => xieluValue(x, ap, an + d, 0.5, -1e-6)))
        && ok(g.dbeta, num((d) => xieluValue(x, ap, an, 0.5 + d, -1e-6)));
    }), { numRuns: 500 });
  });
});

describe('xielu tensor op', () => {
  test('forward reproduces the table in float32 and the parameter gradients are sums', () => {
    const p = initXielu();
    const xs = TABLE.map((r) => r[0]);
    const x = Tensor.from(Float32Array.from(xs), [3, 3]).requireGrad();
    const y = xielu(x, p);
    TABLE.forEach(([, f], i) => expect(Math.abs(y.data[i]! - f)).toBeLessThanOrEqual(2e-6 * Math.max(1, Math.abs(f))));
    backward(sum(y));
    TABLE.forEach(([, , dx], i) => expect(x.grad!.data[i]).toBeCloseTo(dx, 5));
    expect(p.alpha_p.grad!.item()).toBeCloseTo(TABLE.reduce((s, r) => s + r[3], 0), 5);
    expect(p.alpha_n.grad!.item()).toBeCloseTo(TABLE.reduce((s, r) => s + r[4], 0), 5);
    expect(p.beta.grad).toBeNull();
  });
  test('no overflow in the branch not taken (float32 inputs near ±3e38)', () => {
    const p = initXielu();
    const y = xielu(Tensor.from([-3e38, -1e30, 1e19]), p).data;
    expect(Number.isFinite(y[0])).toBe(true);
    expect(Number.isFinite(y[1])).toBe(true);
    expect(y[2]).toBeCloseTo(0.8 * 1e38, -33);
  });
  test('gradients w.r.t. x, alpha_p and alpha_n match finite differences', () => {
    const rng = new Rng(3);
    const p = initXielu();
    const x = Tensor.from(Tensor.randn([4, 17], rng, 2).data.map((v) => (Math.abs(v) < 0.02 ? v + 0.05 : v)), [4, 17]).requireGrad();
    const r = gradcheck(([t, ap, an]) => xielu(t!, { alpha_p: ap!, alpha_n: an!, beta: p.beta, eps: p.eps }), [x, p.alpha_p, p.alpha_n], { eps: 1e-3 });
    expect(r.maxError).toBeLessThan(1e-2);
  });
});
