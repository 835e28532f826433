import { describe, expect, it } from 'vitest';
import { alphaWarmup, beta3Warmup, beta3WarmupClosedForm } from './schedulers';
import { sig } from '../test/helpers';

// training-recipe.md §1.6, scheduler table (β1 = 0.9, β3 = 0.9999, α = 8).
describe('AdEMAMix warm-up schedulers (spec table)', () => {
  it('T = 10: α_t and β3_t (torch form) at t = 1, 2, 3, 5', () => {
    expect([1, 2, 3, 5].map((t) => alphaWarmup(t, 8, 10))).toEqual([0.8, 1.6, 2.4, 4]); // identical to Python: (1 − t/10)·0 + (t/10)·8
    expect([1, 2, 3, 5].map((t) => sig(alphaWarmup(t, 8, 10)))).toEqual([0.8, 1.6, 2.4, 4]);
    expect([1, 2, 3, 5].map((t) => sig(beta3Warmup(t, 0.9999, 10, 0.9)))).toEqual([0.999009010269, 0.999502039903, 0.999667475136, 0.999800219586]);
  });

  it('T = 100000: torch form (with 1e-8) and closed form, 15 significant digits', () => {
    const rows: Array<[number, number, number, number]> = [
      [0, 0, 0.90000001, 0.9],
      [1, 8e-5, 0.900988331287788, 0.900988223530127],
      [1000, 0.08, 0.99090099055675, 0.990900162402574],
      [10000, 0.8, 0.999009010269019, 0.99900891204252],
      [50000, 4, 0.999800219585597, 0.99980019962548],
      [100000, 8, 0.9999, 0.9999],
      [250000, 8, 0.9999, 0.9999],
    ];
    for (const [t, a, torch, closed] of rows) {
      expect(sig(alphaWarmup(t, 8, 100000), 15)).toBe(a);
      expect(sig(beta3Warmup(t, 0.9999, 100000, 0.9), 15)).toBe(torch);
      expect(sig(beta3WarmupClosedForm(t, 0.9999, 100000, 0.9), 15)).toBe(closed);
    }
  });

  it('the two β3 forms differ by the 1e-8 only: ~1e-7 at t = 1, equal without it', () => {
    const d = beta3Warmup(1, 0.9999, 100000, 0.9) - beta3WarmupClosedForm(1, 0.9999, 100000, 0.9);
    expect(d).toBeGreaterThan(1e-7);
    expect(d).toBeLessThan(1.2e-7);
    for (const t of [1, 10, 1000, 99999]) {
      expect(beta3Warmup(t, 0.9999, 100000, 0.9, 0)).toBeCloseTo(beta3WarmupClosedForm(t, 0.9999, 100000, 0.9), 14);
    }
  });
});
