// LoRA (Hu et al. 2021) as Hugging Face PEFT applies it to a causal LM:
//   y = x·Wᵀ + s · dropout(x)·Aᵀ·Bᵀ,  A [r, in], B [out, r],  s = lora_alpha / r  (√r with rsLoRA)
// A starts kaiming-uniform (a = √5, i.e. U(−1/√in, 1/√in)), B starts at zero, so a fresh adapter
// leaves the model unchanged. The base weights W stay frozen; only A and B are trained.

import { add, linear, matmul, mul, noGrad, Rng, scale, Tensor } from '@apertus/tensor';
import type { ApertusConfig } from './config';
import type { Projection, ProjName } from './layer';
import { ApertusModel } from './model';
import { AdapterError } from './errors';
import { parameterShapes } from './params';
import { project } from './packed';

/**
 * The linear projections of a decoder layer, by their Hugging Face module names (`gate_proj` exists
 * only in SwiGLU models; Apertus' xIELU MLP has up_proj and down_proj).
 */
export const LORA_TARGET_MODULES: readonly ProjName[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];


/** LoRA hyper-parameters, with PEFT's `LoraConfig` field names. */
export interface LoraConfig {
  /** Rank of the update. */
  readonly r: number;
  /** Scaling numerator: the update is multiplied by lora_alpha / r. */
  readonly lora_alpha: number;
  /** Dropout probability on the adapter's input while training. */
  readonly lora_dropout: number;
  /** Adapted projections; `"all-linear"` (before {@link LoraAdapter.init} resolves it) = every projection of the model. */
  readonly target_modules: readonly ProjName[] | 'all-linear';
  /** rsLoRA: scale by lora_alpha / √r instead of lora_alpha / r. */
  readonly use_rslora: boolean;
}

/** One adapted projection's factors. */
export interface LoraPair {
  /** Down-projection [r, in]. */
  readonly A: Tensor;
  /** Up-projection [out, r]. */
  readonly B: Tensor;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The `LoraConfig` fields {@link parseLoraConfig} reads. */
export const LORA_CONFIG_KEYS: readonly string[] = ['r', 'lora_alpha', 'lora_dropout', 'target_modules', 'use_rslora'];

/**
 * Validate LoRA settings (unknown keys are refused, to catch `alpha` for `lora_alpha`). Defaults as PEFT's `LoraConfig` (r 8, lora_alpha 8, dropout 0); the
 * target modules default to q_proj and v_proj as PEFT's for Llama-style models, and `"all-linear"`
 * selects every projection (the LM head excepted, as PEFT). Throws AdapterError naming the field.
 */
export function parseLoraConfig(raw: unknown, file?: string): LoraConfig {
  if (!isRecord(raw)) throw new AdapterError('(root)', 'expected an object', file);
  const unknown = Object.keys(raw).find((k) => !LORA_CONFIG_KEYS.includes(k));
  if (unknown !== undefined) throw new AdapterError(unknown, `unknown LoRA setting (known: ${LORA_CONFIG_KEYS.join(', ')})`, file);
  const num = (key: string, dflt: number, ok: (n: number) => boolean, want: string): number => {
    const v = raw[key] ?? dflt;
    if (typeof v !== 'number' || !Number.isFinite(v) || !ok(v)) throw new AdapterError(key, `expected ${want}, got ${JSON.stringify(v)}`, file);
    return v;
  };
  const r = num('r', 8, (n) => Number.isInteger(n) && n >= 1, 'an integer ≥ 1');
  const lora_alpha = num('lora_alpha', 8, (n) => n > 0, 'a positive number');
  const lora_dropout = num('lora_dropout', 0, (n) => n >= 0 && n < 1, 'a probability in [0, 1)');
  const tm = raw.target_modules ?? ['q_proj', 'v_proj'];
  let target_modules: ProjName[] | 'all-linear';
  if (tm === 'all-linear') target_modules = tm;
  else {
    if (!Array.isArray(tm) || tm.length === 0) throw new AdapterError('target_modules', `expected a non-empty list of ${LORA_TARGET_MODULES.join(', ')} or "all-linear", got ${JSON.stringify(tm)}`, file);
    for (const m of tm) {
      if (!(LORA_TARGET_MODULES as readonly unknown[]).includes(m)) {
        throw new AdapterError('target_modules', `${JSON.stringify(m)} is not a projection of an Apertus layer (${LORA_TARGET_MODULES.join(', ')})`, file);
      }
    }
    target_modules = LORA_TARGET_MODULES.filter((m) => (tm as unknown[]).includes(m));
  }
  const rs = raw.use_rslora ?? false;
  if (typeof rs !== 'boolean') throw new AdapterError('use_rslora', `expected true or false, got ${JSON.stringify(rs)}`, file);
  return { r, lora_alpha, lora_dropout, target_modules, use_rslora: rs };
}

/** The module path of a projection weight: `model.layers.0.self_attn.q_proj.weight` → `model.layers.0.self_attn.q_proj`. */
export function moduleOf(weightName: string): string {
  return weightName.endsWith('.weight') ? weightName.slice(0, -'.weight'.length) : weightName;
}

/** The module path of projection `name` of layer `layer`: `model.layers.3.mlp.up_proj`. */
export function modulePath(layer: number, name: ProjName): string {
  const attn = name === 'q_proj' || name === 'k_proj' || name === 'v_proj' || name === 'o_proj';
  return `model.layers.${layer}.${attn ? 'self_attn' : 'mlp'}.${name}`;
}

/**
 * A LoRA adapter over an Apertus model: the (A, B) factors of every adapted projection, keyed by
 * module path (`model.layers.N.self_attn.q_proj`). The decoder calls {@link LoraAdapter.project}
 * for each projection; `enabled = false` gives the base model back (e.g. the DPO/QRPO reference)
 * without a second copy of the weights.
 */
export class LoraAdapter {
  /** Hyper-parameters. */
  readonly config: LoraConfig;
  /** s = lora_alpha / r (or / √r with rsLoRA). */
  readonly scaling: number;
  /** Factors by module path. */
  readonly modules: ReadonlyMap<string, LoraPair>;
  /** When false, projections are the base model's (the adapter is bypassed). */
  enabled = true;
  /** When true, dropout is applied to the adapter's input. */
  training = false;
  private readonly rng: Rng;

