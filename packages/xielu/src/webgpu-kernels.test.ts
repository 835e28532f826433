// The xIELU WGSL kernels of the webgpu device (Dawn; SwiftShader without a GPU) against
// the float64 reference kernels (`reference.ts`), every output element within an error
// bound derived from the kernel's float32 operations.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ShapeError } from '@apertus/tensor';
import { expectWithin, SLACK, U32, webgpuForSuite } from '@apertus/tensor/testing';
import { wgsl } from '@apertus/tensor/kernels';
import { softplus } from './math';
import * as jsKernels from './reference';
import { xieluBackwardWgsl, xieluWgsl } from './webgpu';

/** The kernel's parameter sums: workgroup sums over chunks of this many elements at most (see `wgsl.partialGroups`). */
const CHUNK = 256;

const u = U32;
/** WGSL lets an implementation flush subnormal intermediates to zero: one such loss per operation. */
const FLUSH = 2 ** -126;
/** Runs of each property (raised ×20 once locally: `XIELU_RUNS=600`). */
const RUNS = Number(process.env.XIELU_RUNS ?? 30);

/**
 * Absolute error of the kernel's expm1(m) (m ≤ ε < 0): for |m| < ln2/2 the Cephes polynomial,
 * within 4u·|expm1| (approximation error below 0.3u; Horner's six f32 multiply-adds on terms that
 * shrink with |m| < 0.35 add at most 2.4u); below, the device's `exp_` (Cephes: within 3 ulp,
 * one ulp ≤ 2u·eᵐ) and the subtraction of 1 (u·|expm1|).
 */
function expm1Error(m: number): number {
  const e = Math.expm1(m);
  return m > -0.34657359 ? 4 * u * Math.abs(e) : 3 * 2 * u * Math.exp(m) + u * Math.abs(e);
}

interface Case { x: Float32Array; gy: Float32Array; ap: number; spn: number; beta: number; eps: number }

/**
 * Per-element bounds of y and gx, and the bounds of the two sums: the kernel sums contiguous chunks
 * in workgroups (`wg_sum`: each term through ⌈chunk/256⌉ + 32 additions), then the chunk partials
 * in one workgroup (⌈groups/256⌉ + 32 more).
 */
function bounds(c: Case, y0: Float32Array, gx0: Float32Array): { y: Float64Array; gx: Float64Array; sumP: number; sumN: number } {
  const { x, gy, ap, beta, eps } = c;
  const an = beta + c.spn;
  const y = new Float64Array(x.length), gx = new Float64Array(x.length);
  const termsP: number[] = [], termsN: number[] = [];
  let termErrP = 0, termErrN = 0;
  const groups = wgsl.partialGroups(x.length), chunk = Math.ceil(x.length / groups);
  const depth = Math.ceil(chunk / 256) + 32 + Math.ceil(groups / 256) + 32;
  for (let i = 0; i < x.length; i++) {
    const v = x[i]!, g = gy[i]!, ag = Math.abs(g);
    if (v > 0) {
      // v·(αp·v + β) and g·(2αp·v + β): three roundings each, no cancellation, plus the reference's.
      y[i] = 4 * u * Math.abs(y0[i]!);
      gx[i] = 4 * u * Math.abs(gx0[i]!);
      termsP.push(g * v * v);
      termErrP += 2 * u * Math.abs(g * v * v);
    } else {
      const m = Math.min(v, eps), e = Math.expm1(m), de = expm1Error(m), d = Math.abs(e - v);
      // αn = β + softplus_n rounds (u·αn); e − v, αn·(e − v), β·v and the sum round once each.
      y[i] = an * (de + 3 * u * d) + u * beta * Math.abs(v) + 2 * u * Math.abs(y0[i]!);
      gx[i] = v > eps
        ? ag * u * (an + Math.abs(beta - an)) + 2 * u * Math.abs(gx0[i]!)
        : ag * (an * de + 2 * u * an * Math.abs(e) + u * Math.abs(an * e + beta)) + 2 * u * Math.abs(gx0[i]!);
      termsN.push(g * (e - v));
      termErrN += ag * (de + u * d) + u * Math.abs(g * (e - v));
    }
  }
  const floor = 8 * FLUSH;
  for (let i = 0; i < x.length; i++) { y[i] = SLACK * y[i]! + floor; gx[i] = SLACK * gx[i]! + floor; }
  const abs = (t: number[]) => t.reduce((a, v) => a + Math.abs(v), 0);
  return {
    y, gx,
    sumP: SLACK * (termErrP + u * depth * abs(termsP)) + x.length * floor,
    sumN: SLACK * (termErrN + u * depth * abs(termsN)) + x.length * floor,
  };
}

