import { describe, expect, it } from 'vitest';
import { AdamW } from './adamw';
import { AdEMAMix } from './ademamix';
import type { Optimizer } from './optimizer';
import { makeParam } from '../test/helpers';

/** xorshift values in [-1, 1). */
function values(n: number, seed: number): number[] {
  let s = seed;
  return Array.from({ length: n }, () => { s ^= s << 13; s ^= s >>> 17; s ^= s << 5; return (s >>> 0) / 2 ** 31 - 1; });
}

/** Largest |a − b| over an array, relative to the largest |b| (normwise relative error). */
function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0, m = 0;
  for (let i = 0; i < b.length; i++) { d = Math.max(d, Math.abs(a[i]! - b[i]!)); m = Math.max(m, Math.abs(b[i]!)); }
  return d / m;
}

/**
 * 200 steps of random gradients (magnitudes 1e-3 to 10) with both arithmetics, each step taken by
 * both from the same parameters and state (the exact optimizer's): the worst error of one step,
 * over the parameters and every state buffer.
 */
function compare(make: (p: ReturnType<typeof makeParam>, arithmetic: 'torch-exact' | 'fast') => Optimizer<never>): { worst: number } {
  const n = 4096;
  const pe = makeParam(values(n, 7), Float32Array), pf = makeParam(values(n, 7), Float32Array);
  const exact = make(pe, 'torch-exact'), fast = make(pf, 'fast');
  let worst = 0;
  for (let t = 0; t < 200; t++) {
    if (t > 0) { fast.loadStateDict(exact.stateDict()); pf.data.set(pe.data); }
    const g = values(n, 1000 + t).map((x) => x * 10 ** ((t % 5) - 3));
    pe.grad.data.set(g); pf.grad.data.set(g);
    exact.step(); fast.step();
    worst = Math.max(worst, relErr(pf.data, pe.data));
    const se = exact.stateDict().tensors, sf = fast.stateDict().tensors;
    expect(Object.keys(se).length).toBeGreaterThanOrEqual(2);
    for (const [name, x] of Object.entries(se)) worst = Math.max(worst, relErr(sf[name]!.data, x.data));
  }
  return { worst };
}

describe("arithmetic: each 'fast' step is within 1e-6 of the 'torch-exact' one (float32)", () => {
  it('AdEMAMix (Apertus settings, warm-ups, weight decay)', () => {
    const r = compare((p, arithmetic) => new AdEMAMix([['w', p]], { lr: 1e-3, betas: [0.9, 0.999, 0.9999], alpha: 8, alphaWarmup: 50, beta3Warmup: 50, weightDecay: 0.1, splitWeightDecay: false, arithmetic }) as never);
    expect(r.worst).toBeLessThan(1e-6);
    expect(r.worst).toBeGreaterThan(0); // a different computation, not the exact one again
  });
  it('AdamW', () => {
    const r = compare((p, arithmetic) => new AdamW([['w', p]], { lr: 1e-3, weightDecay: 0.1, splitWeightDecay: false, arithmetic }) as never);
    expect(r.worst).toBeLessThan(1e-6);
    expect(r.worst).toBeGreaterThan(0);
  });
});
