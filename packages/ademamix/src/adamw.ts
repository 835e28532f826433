// AdamW (Loshchilov & Hutter) as torch.optim.AdamW computes it (single-tensor path, PyTorch 1.13):
//
//   t ← t + 1
//   θ  ← θ·(1 − lr·λ)                                   (decoupled decay first)
//   m  ← β1·m + (1−β1)·g                                (fused multiply-add, as torch's add_)
//   v  ← β2·v + (1−β2)·g²                               (fused, as torch's addcmul_)
//   θ  ← θ − (lr/(1−β1^t)) · m / (sqrt(v)/sqrt(1−β2^t) + eps)
//
// Same parameter groups, state handling and rounding rules as AdEMAMix (see ademamix.ts).

import { adamwUpdate, type AdamwUpdateArgs } from '@apertus/tensor';
import { OptimizerError } from './errors';
import { fmaF32, fmaF64 } from './fma';
import { powInt } from './pow';
import { Optimizer } from './optimizer';
import { adamwSimd } from './simd-step';
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

  protected override updateParam(data: FloatArray, grad: FloatArray, st: ParamState, h: Readonly<AdamWHyperparameters>, onDevice: boolean): void {
    const t = st.step;
    const [beta1, beta2] = h.betas;
    const c: AdamWConstants = { beta1, beta2, eps: h.eps, lr: h.lr, weightDecay: h.weightDecay, bc1: 1 - powInt(beta1, t), bc2: 1 - powInt(beta2, t) };
    const m = st.buffers.exp_avg!, v = st.buffers.exp_avg_sq!;
    if (onDevice) adamwUpdate({ param: data as Float32Array, grad: grad as Float32Array, m: m as Float32Array, v: v as Float32Array, ...c });
    else if (data instanceof Float32Array && this.arithmetic === 'fast') adamwFast(data, grad, m as Float32Array, v as Float32Array, c);
    else if (data instanceof Float32Array) adamwF32(data, grad, m as Float32Array, v as Float32Array, c);
    else adamwF64(data, grad, m, v, c);
  }
}

/** The constants of one AdamW step of one group: hyperparameters and bias corrections 1 − βᵗ (the scalar fields of the registry's `adamwUpdate`). */
export type AdamWConstants = Omit<AdamwUpdateArgs, 'param' | 'grad' | 'm' | 'v'>;

/**
 * The update for float32 parameters: every operation rounded to float32, torch's fused ones
 * fused. Whole groups of 4 run in WebAssembly SIMD with the same bits (simd-step.ts) unless
 * `simd` is false.
 */
export function adamwF32(data: Float32Array, grad: FloatArray, m: Float32Array, v: Float32Array, c: AdamWConstants, simd = true): void {
  const f = Math.fround;
  const b1 = f(c.beta1), c1 = f(1 - c.beta1), b2 = f(c.beta2), c2 = f(1 - c.beta2);
  const decay = f(1 - c.lr * c.weightDecay), sbc2 = f(Math.sqrt(c.bc2)), eps = f(c.eps), nstep = f(-c.lr / c.bc1);
  const start = simd ? adamwSimd(false, data, grad, m, v, { b1, c1, b2, c2, decay, sbc2, eps, nstep }) : 0;
  for (let i = start; i < data.length; i++) {
    const g = f(grad[i]!);
    const p = f(data[i]! * decay); // = data[i] when weightDecay = 0 (decay = 1)
    const mi = (m[i] = fmaF32(g, c1, f(m[i]! * b1)));
    const vi = (v[i] = fmaF32(f(c2 * g), g, f(v[i]! * b2)));
    const denom = f(f(f(Math.sqrt(vi)) / sbc2) + eps);
    data[i] = f(p + f(f(nstep * mi) / denom));
  }
}

/**
 * The update in double precision per element, rounded only where stored (`arithmetic: 'fast'`);
 * whole groups of 4 on f64 lanes in WebAssembly SIMD with the same bits unless `simd` is false.
 */
export function adamwFast(data: Float32Array, grad: FloatArray, m: Float32Array, v: Float32Array, c: AdamWConstants, simd = true): void {
  const { beta1, beta2, eps } = c;
  const c1 = 1 - beta1, c2 = 1 - beta2, sbc2 = Math.sqrt(c.bc2), nstep = -c.lr / c.bc1, decay = 1 - c.lr * c.weightDecay;
  const start = simd ? adamwSimd(true, data, grad, m, v, { b1: beta1, c1, b2: beta2, c2, decay, sbc2, eps, nstep }) : 0;
  for (let i = start; i < data.length; i++) {
    const g = grad[i]!;
    m[i] = m[i]! * beta1 + g * c1;
    v[i] = v[i]! * beta2 + c2 * g * g;
    data[i] = data[i]! * decay + (nstep * m[i]!) / (Math.sqrt(v[i]!) / sbc2 + eps);
  }
}

/** The update for float64 parameters, with torch's fused multiply-adds. */
function adamwF64(data: FloatArray, grad: FloatArray, m: FloatArray, v: FloatArray, c: AdamWConstants): void {
  const { beta1, beta2, eps } = c;
  const c1 = 1 - beta1, c2 = 1 - beta2, sbc2 = Math.sqrt(c.bc2), nstep = -c.lr / c.bc1, decay = 1 - c.lr * c.weightDecay;
  for (let i = 0; i < data.length; i++) {
    const g = grad[i]!;
    const p = c.weightDecay !== 0 ? data[i]! * decay : data[i]!;
    const mi = (m[i] = fmaF64(g, c1, m[i]! * beta1));
    const vi = (v[i] = fmaF64(c2 * g, g, v[i]! * beta2));
    data[i] = p + (nstep * mi) / (Math.sqrt(vi) / sbc2 + eps);
  }
}