// Magnitudes away from the subnormal range (see FLUSH), both branches, ε itself, ±0 and the band (ε, 0].
const value = fc.oneof(
  fc.float({ min: Math.fround(1e-6), max: 300, noNaN: true }),
  fc.float({ min: -300, max: Math.fround(-1e-6), noNaN: true }),
  fc.constantFrom(0, -0),
);
const grad = fc.oneof(fc.float({ min: Math.fround(1e-3), max: 1, noNaN: true }), fc.float({ min: -1, max: Math.fround(-1e-3), noNaN: true }), fc.constant(0));
// A few sizes (each compiles its own kernels): one element, one chunk exactly, a chunk and one, several chunks.
const size = fc.constantFrom(1, 7, CHUNK, CHUNK + 1, 3 * CHUNK - 5, 9000);
const cases = size.chain((n) => fc.record({
  x: fc.array(value, { minLength: n, maxLength: n }),
  gy: fc.array(grad, { minLength: n, maxLength: n }),
  a_p: fc.double({ min: -3, max: 3, noNaN: true }),
  a_n: fc.double({ min: -3, max: 3, noNaN: true }),
  beta: fc.float({ min: 0, max: 1, noNaN: true }),
  eps: fc.float({ min: Math.fround(-1e-3), max: Math.fround(-1e-9), noNaN: true }),
  band: fc.float({ min: 0, max: 1, noNaN: true }),
}).map(({ x, gy, a_p, a_n, beta, eps, band }): Case => {
  const xs = Float32Array.from(x);
  // Also ε itself and a value inside (ε, 0], where the clamped branch applies.
  if (n > 2) { xs[0] = eps; xs[1] = Math.fround(eps * band); }
  return { x: xs, gy: Float32Array.from(gy), ap: Math.fround(softplus(a_p)), spn: Math.fround(softplus(a_n)), beta, eps };
}));

