// AdEMAMix (Pagliardini, Ablin, Grangier 2024) with the PyTorch / Megatron conventions used by
// Apertus (training-recipe.md §1.1–1.3):
//
//   t ← t + 1;  α_t = f_α(t);  β3_t = f_β3(t)            (schedulers at the 1-based step)
//   m1 ← β1·m1 + (1−β1)·g                                 (m1 := g when β1 = 0, no buffer)
//   m2 ← β3_t·m2 + (1−β3_t)·g                             (no bias correction on m2)
//   nu ← β2·nu + (1−β2)·g²
//   u  ← (m1/(1−β1^t) + α_t·m2) / (sqrt(nu)/sqrt(1−β2^t) + eps)      (eps outside the sqrt)
//   u  ← u + λ·θ                                          (decoupled decay on the pre-update weights)
//   θ  ← θ − lr·u
//
// Rounding follows torch's in-place ops one by one: every operation rounds to the parameter's
// precision and `x.add_(y, alpha=a)`, `x.addcmul_(y, z, value=v)` and `u.add_(θ, alpha=λ)` are
// fused multiply-adds (one rounding), as torch's CPU (FMA builds) and CUDA kernels compute them.
// Scalars (β1, 1−β1, 1−β1^t, sqrt(1−β2^t), eps, α_t, λ, −lr, ...) are computed in double and, for
// float32 parameters, rounded to float32 before use, as torch does with Python scalars. β^t is
// correctly rounded (`powInt`); the warm-up schedulers use the engine's Math.log / Math.pow, which
// can differ from C's libm by one ulp (33 of the 100,001 β3_t values of a T = 100,000 warm-up).
// Result: bit-identical to torch on CPU in the golden tests (test/golden.py), and at worst ulp-level
// differences elsewhere.

import { OptimizerError } from './errors';
import { powInt } from './pow';
import { Optimizer } from './optimizer';
import type { ArithmeticOptions, BaseHyperparameters, GroupingOptions, ParamGroupInput, ParamState } from './optimizer';
import { alphaWarmup, beta3Warmup } from './schedulers';
import { ademamixUpdateKernel } from './update';
import type { JsonValue } from './state-dict';
import type { FloatArray, NamedParams } from './types';

/**
 * Index convention of the α / β3 warm-up schedulers:
 * - `torch` (default; PyTorch reference, Megatron, bitsandbytes): evaluated at the 1-based step,
 *   with 1e-8 inside the half-life log.
 * - `optax`: the JAX reference — evaluated at the 0-based count (first step: α = 0, β3 = β1) and
 *   no 1e-8; bias corrections still use the 1-based count.
 */
export type SchedulerConvention = 'torch' | 'optax';

/** Hyperparameters of an AdEMAMix parameter group. */
export interface AdEMAMixHyperparameters extends BaseHyperparameters {
  /** `[β1, β2, β3]`: fast EMA, second moment, slow EMA coefficients, each in [0, 1). */
  betas: readonly [number, number, number];
  /** Final mixing coefficient α of the slow EMA (≥ 0). */
  alpha: number;
  /** T_α: steps of linear α warm-up from 0, or `null` for a constant α. */
  alphaWarmup: number | null;
  /** T_β3: steps of half-life-linear β3 warm-up from β1, or `null` for a constant β3. */
  beta3Warmup: number | null;
  /** Added to the denominator outside the square root (≥ 0). */
  eps: number;
  /** Scheduler index convention (default `torch`). */
  schedulerConvention: SchedulerConvention;
}

/** Constructor options of {@link AdEMAMix}: defaults for every group plus grouping options. */
export type AdEMAMixOptions = Partial<AdEMAMixHyperparameters> & GroupingOptions & ArithmeticOptions;

/** Defaults of the PyTorch reference class (training-recipe.md §1.4): lr 1e-3, betas (0.9, 0.999, 0.9999), α 2, eps 1e-8, wd 0, no warm-up. */
export const ADEMAMIX_DEFAULTS: Readonly<AdEMAMixHyperparameters> = Object.freeze({
  lr: 1e-3,
  betas: [0.9, 0.999, 0.9999] as const,
  alpha: 2,
  alphaWarmup: null,
  beta3Warmup: null,
  eps: 1e-8,
  weightDecay: 0,
  schedulerConvention: 'torch',
});

/** Apertus pretraining settings (training-recipe.md §1.5): betas (0.9, 0.999, 0.9999), α 8, T_α = T_β3 = 100,000, eps 1e-8, wd 0.1. The lr comes from the WSD schedule. */
export const APERTUS_PRETRAINING_ADEMAMIX: Readonly<Omit<AdEMAMixHyperparameters, 'lr'>> = Object.freeze({
  betas: [0.9, 0.999, 0.9999] as const,
  alpha: 8,
  alphaWarmup: 100_000,
  beta3Warmup: 100_000,
  eps: 1e-8,
  weightDecay: 0.1,
  schedulerConvention: 'torch',
});

const HYPER_KEYS = ['lr', 'betas', 'alpha', 'alphaWarmup', 'beta3Warmup', 'eps', 'weightDecay', 'schedulerConvention'] as const;

/** α_t and β3_t that AdEMAMix uses at the 1-based step `t` with hyperparameters `h`. */
export function ademamixCoefficients(t: number, h: Readonly<AdEMAMixHyperparameters>): { alpha: number; beta3: number } {
  const optax = h.schedulerConvention === 'optax';
  const s = optax ? t - 1 : t;
  const [beta1, , beta3] = h.betas;
  return {
    alpha: h.alphaWarmup === null ? h.alpha : alphaWarmup(s, h.alpha, h.alphaWarmup),
    beta3: h.beta3Warmup === null ? beta3 : beta3Warmup(s, beta3, h.beta3Warmup, beta1, optax ? 0 : 1e-8),
  };
}

