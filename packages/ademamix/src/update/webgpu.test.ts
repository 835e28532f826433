// The optimizer-update kernels of the webgpu device (WGSL) against the reference
// kernels' `fast` arithmetic (double precision per element, float32 where stored), over random sizes
// and hyperparameters, each element within a bound derived from its float32 operations. Runs on
// SwiftShader without a GPU; a missing driver fails the test, never skips it.
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { expectWithin, randomF32, SLACK, U32, webgpuForSuite } from '@apertus/tensor/testing';
import type { AdamwUpdateArgs, AdemamixUpdateArgs } from './kernel';
import { adamwReference, ademamixReference } from './reference';
import { adamwUpdateWgsl, ademamixUpdateWgsl } from './webgpu';

/**
 * Relative error of one WGSL float32 operation (WGSL spec, "Floating point accuracy"): +, −, ×
 * are correctly rounded (U32); ÷ is within 2.5 ulp (ulp = 2·U32); sqrt is inherited from
 * 1/inverseSqrt (2 ulp, then the division).
 */
const ADD = U32, MUL = U32, DIV = 5 * U32, SQRT = 9 * U32;
/** A float64 scalar rounded to float32 when passed to the kernel. */
const SCALAR = U32;

const NUM_RUNS = 12;

/** Per element: |fl(m·β + g·c) − (m·β + g·c)| for a float32 EMA with scalars passed as float32, plus the reference's rounding. */
function emaBound(m: Float32Array, g: Float32Array, beta: number, square: boolean): Float64Array {
  const c = 1 - beta;
  return Float64Array.from(m, (mi, i) => {
    const a = Math.abs(mi * beta);
    const b = Math.abs(c * g[i]! * (square ? g[i]! : 1));
    return SLACK * ((SCALAR + MUL + ADD) * a + (SCALAR + (square ? 2 : 1) * MUL + ADD) * b + U32 * (a + b));
  });
}

/**
 * The parameter's bound: the errors of the state it reads (δm1, δm2, δnu, already on the device's
 * values) carried through u = N / D + λ·θ and θ − lr·u, plus each operation's own rounding.
 */
function paramBound(p: Float32Array, num: { abs: Float64Array; err: Float64Array }, nu: Float32Array, dNu: Float64Array, sbc2: number, eps: number, wd: number, lr: number): Float64Array {
  return Float64Array.from(p, (pi, i) => {
    const d = Math.sqrt(nu[i]!) / sbc2 + eps;
    const rD = (nu[i]! > 0 ? dNu[i]! / (2 * nu[i]!) : 0) + SQRT + SCALAR + DIV + SCALAR + ADD;
    const q = num.abs[i]! / d;
    const dq = num.err[i]! / d + q * (rD + DIV);
    const pw = Math.abs(pi * wd);
    const du = dq + (SCALAR + MUL) * pw + ADD * (q + pw);
    const u = q + pw;
    return SLACK * (lr * du + (SCALAR + MUL) * lr * u + ADD * (Math.abs(pi) + lr * u) + U32 * (Math.abs(pi) + lr * u));
  });
}

const hyper = fc.record({
  n: fc.integer({ min: 1, max: 2500 }),
  seed: fc.nat(),
  beta1: fc.oneof(fc.constant(0), fc.double({ min: 0.5, max: 0.99, noNaN: true })),
  beta2: fc.double({ min: 0.9, max: 0.9999, noNaN: true }),
  beta3: fc.double({ min: 0.9, max: 0.99999, noNaN: true }),
  alpha: fc.double({ min: 0, max: 10, noNaN: true }),
  t: fc.integer({ min: 1, max: 1000 }),
  eps: fc.constantFrom(1e-8, 1e-6, 1e-3),
  weightDecay: fc.constantFrom(0, 0.01, 0.1),
  lr: fc.double({ min: 1e-5, max: 1e-2, noNaN: true }),
});

