// LoRA (Hu et al. 2021) as Hugging Face PEFT applies it to a causal LM:
//   y = x·Wᵀ + s · dropout(x)·Aᵀ·Bᵀ,  A [r, in], B [out, r],  s = lora_alpha / r  (√r with rsLoRA)
// A starts kaiming-uniform (a = √5, i.e. U(−1/√in, 1/√in)), B starts at zero, so a fresh adapter
// leaves the model unchanged. The base weights W stay frozen; only A and B are trained.
// PEFT's `trainable_token_indices` (TrainableTokens) adds rows of the embedding and of the LM head
// that are trained in place: the adapter holds their new values [n, H] (PEFT's
// `trainable_tokens_delta`, initialised to the base rows), and the effective table is the base
// with those rows replaced (PEFT's `index_copy`), so special tokens a base never saw can learn.

import { isGradEnabled, isStoredWeight, linear, matmul, noGrad, Rng, Tensor } from '@apertus/tensor';
import { outputVocabSize, type ApertusConfig } from './config';
import type { Projection, ProjName } from './layer';
import { AdapterError } from './errors';
import { loraLinear } from './lora-linear';
import { parameterShapes } from './params';
import { replaceRows } from './replace-rows';

/**
 * The linear projections of a decoder layer, by their Hugging Face module names (`gate_proj` exists
 * only in SwiGLU models; Apertus' xIELU MLP has up_proj and down_proj).
 */
export const LORA_TARGET_MODULES: readonly ProjName[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

/** The tables whose rows `trainable_token_indices` may name (PEFT's keys) and their module paths. */
export const TOKEN_MODULES = { embed_tokens: 'model.embed_tokens', lm_head: 'lm_head' } as const;
/** A key of {@link TOKEN_MODULES}. */
export type TokenModule = keyof typeof TOKEN_MODULES;

/** What an adapter reads and sets of the model it adapts (an `ApertusModel`). */
export interface AdaptableModel {
  readonly config: ApertusConfig;
  readonly params: ReadonlyMap<string, Tensor>;
  projection: Projection;
  adapter: LoraAdapter | null;
}

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
  /**
   * Token rows trained in place, by table (PEFT's dict form; PEFT's list form means the input
   * embedding only), or null. The LM head is untied in Apertus, so it is listed on its own.
   */
  readonly trainable_token_indices: Readonly<Partial<Record<TokenModule, readonly number[]>>> | null;
}

/** The trained rows of one table: token ids and their values [ids.length, H]. */
export interface TrainableTokens {
  /** Token ids (rows of the table), distinct, in the order given. */
  readonly indices: readonly number[];
  /** Their values [indices.length, H] (PEFT's `trainable_tokens_delta`: the rows themselves, not a difference). */
  readonly values: Tensor;
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
export const LORA_CONFIG_KEYS: readonly string[] = ['r', 'lora_alpha', 'lora_dropout', 'target_modules', 'use_rslora', 'trainable_token_indices'];

/** `trainable_token_indices` as PEFT takes it: a list (the input embedding) or {embed_tokens, lm_head} lists of distinct ids ≥ 0. */
function parseTokenIndices(raw: unknown, file?: string): LoraConfig['trainable_token_indices'] {
  if (raw === undefined || raw === null) return null;
  const list = (v: unknown, key: string): number[] => {
    if (!Array.isArray(v) || v.length === 0 || !v.every((i) => Number.isInteger(i) && i >= 0) || new Set(v).size !== v.length) {
      throw new AdapterError(key, `expected a non-empty list of distinct token ids ≥ 0, got ${JSON.stringify(v)}`, file);
    }
    return v as number[];
  };
  if (Array.isArray(raw)) return { embed_tokens: list(raw, 'trainable_token_indices') };
  if (!isRecord(raw)) throw new AdapterError('trainable_token_indices', `expected a list of token ids or {"embed_tokens": [...], "lm_head": [...]}, got ${JSON.stringify(raw)}`, file);
  const out: Partial<Record<TokenModule, number[]>> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!(k in TOKEN_MODULES)) throw new AdapterError('trainable_token_indices', `${JSON.stringify(k)} is not a token table of an Apertus model (${Object.keys(TOKEN_MODULES).join(', ')})`, file);
    out[k as TokenModule] = list(v, `trainable_token_indices.${k}`);
  }
  if (Object.keys(out).length === 0) throw new AdapterError('trainable_token_indices', 'expected at least one table', file);
  return out;
}

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
  return { r, lora_alpha, lora_dropout, target_modules, use_rslora: rs, trainable_token_indices: parseTokenIndices(raw.trainable_token_indices, file) };
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
 * module path (`model.layers.N.self_attn.q_proj`), and the trained token rows of the embedding and
 * LM head. The decoder calls {@link LoraAdapter.project} for each projection and
 * {@link LoraAdapter.table} for the two token tables; `enabled = false` gives the base model back
 * (e.g. the DPO/QRPO reference) without a second copy of the weights.
 */