/**
 * The AdEMAMix optimizer. Give it named parameters (split into `decay` / `no_decay` groups as
 * Megatron does) or explicit groups.
 *
 * @example
 * ```ts
 * const opt = new AdEMAMix(model.namedParameters(), { lr: 1e-4, betas: [0.9, 0.999, 0.9999], alpha: 8,
 *   alphaWarmup: 100_000, beta3Warmup: 100_000, weightDecay: 0.1 });
 * clipGradNorm(params, 0.1);
 * opt.step(schedule(consumedSamples));
 * ```
 */
export class AdEMAMix extends Optimizer<AdEMAMixHyperparameters> {
  /**
   * @param params - named parameters (`[name, param]` pairs or a Map) or explicit parameter groups
   * @param options - default hyperparameters (see {@link ADEMAMIX_DEFAULTS}) and grouping options
   * @throws OptimizerError `InvalidHyperparameter`, `InvalidParams`, `ShapeMismatch`
   */
  constructor(params: NamedParams | readonly ParamGroupInput<AdEMAMixHyperparameters>[], options: AdEMAMixOptions = {}) {
    const { splitWeightDecay, noWeightDecay, arithmetic, ...rest } = options;
    const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as Partial<AdEMAMixHyperparameters>;
    const grouping: GroupingOptions = {
      ...(splitWeightDecay !== undefined ? { splitWeightDecay } : {}),
      ...(noWeightDecay !== undefined ? { noWeightDecay } : {}),
    };
    super('AdEMAMix', params, { ...ADEMAMIX_DEFAULTS, ...defined }, grouping);
    if (arithmetic !== undefined) this.arithmetic = arithmetic;
  }

  protected override bufferNames(h: Readonly<AdEMAMixHyperparameters>): readonly string[] {
    return h.betas[0] === 0 ? ['exp_avg_slow', 'exp_avg_sq'] : ['exp_avg_fast', 'exp_avg_slow', 'exp_avg_sq'];
  }

  protected override validateHyperparameters(h: Readonly<AdEMAMixHyperparameters>, group: string): void {
    super.validateHyperparameters(h, group);
    const err = (field: string, msg: string): OptimizerError => new OptimizerError('InvalidHyperparameter', `group "${group}": ${field} ${msg}`, { field });
    if (!Array.isArray(h.betas) || h.betas.length !== 3) throw err('betas', 'must be [beta1, beta2, beta3]');
    h.betas.forEach((b, i) => {
      if (typeof b !== 'number' || !(b >= 0 && b < 1)) throw err(`betas[${i}]`, `must be in [0, 1), got ${String(b)}`);
    });
    if (typeof h.alpha !== 'number' || !Number.isFinite(h.alpha) || h.alpha < 0) throw err('alpha', `must be a finite number ≥ 0, got ${String(h.alpha)}`);
    if (typeof h.eps !== 'number' || !Number.isFinite(h.eps) || h.eps < 0) throw err('eps', `must be a finite number ≥ 0, got ${String(h.eps)}`);
    for (const f of ['alphaWarmup', 'beta3Warmup'] as const) {
      const v = h[f];
      if (v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 1)) throw err(f, `must be null or a positive integer, got ${String(v)}`);
    }
    if (h.schedulerConvention !== 'torch' && h.schedulerConvention !== 'optax') throw err('schedulerConvention', `must be "torch" or "optax", got ${String(h.schedulerConvention)}`);
  }

  protected override hyperparametersToJson(h: Readonly<AdEMAMixHyperparameters>): { [key: string]: JsonValue } {
    return { lr: h.lr, betas: [...h.betas], alpha: h.alpha, alphaWarmup: h.alphaWarmup, beta3Warmup: h.beta3Warmup, eps: h.eps, weightDecay: h.weightDecay, schedulerConvention: h.schedulerConvention };
  }

  protected override hyperparametersFromJson(json: { readonly [key: string]: JsonValue }, group: string): AdEMAMixHyperparameters {
    for (const k of HYPER_KEYS) {
      if (!(k in json)) throw new OptimizerError('InvalidHyperparameter', `group "${group}": missing ${k}`, { field: k });
    }
    const betas = json.betas;
    if (!Array.isArray(betas) || betas.length !== 3) throw new OptimizerError('InvalidHyperparameter', `group "${group}": betas must be [beta1, beta2, beta3]`, { field: 'betas' });
    return {
      lr: json.lr as number,
      betas: [betas[0] as number, betas[1] as number, betas[2] as number],
      alpha: json.alpha as number,
      alphaWarmup: json.alphaWarmup as number | null,
      beta3Warmup: json.beta3Warmup as number | null,
      eps: json.eps as number,
      weightDecay: json.weightDecay as number,
      schedulerConvention: json.schedulerConvention as SchedulerConvention,
    };
  }

  protected override updateParam(data: FloatArray, grad: FloatArray, st: ParamState, h: Readonly<AdEMAMixHyperparameters>): void {
    const t = st.step;
    const [beta1, beta2] = h.betas;
    const { alpha, beta3 } = ademamixCoefficients(t, h);
    ademamixUpdateKernel.run({
      param: data, grad, m1: beta1 === 0 ? null : st.buffers.exp_avg_fast!, m2: st.buffers.exp_avg_slow!, nu: st.buffers.exp_avg_sq!,
      beta1, beta2, beta3, alpha, bc1: 1 - powInt(beta1, t), bc2: 1 - powInt(beta2, t), eps: h.eps, weightDecay: h.weightDecay, lr: h.lr, arithmetic: this.arithmetic,
    });
  }
}