  /**
   * Wrap existing factors (shapes are checked against `r`).
   * @param seed - seed of the dropout masks
   */
  constructor(config: LoraConfig, modules: ReadonlyMap<string, LoraPair>, seed = 0) {
    this.config = config;
    this.scaling = config.lora_alpha / (config.use_rslora ? Math.sqrt(config.r) : config.r);
    for (const [m, { A, B }] of modules) {
      if (A.rank !== 2 || B.rank !== 2 || A.shape[0] !== config.r || B.shape[1] !== config.r) {
        throw new AdapterError(m, `factors A [${A.shape}] and B [${B.shape}] do not have rank r = ${config.r}`);
      }
    }
    this.modules = modules;
    this.rng = new Rng(seed);
  }

  /**
   * A fresh adapter for a model of `model` architecture: A ~ U(−1/√in, 1/√in) (PEFT's
   * kaiming-uniform with a = √5), B = 0, both trainable.
   */
  static init(model: ApertusConfig, config: LoraConfig, seed = 0): LoraAdapter {
    const rng = new Rng(seed);
    const modules = new Map<string, LoraPair>();
    const shapes = parameterShapes(model);
    const present = LORA_TARGET_MODULES.filter((t) => shapes.has(`${modulePath(0, t)}.weight`));
    const targets = config.target_modules === 'all-linear' ? present : config.target_modules;
    for (const t of targets) if (!present.includes(t)) throw new AdapterError('target_modules', `${t} is not a projection of this model (${present.join(', ')})`);
    for (const [name, shape] of shapes) {
      const target = targets.find((t) => name.endsWith(`.${t}.weight`));
      if (!target) continue;
      const [out, inp] = shape as [number, number];
      const bound = 1 / Math.sqrt(inp);
      const A = Tensor.rand([config.r, inp], rng, -bound, bound).requireGrad();
      const B = Tensor.zeros([out, config.r]).requireGrad();
      modules.set(moduleOf(name), { A, B });
    }
    return new LoraAdapter({ ...config, target_modules: targets }, modules, seed + 1);
  }

