import { describe, expect, it } from 'vitest';
import { AdEMAMix } from './ademamix';
import { OptimizerError } from './errors';
import { makeParam } from '../test/helpers';
import { APERTUS_8B_WSD, constantSchedule, cooldownCoefficient, linearWarmupDecaySchedule, LrScheduler, warmupStepsFromRatio, wsdSchedule } from './wsd';

const { warmup: W, total: D, cooldown: C } = APERTUS_8B_WSD;
const S = D - C;

describe('WSD schedule (training-recipe.md §4.1)', () => {
  const lr = wsdSchedule(APERTUS_8B_WSD);

  it('8B constants: S = 3,258,203,569 samples', () => {
    expect(S).toBe(3_258_203_569);
    expect(D * 4096).toBe(15e12);
  });

  it('reproduces the spec check values (9 significant digits)', () => {
    const check: Array<[number, number]> = [
      [1024, 2.75e-8],
      [2_048_000, 5.5e-5],
      [S, 1.1e-4],
      [S + Math.floor(C / 4), 6.05000001e-5],
      [S + Math.floor(C / 2), 3.99964287e-5],
      [S + Math.floor((3 * C) / 4), 2.42634851e-5],
      [D, 1.1e-5],
    ];
    for (const [s, want] of check) expect([s, Number(lr(s).toPrecision(9))]).toEqual([s, want]);
  });

  it('is bit-identical to Megatron get_lr evaluated in CPython (float64)', () => {
    // values printed with repr() from a Python transcription of OptimizerParamScheduler.get_lr
    const py: Array<[number, number]> = [
      [0, 0],
      [1024, 2.75e-8],
      [2_048_000, 5.5e-5],
      [W, 0.00011],
      [W + 1, 0.00011],
      [S, 0.00011],
      [S + Math.floor(C / 4), 6.050000012255334e-5],
      [S + Math.floor(C / 2), 3.9996428662531796e-5],
      [S + Math.floor((3 * C) / 4), 2.4263485096096777e-5],
      [D, 1.1e-5],
      [D + 1, 1.1e-5],
    ];
    for (const [s, want] of py) expect([s, lr(s)]).toEqual([s, want]);
    expect(wsdSchedule({ ...APERTUS_8B_WSD, style: 'linear' })(S + Math.floor(C / 3))).toBe(7.700000016340443e-5);
    expect(wsdSchedule({ ...APERTUS_8B_WSD, style: 'cosine' })(S + Math.floor(C / 3))).toBeCloseTo(8.525000022228714e-5, 18);
    expect(wsdSchedule({ ...APERTUS_8B_WSD, style: 'exponential' })(S + Math.floor(C / 3))).toBeCloseTo(6.915270432464607e-5, 18);
  });

  it('cooldown shapes at r = 0, 1/4, 1/2, 1', () => {
    expect([0, 0.25, 0.5, 1].map((r) => cooldownCoefficient('1-sqrt', r))).toEqual([1, 0.5, 1 - Math.SQRT1_2, 0]);
    expect([0, 0.25, 0.5, 1].map((r) => cooldownCoefficient('linear', r))).toEqual([1, 0.75, 0.5, 0]);
    expect([0, 0.5, 1].map((r) => cooldownCoefficient('cosine', r))).toEqual([1, 0.5, 0]);
    expect([0, 1].map((r) => cooldownCoefficient('exponential', r))).toEqual([1, 0]);
  });

  it('is monotone: non-decreasing through warm-up and stable, non-increasing through the cooldown', () => {
    const small = wsdSchedule({ maxLr: 1, minLr: 0.1, warmup: 10, total: 100, cooldown: 30 });
    const v = Array.from({ length: 111 }, (_, s) => small(s));
    for (let s = 1; s <= 70; s++) expect(v[s]!).toBeGreaterThanOrEqual(v[s - 1]!);
    for (let s = 71; s <= 110; s++) expect(v[s]!).toBeLessThanOrEqual(v[s - 1]!);
    expect([v[0], v[5], v[10], v[70], v[100], v[110]]).toEqual([0, 0.5, 1, 1, 0.1, 0.1]);
  });

  it('rejects inconsistent options and negative counts with typed errors', () => {
    const bad: Array<[Parameters<typeof wsdSchedule>[0], string]> = [
      [{ maxLr: 1, minLr: 2, warmup: 1, total: 10, cooldown: 2 }, 'minLr'],
      [{ maxLr: -1, warmup: 1, total: 10, cooldown: 2 }, 'maxLr'],
      [{ maxLr: 1, warmup: 10, total: 10, cooldown: 2 }, 'warmup'],
      [{ maxLr: 1, warmup: 1, total: 10, cooldown: 11 }, 'cooldown'],
      [{ maxLr: 1, warmup: 1, total: 10, cooldown: 2, style: 'square' as never }, 'style'],
    ];
    for (const [o, field] of bad) expect(() => wsdSchedule(o)).toThrowError(expect.objectContaining({ code: 'InvalidSchedule', field }) as Error);
    expect(() => lr(-1)).toThrowError(OptimizerError);
  });
});

describe('LrScheduler: Megatron bookkeeping', () => {
  it('first update uses lr(0) = 0; the count advances by the global batch size after each step', () => {
    const sched = new LrScheduler(wsdSchedule(APERTUS_8B_WSD));
    const p = makeParam([1, 2, 3, 4], Float64Array, [2, 2]);
    const opt = new AdEMAMix([['w', p]], { alpha: 8 });
    p.grad.data.fill(1);
    opt.step(sched.lr);
    expect(opt.groups[0]!.hyperparameters.lr).toBe(0);
    expect([...p.data]).toEqual([1, 2, 3, 4]); // lr 0: nothing moves
    expect(sched.step(1024)).toBe(2.75e-8);
    expect(sched.count).toBe(1024);
    sched.step(1024);
    expect(sched.lr).toBe(5.5e-8);
    const copy = new LrScheduler(sched.schedule);
    copy.loadStateDict(JSON.parse(JSON.stringify(sched.stateDict())) as { count: number });
    expect(copy.lr).toBe(sched.lr);
    expect(() => sched.step(-5)).toThrowError(expect.objectContaining({ code: 'InvalidSchedule' }) as Error);
  });
});

describe('linear warm-up + linear decay (Hugging Face, SFT) and constant', () => {
  it('warmup_ratio 0.03 over 1000 steps: 30 warm-up steps, peak at 30, half at 515, zero at 1000', () => {
    const warm = warmupStepsFromRatio(0.03, 1000);
    expect(warm).toBe(30);
    expect(warmupStepsFromRatio(0.03, 1001)).toBe(31); // ceil
    const lr = linearWarmupDecaySchedule({ maxLr: 5e-6, warmup: warm, total: 1000 });
    expect([lr(0), lr(15), lr(30), lr(515), lr(1000), lr(1200)]).toEqual([0, 2.5e-6, 5e-6, 2.5e-6, 0, 0]);
    expect(lr(29)).toBe(5e-6 * (29 / 30));
  });

  it('constant, with and without Megatron warm-up', () => {
    expect([0, 7, 1e9].map(constantSchedule(1e-5))).toEqual([1e-5, 1e-5, 1e-5]);
    const lc = constantSchedule(1.1e-5, { warmup: 150 });
    expect([0, 75, 150, 151].map(lc)).toEqual([0, 5.5e-6, 1.1e-5, 1.1e-5]);
    expect(() => constantSchedule(-1)).toThrowError(expect.objectContaining({ code: 'InvalidSchedule', field: 'lr' }) as Error);
  });
});