export class LoraAdapter {
  /** Hyper-parameters. */
  readonly config: LoraConfig;
  /** s = lora_alpha / r (or / √r with rsLoRA). */
  readonly scaling: number;
  /** Factors by module path. */
  readonly modules: ReadonlyMap<string, LoraPair>;
  /** Trained token rows by table module path (`model.embed_tokens`, `lm_head`). */
  readonly tokens: ReadonlyMap<string, TrainableTokens>;
  /** When false, projections are the base model's (the adapter is bypassed). */
  enabled = true;
  /** When true, dropout is applied to the adapter's input. */
  training = false;
  private readonly rng: Rng;
  /** Inference: the last merged table per module with the rows it was built from (reused while they are unchanged). */
  private readonly tables = new Map<string, { w: Tensor; rows: Float32Array; table: Tensor }>();

  /**
   * Wrap existing factors and token rows (shapes are checked against `r` and the token lists).
   * @param seed - seed of the dropout masks
   */
  constructor(config: LoraConfig, modules: ReadonlyMap<string, LoraPair>, seed = 0, tokens: ReadonlyMap<string, TrainableTokens> = new Map()) {
    this.config = config;
    this.scaling = config.lora_alpha / (config.use_rslora ? Math.sqrt(config.r) : config.r);
    for (const [m, { A, B }] of modules) {
      if (A.rank !== 2 || B.rank !== 2 || A.shape[0] !== config.r || B.shape[1] !== config.r) {
        throw new AdapterError(m, `factors A [${A.shape}] and B [${B.shape}] do not have rank r = ${config.r}`);
      }
    }
    for (const [m, { indices, values }] of tokens) {
      if (values.rank !== 2 || values.shape[0] !== indices.length) throw new AdapterError(m, `token values [${values.shape}] do not hold one row per index (${indices.length})`);
    }
    this.modules = modules;
    this.tokens = tokens;
    this.rng = new Rng(seed);
  }

  /**
   * A fresh adapter for `model` (or a model of that architecture): A ~ U(−1/√in, 1/√in) (PEFT's
   * kaiming-uniform with a = √5), B = 0, both trainable; trainable token rows start as the base
   * model's rows (as PEFT's), so they need the model itself, not only its config.
   */
  static init(model: AdaptableModel | ApertusConfig, config: LoraConfig, seed = 0): LoraAdapter {
    const arch = 'params' in model ? model.config : model;
    const rng = new Rng(seed);
    const modules = new Map<string, LoraPair>();
    const shapes = parameterShapes(arch);
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
    const tokens = new Map<string, TrainableTokens>();
    for (const [key, indices] of Object.entries(config.trainable_token_indices ?? {})) {
      if (!('params' in model)) throw new AdapterError('trainable_token_indices', 'token rows start as the base rows: initialise the adapter from the model, not its config');
      const module = TOKEN_MODULES[key as TokenModule], w = model.params.get(`${module}.weight`);
      checkTable(`trainable_token_indices.${key}`, module, indices, arch);
      if (!w) throw new AdapterError(`trainable_token_indices.${key}`, `the model's ${module}.weight is packed (inference only)`);
      const values = noGrad(() => Tensor.from(tableRows(w, indices), [indices.length, arch.hidden_size])).requireGrad();
      tokens.set(module, { indices, values });
    }
    return new LoraAdapter({ ...config, target_modules: targets }, modules, seed + 1, tokens);
  }

  /** The trainable tensors, named as PEFT saves them (`base_model.model.<module>.lora_A.weight`, `….token_adapter.trainable_tokens_delta`). */
  parameters(): [string, Tensor][] {
    const out: [string, Tensor][] = [];
    for (const [m, { A, B }] of this.modules) out.push([`base_model.model.${m}.lora_A.weight`, A], [`base_model.model.${m}.lora_B.weight`, B]);
    for (const [m, { values }] of this.tokens) out.push([`base_model.model.${m}.token_adapter.trainable_tokens_delta`, values]);
    return out;
  }

  /** Number of trainable scalars. */
  parameterCount(): number {
    return this.parameters().reduce((n, [, t]) => n + t.size, 0);
  }