  /** The trainable tensors, named as PEFT saves them (`base_model.model.<module>.lora_A.weight`). */
  parameters(): [string, Tensor][] {
    const out: [string, Tensor][] = [];
    for (const [m, { A, B }] of this.modules) out.push([`base_model.model.${m}.lora_A.weight`, A], [`base_model.model.${m}.lora_B.weight`, B]);
    return out;
  }

  /** Number of trainable scalars. */
  parameterCount(): number {
    let n = 0;
    for (const { A, B } of this.modules.values()) n += A.size + B.size;
    return n;
  }

  /**
   * Projection `name` of layer `layer`: x·Wᵀ, plus s · dropout(x)·Aᵀ·Bᵀ when it is adapted and the
   * adapter enabled (the decoder's projection hook; an arrow so it can be handed over unbound).
   */
  readonly project: Projection = (x, w, layer, name) => {
    const base = project(x, w);
    const pair = this.enabled ? this.modules.get(modulePath(layer, name)) : undefined;
    if (!pair) return base;
    return add(base, scale(linear(linear(this.dropout(x), pair.A), pair.B), this.scaling));
  };

  /**
   * Route every projection of `model` through this adapter and freeze the base: no base tensor
   * requires a gradient any more, so backward computes none, and `model.parameters()` (what
   * optimizers and clipping see) becomes this adapter's factors, so no optimizer state is kept for
   * the base. `saveCheckpoint` then writes the adapter next to the base weights. Throws AdapterError when a factor does
   * not fit the model's projection.
   */
  attach(model: ApertusModel): void {
    for (const [m, { A, B }] of this.modules) {
      const w = model.params.get(`${m}.weight`);
      if (!w) throw new AdapterError(m, 'the model has no such projection');
      if (B.shape[0] !== w.shape[0] || A.shape[1] !== w.shape[1]) throw new AdapterError(m, `factors B [${B.shape}] · A [${A.shape}] do not match the weight [${w.shape}]`);
    }
    for (const t of model.params.values()) if (t.requiresGrad) t.requireGrad(false);
    model.projection = this.project;
    model.adapter = this;
  }

  /** Inverted dropout: zero with probability p, scale the rest by 1/(1 − p). */
  private dropout(x: Tensor): Tensor {
    const p = this.config.lora_dropout;
    if (!this.training || p === 0) return x;
    const keep = new Float32Array(x.size);
    for (let i = 0; i < keep.length; i++) keep[i] = this.rng.uniform() < p ? 0 : 1 / (1 - p);
    return mul(x, Tensor.from(keep, x.shape));
  }

  /**
   * The merged weight W + s·B·A of projection `module` (a new tensor of W's dtype, rounded as
   * PEFT's merge: ΔW = fl32(B·A)·s, then W + ΔW), or `w` itself when the module is not adapted.
   */
  mergeWeight(module: string, w: Tensor): Tensor {
    const pair = this.modules.get(module);
    if (!pair) return w;
    const [out, inp] = w.shape as [number, number];
    if (pair.B.shape[0] !== out || pair.A.shape[1] !== inp) throw new AdapterError(module, `factors B [${pair.B.shape}] · A [${pair.A.shape}] do not match the weight [${w.shape}]`);
    const BA = noGrad(() => matmul(pair.B, pair.A)).data;
    const W = w.toFloat32(), merged = new Float32Array(W.length);
    for (let i = 0; i < W.length; i++) merged[i] = W[i]! + Math.fround(BA[i]! * this.scaling);
    const t = new Tensor(merged, w.shape, 'f32');
    return w.dtype === 'f32' ? t : t.to(w.dtype);
  }
}

/**
 * A new model whose adapted projections are W + s·B·A (PEFT's `merge_and_unload`): it computes
 * what the base model with the adapter enabled computes, without the adapter. Every other tensor
 * is shared with `model`; `model` itself is unchanged.
 */
export function mergeAdapter(model: ApertusModel, adapter: LoraAdapter): ApertusModel {
  for (const m of adapter.modules.keys()) if (!model.params.has(`${m}.weight`)) throw new AdapterError(m, 'the model has no such projection');
  const params = new Map<string, Tensor>();
  for (const [name, w] of model.params) {
    const merged = adapter.mergeWeight(moduleOf(name), w);
    if (merged !== w) { merged.name = name; if (w.requiresGrad) merged.requireGrad(); }
    params.set(name, merged);
  }
  return new ApertusModel(model.config, params);
}