describe('xIELU kernels on the webgpu device', { timeout: 600_000 }, () => {
  const { run, host } = webgpuForSuite();

  it('forward, gx and the two parameter sums: every element within its error bound', () => {
    fc.assert(fc.property(cases, (c) => {
      const n = c.x.length, ap = Float32Array.of(c.ap), spn = Float32Array.of(c.spn);
      const y0 = new Float32Array(n), gx0 = new Float32Array(n), p0 = new Float32Array(1), n0 = new Float32Array(1);
      // The float64 reference, unrounded sums: the element loops of the reference kernels.
      jsKernels.xielu(c.x, ap, spn, c.beta, c.eps, y0);
      jsKernels.xieluBackward(c.x, c.gy, ap, spn, c.beta, c.eps, gx0, p0, n0);
      const y = new Float32Array(n), gx = new Float32Array(n), sp = new Float32Array(1), sn = new Float32Array(1);
      run(xieluWgsl)(c.x, ap, spn, c.beta, c.eps, y);
      run(xieluBackwardWgsl)(c.x, c.gy, ap, spn, c.beta, c.eps, gx, sp, sn);
      host(y, gx, sp, sn);
      const b = bounds(c, y0, gx0);
      expectWithin(y, y0, b.y, 'y');
      expectWithin(gx, gx0, b.gx, 'gx');
      // p0/n0 are the f64 sums rounded to f32 (u of each): part of SLACK's cover.
      expectWithin(sp, p0, [b.sumP + u * Math.abs(p0[0]!)], 'Σp');
      expectWithin(sn, n0, [b.sumN + u * Math.abs(n0[0]!)], 'Σn');
    }), { numRuns: RUNS });
  });

  it('keeps its accuracy near ε: expm1 does not cancel (exp(x) − 1 would be off by 6%)', () => {
    const x = Float32Array.of(-1e-6, -3e-7, -0.01, -0.3, -0.4, -5);
    const ap = Float32Array.of(0.8), spn = Float32Array.of(0.3);
    const y = new Float32Array(6), y0 = new Float32Array(6);
    run(xieluWgsl)(x, ap, spn, 0, -1e-7, y);
    host(y);
    jsKernels.xielu(x, ap, spn, 0, -1e-7, y0);
    // With β = 0, y = αn·(expm1(x) − x) ≈ αn·x²/2 for tiny x: every digit comes from expm1.
    for (let i = 0; i < 6; i++) expect(Math.abs(y[i]! - y0[i]!)).toBeLessThanOrEqual(SLACK * 0.8 * (expm1Error(Math.min(x[i]!, -1e-7)) + 3 * u * Math.abs(y0[i]!)) + 2 * u * Math.abs(y0[i]!));
    expect(y[0]).toBeGreaterThan(0);
  });

  it('takes the reference branch on both sides of the jumps of ∂f/∂x at 0 and ε', () => {
    // ∂f/∂x is β − αn on (ε, 0] and β for x > 0 (spec §3.3): a pre-activation that rounding puts
    // on the other side of 0 changes gx by αn·gy (a device and the cpu, whose GEMMs sum in other
    // orders, can disagree there; every backend must agree when x is the same).
    const beta = 0.5, eps = Math.fround(-1e-6), f32 = new Float32Array(1), i32 = new Int32Array(f32.buffer);
    const step = (v: number, d: number) => { f32[0] = v; i32[0] += d; return f32[0]; }; // next float32 away from / towards 0
    const x = Float32Array.of(eps, step(eps, 1), step(eps, -1), -1.2e-7, -0, 0, 1.2e-7, 1e-30, -1e-30, -2e-6);
    const n = x.length, gy = new Float32Array(n).fill(1), ap = Float32Array.of(0.8), spn = Float32Array.of(0.3);
    const gx = new Float32Array(n), gx0 = new Float32Array(n), s = new Float32Array(2), s0 = new Float32Array(2);
    run(xieluBackwardWgsl)(x, gy, ap, spn, beta, eps, gx, s.subarray(0, 1), s.subarray(1));
    host(gx, s);
    jsKernels.xieluBackward(x, gy, ap, spn, beta, eps, gx0, s0.subarray(0, 1), s0.subarray(1));
    // The branches differ by αn = 0.8; within one, αn = β + softplus_n rounds (u·αn), the
    // difference or sum with β and the product with gy round once each, and the reference once.
    for (let i = 0; i < n; i++) expect(Math.abs(gx[i]! - gx0[i]!), `x = ${x[i]}`).toBeLessThanOrEqual(SLACK * u * (0.8 + 3 * Math.abs(gx0[i]!)));
    expect(Array.from(gx0.subarray(3, 7), Math.sign)).toEqual([-1, -1, -1, 1]); // β − αn on (ε, 0], β above
    expect(Math.abs(s[0]! - s0[0]!)).toBeLessThanOrEqual(SLACK * u * n * Math.abs(s0[0]!));
  });

  it('rejects bad sizes with a ShapeError before running anything', () => {
    const x = new Float32Array(4);
    expect(() => run(xieluWgsl)(x, new Float32Array(2), Float32Array.of(0), 0.5, -1e-6, new Float32Array(4))).toThrow(ShapeError);
    expect(() => run(xieluBackwardWgsl)(x, new Float32Array(3), Float32Array.of(1), Float32Array.of(0), 0.5, -1e-6, new Float32Array(4), new Float32Array(1), new Float32Array(1))).toThrow(/gy has 3/);
  });
});