  /**
   * Projection `name` of layer `layer`: x·Wᵀ, plus s · dropout(x)·Aᵀ·Bᵀ when it is adapted and the
   * adapter enabled, as one fused op ({@link loraLinear}; the decoder's projection hook, an arrow so
   * it can be handed over unbound).
   */
  readonly project: Projection = (x, w, layer, name) => {
    const pair = this.enabled ? this.modules.get(modulePath(layer, name)) : undefined;
    if (!pair) return linear(x, w);
    const p = this.training ? this.config.lora_dropout : 0;
    return loraLinear(x, w, pair.A, pair.B, this.scaling, p, p > 0 ? this.rng.nextU32() : 0);
  };

  /**
   * The token table `module` (`model.embed_tokens` or `lm_head`) as the model uses it: `w` with the
   * trained rows replaced when the adapter is enabled and trains rows of that table (PEFT's
   * `get_merged_weights`; differentiable in the rows only), else `w` itself.
   */
  table(module: string, w: Tensor): Tensor {
    const t = this.enabled ? this.tokens.get(module) : undefined;
    if (!t) return w;
    if (isStoredWeight(w)) throw new AdapterError(module, `trainable token rows over a stored ${w.dtype} table: merge the adapter into a float model instead`);
    if (isGradEnabled()) return replaceRows(w, t.indices, t.values);
    // Generation asks for the tables at every token: reuse the merged copy while the rows are unchanged.
    const rows = t.values.data, cached = this.tables.get(module);
    if (cached && cached.w === w && cached.rows.every((v, i) => v === rows[i])) return cached.table;
    const table = replaceRows(w, t.indices, t.values);
    this.tables.set(module, { w, rows: rows.slice(), table });
    return table;
  }

  /**
   * Route every projection and token table of `model` through this adapter and freeze the base: no
   * base tensor requires a gradient any more, so backward computes none, and `model.parameters()`
   * (what optimizers and clipping see) becomes this adapter's tensors, so no optimizer state is kept
   * for the base. `saveCheckpoint` then writes the adapter next to the base weights. Throws
   * AdapterError when a factor or token row does not fit the model.
   */
  attach(model: AdaptableModel): void {
    for (const [m, { A, B }] of this.modules) {
      const w = model.params.get(`${m}.weight`);
      if (!w) throw new AdapterError(m, 'the model has no such projection');
      if (B.shape[0] !== w.shape[0] || A.shape[1] !== w.shape[1]) throw new AdapterError(m, `factors B [${B.shape}] · A [${A.shape}] do not match the weight [${w.shape}]`);
    }
    for (const [m, { indices, values }] of this.tokens) {
      checkTable(m, m, indices, model.config);
      if (values.shape[1] !== model.config.hidden_size) throw new AdapterError(m, `token rows [${values.shape}] do not match the hidden size ${model.config.hidden_size}`);
    }
    for (const t of model.params.values()) if (t.requiresGrad) t.requireGrad(false);
    model.projection = this.project;
    model.adapter = this;
  }

  /**
   * The merged weight of module `module` (a new tensor of W's dtype), or `w` itself when the adapter
   * does not touch it: W + s·B·A for a projection (rounded as PEFT's merge: ΔW = fl32(B·A)·s, then
   * W + ΔW), W with the trained rows copied in for a token table.
   */
  mergeWeight(module: string, w: Tensor): Tensor {
    if (isStoredWeight(w) && (this.tokens.has(module) || this.modules.has(module))) {
      throw new AdapterError(module, `the base weight is a stored ${w.dtype} weight: merge the adapter into the float checkpoint, then quantize`);
    }
    const tokens = this.tokens.get(module);
    if (tokens) {
      const merged = noGrad(() => replaceRows(w, tokens.indices, tokens.values)) as Tensor;
      return w.dtype === 'f32' ? merged : merged.to(w.dtype);
    }
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
 * Trained rows of token table `module` must be rows of it: the embedding has `vocab_size` rows, the
 * LM head {@link outputVocabSize}; a tied model has no head of its own (its rows are the
 * embedding's, listed under embed_tokens).
 */
export function checkTable(field: string, module: string, indices: readonly number[], c: ApertusConfig): void {
  const head = module === TOKEN_MODULES.lm_head;
  if (head && c.tie_word_embeddings) throw new AdapterError(field, "the model's LM head is its embedding (tie_word_embeddings): list the rows under embed_tokens, they train both");
  const rows = head ? outputVocabSize(c) : c.vocab_size;
  const bad = indices.find((i) => i >= rows);
  if (bad !== undefined) throw new AdapterError(field, `token id ${bad} is outside the ${head ? 'output ' : ''}vocabulary (${rows})`);
}

/** Rows `indices` of a float table [V, H] as float32 [n·H]. */
function tableRows(w: Tensor, indices: readonly number[]): Float32Array {
  const W = w.toFloat32(), H = w.shape[1]!, out = new Float32Array(indices.length * H);
  indices.forEach((id, i) => out.set(W.subarray(id * H, (id + 1) * H), i * H));
  return out;
}
