// Learning-rate schedules (training-recipe.md §4.1, §5): Megatron's Warmup-Stable-Decay with a
// 1-sqrt (or linear / cosine / exponential) cooldown, counted in samples or in steps; Hugging Face's
// linear warm-up + linear decay used for SFT; constant. A schedule is a pure function
// `count → lr`; `LrScheduler` adds Megatron's bookkeeping (lr(0) = 0 for the first update).

import { OptimizerError } from './errors';

/** A learning-rate schedule: learning rate after `count` samples (or steps) were consumed. */
export type LrSchedule = (count: number) => number;

/** Shape of the WSD cooldown, with r ∈ [0, 1] the progress through the cooldown. */
export type CooldownStyle = '1-sqrt' | 'linear' | 'cosine' | 'exponential';

/** Options of {@link wsdSchedule} (Megatron `--lr-decay-style WSD`). Counts are in samples or steps — the same unit everywhere. */
export interface WsdOptions {
  /** Peak learning rate (`--lr`). */
  readonly maxLr: number;
  /** Floor after the cooldown (`--min-lr`, default 0). */
  readonly minLr?: number;
  /** Learning rate at count 0 (`--lr-warmup-init`, default 0). */
  readonly initLr?: number;
  /** W: warm-up length (`--lr-warmup-samples` / `-iters`); 0 disables warm-up. */
  readonly warmup: number;
  /** D: count at which the cooldown ends (`--lr-decay-samples`, default = train samples). */
  readonly total: number;
  /** C: cooldown length (`--lr-wsd-decay-samples`); the stable phase ends at S = D − C. */
  readonly cooldown: number;
  /** Cooldown shape (`--lr-wsd-decay-style`, default `1-sqrt`). */
  readonly style?: CooldownStyle;
}

function fail(field: string, msg: string): OptimizerError {
  return new OptimizerError('InvalidSchedule', `${field} ${msg}`, { field });
}

function nonNegative(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw fail(field, `must be a finite number ≥ 0, got ${String(v)}`);
  return v;
}

function checkCount(count: number): void {
  if (typeof count !== 'number' || !Number.isFinite(count) || count < 0) throw fail('count', `must be a finite number ≥ 0, got ${String(count)}`);
}

/** Cooldown coefficient for progress r ∈ [0, 1] (1 at the start of the cooldown, 0 at its end). */
export function cooldownCoefficient(style: CooldownStyle, r: number): number {
  switch (style) {
    case '1-sqrt':
      return 1 - Math.sqrt(r);
    case 'linear':
      return 1 - r;
    case 'cosine':
      return 0.5 * (Math.cos(Math.PI * r) + 1);
    case 'exponential':
      return 2 * Math.pow(0.5, r) - 1;
    default:
      throw fail('style', `must be 1-sqrt, linear, cosine or exponential, got ${String(style)}`);
  }
}

/**
 * Warmup-Stable-Decay schedule exactly as Megatron's `OptimizerParamScheduler.get_lr` computes it:
 * ```
 * s ≤ W (W > 0) : init + (max − init)·s/W
 * s > D         : min
 * s ≤ D − C     : max
 * otherwise     : min + coeff((s − (D − C))/C)·(max − min)
 * ```
 * With `cooldown = total − warmup` and style `linear` / `cosine` this is also Megatron's plain
 * `linear` / `cosine` decay.
 * @throws OptimizerError `InvalidSchedule` for inconsistent options, or (from the returned function) a negative count
 */
export function wsdSchedule(options: WsdOptions): LrSchedule {
  const maxLr = nonNegative(options.maxLr, 'maxLr');
  const minLr = nonNegative(options.minLr ?? 0, 'minLr');
  const initLr = nonNegative(options.initLr ?? 0, 'initLr');
  const W = nonNegative(options.warmup, 'warmup');
  const D = nonNegative(options.total, 'total');
  const C = nonNegative(options.cooldown, 'cooldown');
  const style = options.style ?? '1-sqrt';
  cooldownCoefficient(style, 0); // validates the style
  if (minLr > maxLr) throw fail('minLr', `(${minLr}) must not exceed maxLr (${maxLr})`);
  if (initLr > maxLr) throw fail('initLr', `(${initLr}) must not exceed maxLr (${maxLr})`);
  if (!(D > 0)) throw fail('total', 'must be > 0');
  if (W >= D) throw fail('warmup', `(${W}) must be smaller than total (${D})`);
  if (C > D) throw fail('cooldown', `(${C}) must not exceed total (${D})`);
  const S = D - C;
  const delta = maxLr - minLr;
  return (s: number): number => {
    checkCount(s);
    if (W > 0 && s <= W) return initLr + ((maxLr - initLr) * s) / W;
    if (s > D) return minLr;
    if (s <= S) return maxLr;
    return minLr + cooldownCoefficient(style, (s - S) / C) * delta;
  };
}

