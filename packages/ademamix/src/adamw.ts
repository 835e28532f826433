// AdamW (Loshchilov & Hutter) as torch.optim.AdamW computes it (single-tensor path, PyTorch 1.13):
//
//   t ← t + 1
//   θ  ← θ·(1 − lr·λ)                                   (decoupled decay first)
//   m  ← β1·m + (1−β1)·g                                (fused multiply-add, as torch's add_)
//   v  ← β2·v + (1−β2)·g²                               (fused, as torch's addcmul_)
//   θ  ← θ − (lr/(1−β1^t)) · m / (sqrt(v)/sqrt(1−β2^t) + eps)
//
// Same parameter groups, state handling and rounding rules as AdEMAMix (see ademamix.ts).

import { OptimizerError } from './errors';
import { powInt } from './pow';
import { Optimizer } from './optimizer';
import { adamwUpdateKernel } from './update';
import type { ArithmeticOptions, BaseHyperparameters, GroupingOptions, ParamGroupInput, ParamState } from './optimizer';
import type { JsonValue } from './state-dict';
import type { FloatArray, NamedParams } from './types';

/** Hyperparameters of an AdamW parameter group. */
export interface AdamWHyperparameters extends BaseHyperparameters {
  /** `[β1, β2]`, each in [0, 1). */
  betas: readonly [number, number];
  /** Added to the denominator outside the square root (≥ 0). */
  eps: number;
}

/** Constructor options of {@link AdamW}: defaults for every group plus grouping options. */
export type AdamWOptions = Partial<AdamWHyperparameters> & GroupingOptions & ArithmeticOptions;

/** torch.optim.AdamW defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01. */
export const ADAMW_DEFAULTS: Readonly<AdamWHyperparameters> = Object.freeze({
  lr: 1e-3,
  betas: [0.9, 0.999] as const,
  eps: 1e-8,
  weightDecay: 0.01,
});

/**
 * The AdamW optimizer, sharing parameter groups, state dict and `step(lr)` with {@link AdEMAMix}.
 * State buffers: `exp_avg`, `exp_avg_sq`.
 */
export class AdamW extends Optimizer<AdamWHyperparameters> {
  /**
   * @param params - named parameters (`[name, param]` pairs or a Map) or explicit parameter groups
   * @param options - default hyperparameters (see {@link ADAMW_DEFAULTS}) and grouping options
   * @throws OptimizerError `InvalidHyperparameter`, `InvalidParams`, `ShapeMismatch`
   */
  constructor(params: NamedParams | readonly ParamGroupInput<AdamWHyperparameters>[], options: AdamWOptions = {}) {
    const { splitWeightDecay, noWeightDecay, arithmetic, ...rest } = options;
    const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as Partial<AdamWHyperparameters>;
    const grouping: GroupingOptions = {
      ...(splitWeightDecay !== undefined ? { splitWeightDecay } : {}),
      ...(noWeightDecay !== undefined ? { noWeightDecay } : {}),
    };
    super('AdamW', params, { ...ADAMW_DEFAULTS, ...defined }, grouping);
    if (arithmetic !== undefined) this.arithmetic = arithmetic;
  }

  protected override bufferNames(): readonly string[] {
    return ['exp_avg', 'exp_avg_sq'];
  }

  protected override validateHyperparameters(h: Readonly<AdamWHyperparameters>, group: string): void {
    super.validateHyperparameters(h, group);
    const err = (field: string, msg: string): OptimizerError => new OptimizerError('InvalidHyperparameter', `group "${group}": ${field} ${msg}`, { field });
    if (!Array.isArray(h.betas) || h.betas.length !== 2) throw err('betas', 'must be [beta1, beta2]');
    h.betas.forEach((b, i) => {
      if (typeof b !== 'number' || !(b >= 0 && b < 1)) throw err(`betas[${i}]`, `must be in [0, 1), got ${String(b)}`);
    });
    if (typeof h.eps !== 'number' || !Number.isFinite(h.eps) || h.eps < 0) throw err('eps', `must be a finite number ≥ 0, got ${String(h.eps)}`);
  }

  protected override hyperparametersToJson(h: Readonly<AdamWHyperparameters>): { [key: string]: JsonValue } {
    return { lr: h.lr, betas: [...h.betas], eps: h.eps, weightDecay: h.weightDecay };
  }

  protected override hyperparametersFromJson(json: { readonly [key: string]: JsonValue }, group: string): AdamWHyperparameters {
    for (const k of ['lr', 'betas', 'eps', 'weightDecay'] as const) {
      if (!(k in json)) throw new OptimizerError('InvalidHyperparameter', `group "${group}": missing ${k}`, { field: k });
    }
    const betas = json.betas;
    if (!Array.isArray(betas) || betas.length !== 2) throw new OptimizerError('InvalidHyperparameter', `group "${group}": betas must be [beta1, beta2]`, { field: 'betas' });
    return { lr: json.lr as number, betas: [betas[0] as number, betas[1] as number], eps: json.eps as number, weightDecay: json.weightDecay as number };
  }

  protected override updateParam(data: FloatArray, grad: FloatArray, st: ParamState, h: Readonly<AdamWHyperparameters>): void {
    const t = st.step;
    const [beta1, beta2] = h.betas;
    adamwUpdateKernel.run({
      param: data, grad, m: st.buffers.exp_avg!, v: st.buffers.exp_avg_sq!,
      beta1, beta2, eps: h.eps, lr: h.lr, weightDecay: h.weightDecay, bc1: 1 - powInt(beta1, t), bc2: 1 - powInt(beta2, t), arithmetic: this.arithmetic,
    });
  }
}