describe('optimizer kernels on the webgpu device', { timeout: 600_000 }, () => {
  const { run, host } = webgpuForSuite();

  it('AdEMAMix update matches the reference within its float32 error bound', () => {
    fc.assert(fc.property(hyper, (h) => {
      const { n, seed, beta1, beta2, beta3, alpha, t, eps, weightDecay, lr } = h;
      const g = randomF32(n, seed, -1, 1);
      const state = { p: randomF32(n, seed + 1), m1: randomF32(n, seed + 2, -0.5, 0.5), m2: randomF32(n, seed + 3, -0.5, 0.5), nu: randomF32(n, seed + 4, 0, 0.3) };
      const make = (): AdemamixUpdateArgs => ({
        param: state.p.slice(), grad: g, m1: beta1 === 0 ? null : state.m1.slice(), m2: state.m2.slice(), nu: state.nu.slice(),
        beta1, beta2, beta3, alpha, bc1: 1 - beta1 ** t, bc2: 1 - beta2 ** t, eps, weightDecay, lr, arithmetic: 'fast',
      });
      const got = make();
      const want = make();
      run(ademamixUpdateWgsl)(got);
      host(got.param, got.m2, got.nu, ...(got.m1 === null ? [] : [got.m1]));
      ademamixReference(want);
      const dM1 = beta1 === 0 ? new Float64Array(n) : emaBound(state.m1, g, beta1, false);
      const dM2 = emaBound(state.m2, g, beta3, false);
      const dNu = emaBound(state.nu, g, beta2, true);
      if (got.m1 !== null) expectWithin(got.m1, want.m1!, dM1, 'm1');
      expectWithin(got.m2, want.m2, dM2, 'm2');
      expectWithin(got.nu, want.nu, dNu, 'nu');
      const fast = want.m1 ?? g;
      const abs = Float64Array.from(fast, (f, i) => Math.abs(f) / want.bc1 + alpha * Math.abs(want.m2[i]!));
      const err = Float64Array.from(fast, (f, i) => dM1[i]! / want.bc1 + alpha * dM2[i]!
        + (SCALAR + DIV) * Math.abs(f) / want.bc1 + (SCALAR + MUL) * alpha * Math.abs(want.m2[i]!) + ADD * abs[i]!);
      expectWithin(got.param, want.param, paramBound(state.p, { abs, err }, want.nu as Float32Array, dNu, Math.sqrt(want.bc2), eps, weightDecay, lr), 'param');
    }), { numRuns: NUM_RUNS });
  });

  it('AdamW update matches the reference within its float32 error bound', () => {
    fc.assert(fc.property(hyper, (h) => {
      const { n, seed, beta2, t, eps, weightDecay, lr } = h;
      const beta1 = h.beta1 === 0 ? 0.9 : h.beta1;
      const g = randomF32(n, seed, -1, 1);
      const state = { p: randomF32(n, seed + 1), m: randomF32(n, seed + 2, -0.5, 0.5), v: randomF32(n, seed + 4, 0, 0.3) };
      const make = (): AdamwUpdateArgs => ({
        param: state.p.slice(), grad: g, m: state.m.slice(), v: state.v.slice(),
        beta1, beta2, bc1: 1 - beta1 ** t, bc2: 1 - beta2 ** t, eps, weightDecay, lr, arithmetic: 'fast',
      });
      const got = make();
      const want = make();
      run(adamwUpdateWgsl)(got);
      host(got.param, got.m, got.v);
      adamwReference(want);
      const dM = emaBound(state.m, g, beta1, false);
      const dV = emaBound(state.v, g, beta2, true);
      expectWithin(got.m, want.m, dM, 'm');
      expectWithin(got.v, want.v, dV, 'v');
      // θ·decay − (lr/bc1)·m / D: the decay term as λ·θ of the AdEMAMix bound (decay = 1 − lr·λ, one rounding
      // more), the step as N / D with N = |m|/bc1.
      const abs = Float64Array.from(want.m, (m) => Math.abs(m) / want.bc1);
      const err = Float64Array.from(want.m, (m, i) => dM[i]! / want.bc1 + (2 * SCALAR + DIV + MUL) * Math.abs(m) / want.bc1);
      const bound = paramBound(state.p, { abs, err }, want.v as Float32Array, dV, Math.sqrt(want.bc2), eps, 0, lr);
      const decayed = Float64Array.from(state.p, (p, i) => bound[i]! + SLACK * (SCALAR + MUL + ADD) * Math.abs(p));
      expectWithin(got.param, want.param, decayed, 'param');
    }), { numRuns: NUM_RUNS });
  });
});