/** Options of {@link linearWarmupDecaySchedule}. Counts are optimizer steps. */
export interface LinearWarmupDecayOptions {
  /** Peak learning rate. */
  readonly maxLr: number;
  /** Warm-up steps (use {@link warmupStepsFromRatio} for a `warmup_ratio`). */
  readonly warmup: number;
  /** Total training steps; the lr reaches 0 there. */
  readonly total: number;
}

/**
 * Linear warm-up then linear decay to 0, as Hugging Face's `get_linear_schedule_with_warmup`
 * (used for Apertus SFT and alignment): `maxLr·s/max(1, W)` for `s < W`, else
 * `maxLr·max(0, (T − s)/max(1, T − W))`. Step `s` is the 0-based index of the optimizer step, so the
 * first update uses lr(0) = 0 when `W > 0`.
 */
export function linearWarmupDecaySchedule(options: LinearWarmupDecayOptions): LrSchedule {
  const maxLr = nonNegative(options.maxLr, 'maxLr');
  const W = nonNegative(options.warmup, 'warmup');
  const T = nonNegative(options.total, 'total');
  if (W > T) throw fail('warmup', `(${W}) must not exceed total (${T})`);
  return (s: number): number => {
    checkCount(s);
    if (s < W) return maxLr * (s / Math.max(1, W));
    return maxLr * Math.max(0, (T - s) / Math.max(1, T - W));
  };
}

/** Warm-up steps for a warm-up ratio, as Hugging Face computes them: `ceil(total · ratio)`. */
export function warmupStepsFromRatio(ratio: number, total: number): number {
  if (typeof ratio !== 'number' || !(ratio >= 0 && ratio <= 1)) throw fail('ratio', `must be in [0, 1], got ${String(ratio)}`);
  nonNegative(total, 'total');
  return Math.ceil(total * ratio);
}

/**
 * Constant learning rate, optionally after Megatron's linear warm-up from `initLr` (default 0)
 * over `warmup` counts (Megatron `--lr-decay-style constant`).
 */
export function constantSchedule(lr: number, options: { readonly warmup?: number; readonly initLr?: number } = {}): LrSchedule {
  const maxLr = nonNegative(lr, 'lr');
  const W = nonNegative(options.warmup ?? 0, 'warmup');
  const initLr = nonNegative(options.initLr ?? 0, 'initLr');
  return (s: number): number => {
    checkCount(s);
    if (W > 0 && s <= W) return initLr + ((maxLr - initLr) * s) / W;
    return maxLr;
  };
}

/** Apertus 8B pretraining schedule (§4.1): max 1.1e-4, min 1.1e-5, W = 4,096,000, D = 3,662,109,375, C = 403,905,806 samples, 1-sqrt. */
export const APERTUS_8B_WSD: Readonly<Required<WsdOptions>> = Object.freeze({
  maxLr: 1.1e-4,
  minLr: 1.1e-5,
  initLr: 0,
  warmup: 4_096_000,
  total: 3_662_109_375,
  cooldown: 403_905_806,
  style: '1-sqrt',
});

/**
 * Megatron's scheduler bookkeeping around a schedule: the count starts at 0 (so the first update
 * uses lr(0), which is 0 with a warm-up from 0) and is advanced **after** each optimizer step by
 * the samples consumed (`global batch size`) or by 1 when counting steps.
 *
 * @example
 * ```ts
 * const sched = new LrScheduler(wsdSchedule(APERTUS_8B_WSD));
 * for (;;) { opt.step(sched.lr); sched.step(globalBatchSize); }
 * ```
 */
export class LrScheduler {
  private _count: number;
  /** The schedule being followed. */
  readonly schedule: LrSchedule;

  /**
   * @param schedule - count → lr
   * @param start - initial count (default 0)
   */
  constructor(schedule: LrSchedule, start = 0) {
    checkCount(start);
    this.schedule = schedule;
    this._count = start;
  }

  /** Samples (or steps) consumed so far. */
  get count(): number {
    return this._count;
  }

  /** Learning rate for the next update: `schedule(count)`. */
  get lr(): number {
    return this.schedule(this._count);
  }

  /**
   * Advance the count after an optimizer step and return the new lr.
   * @param increment - samples consumed by the step (its global batch size), or 1 (default)
   */
  step(increment = 1): number {
    if (typeof increment !== 'number' || !Number.isFinite(increment) || increment < 0) throw fail('increment', `must be a finite number ≥ 0, got ${String(increment)}`);
    this._count += increment;
    return this.lr;
  }

  /** JSON-able state for checkpoints. */
  stateDict(): { count: number } {
    return { count: this._count };
  }

  /** Restore the count saved by {@link stateDict}. */
  loadStateDict(state: { readonly count: number }): void {
    checkCount(state?.count);
    this._count = state.count;
  }
}
