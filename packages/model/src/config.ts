import { ConfigError } from './errors';

/** llama3 RoPE scaling parameters (HF `rope_scaling` / `rope_parameters`). */
export interface RopeScaling {
  /** Only 'llama3' (and 'default' = none) are supported. */
  rope_type: 'llama3' | 'default';
  /** Context extension factor f. */
  factor: number;
  /** Wavelengths above original_max_position_embeddings / low_freq_factor are divided by f. */
  low_freq_factor: number;
  /** Wavelengths below original_max_position_embeddings / high_freq_factor are kept. */
  high_freq_factor: number;
  /** Context length of the original pretraining. */
  original_max_position_embeddings: number;
}

/** The Apertus architecture hyperparameters, with Hugging Face `config.json` names. */
export interface ApertusConfig {
  /** Rows of the input embedding: every token id the model reads. */
  vocab_size: number;
  /**
   * Rows of the LM head when it is smaller than the embedding (Apertus 1.5: 131,072 text tokens out
   * of 266,752 input ids; the others are image/audio codes it reads but never writes). Absent: the
   * head has `vocab_size` rows. Logits have {@link outputVocabSize} entries.
   */
  output_vocab_size?: number;
  hidden_size: number;
  /** MLP width: the rows of up_proj (and gate_proj). */
  intermediate_size: number;
  /**
   * The MLP: 'xielu' (Apertus: down(xIELU(up(x)))) or 'swiglu' (Llama's down(SiLU(gate(x)) ⊙ up(x))
   * with gate_proj/up_proj/down_proj, the baseline of the paper's ablation; not an HF Apertus
   * architecture). `swigluMatched` gives the SwiGLU width with the xIELU MLP's parameters and FLOPs.
   */
  hidden_act: 'xielu' | 'swiglu';
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  /** hidden_size / num_attention_heads unless given. */
  head_dim: number;
  max_position_embeddings: number;
  rms_norm_eps: number;
  rope_theta: number;
  /** null: plain RoPE. */
  rope_scaling: RopeScaling | null;
  bos_token_id: number;
  /** One id or a list (Instruct checkpoints stop on several). */
  eos_token_id: number | number[];
  pad_token_id: number;
  /** Std of the normal initialisation used when training from scratch. */
  initializer_range: number;
  /** The LM head is the embedding matrix itself (Apertus Mini): checkpoints hold no `lm_head.weight`. */
  tie_word_embeddings: boolean;
}

/** Entries of a logits row: the LM head's rows (`output_vocab_size`, else `vocab_size`). */
export function outputVocabSize(c: ApertusConfig): number {
  return c.output_vocab_size ?? c.vocab_size;
}

const LLAMA3_8192: RopeScaling = { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 };

const base = {
  hidden_act: 'xielu' as const, max_position_embeddings: 65536, rms_norm_eps: 1e-5, rope_theta: 12_000_000, rope_scaling: LLAMA3_8192,
  bos_token_id: 1, eos_token_id: 2, pad_token_id: 3, tie_word_embeddings: false,
};

/** Named configurations: the released Apertus sizes and small ones for experiments on a CPU. */
export const PRESETS = {
  /** Apertus-8B-2509 (spec §1.2). */
  'apertus-8b': { ...base, vocab_size: 131072, hidden_size: 4096, intermediate_size: 21504, num_hidden_layers: 32, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 128, initializer_range: 0.008944 },
  /** Apertus-70B-2509 (spec §1.2; RoPE values assumed equal to 8B). */
  'apertus-70b': { ...base, vocab_size: 131072, hidden_size: 8192, intermediate_size: 43008, num_hidden_layers: 80, num_attention_heads: 64, num_key_value_heads: 8, head_dim: 128, initializer_range: 0.008944 },
  /** ≈3M parameters with an 8k vocabulary: trains in minutes on 2 cores. */
  tiny: { ...base, vocab_size: 8192, hidden_size: 128, intermediate_size: 512, num_hidden_layers: 4, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 32, max_position_embeddings: 2048, rope_theta: 10000, rope_scaling: { ...LLAMA3_8192, original_max_position_embeddings: 256 }, initializer_range: 0.02 },
  /** ≈100M parameters (a GPT-2-small-sized Apertus). */
  small: { ...base, vocab_size: 32768, hidden_size: 768, intermediate_size: 3072, num_hidden_layers: 12, num_attention_heads: 12, num_key_value_heads: 4, head_dim: 64, max_position_embeddings: 4096, rope_theta: 500000, rope_scaling: { ...LLAMA3_8192, original_max_position_embeddings: 1024 }, initializer_range: 0.02 },
} satisfies Record<string, ApertusConfig>;

/** Names of the built-in presets. */
export type PresetName = keyof typeof PRESETS;

/** A copy of a preset, optionally with fields overridden. */
export function presetConfig(name: PresetName, overrides: Partial<ApertusConfig> = {}): ApertusConfig {
  const p = PRESETS[name];
  if (!p) throw new ConfigError('preset', `unknown preset '${String(name)}' (known: ${Object.keys(PRESETS).join(', ')})`);
  return validateConfig({ ...structuredClone(p), ...overrides });
}

type Json = Record<string, unknown>;

function num(j: Json, key: string, file: string | undefined, fallback?: number): number {
  const v = j[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ConfigError(key, `expected a number, got ${JSON.stringify(v)}`, file);
  return v;
}

function int(j: Json, key: string, file: string | undefined, fallback?: number): number {
  const v = num(j, key, file, fallback);
  if (!Number.isInteger(v) || v < 0) throw new ConfigError(key, `expected a non-negative integer, got ${v}`, file);
  return v;
}

function parseRope(j: Json, file?: string): { theta: number; scaling: RopeScaling | null } {
  // Newer transformers: rope_parameters {rope_type, rope_theta, factor, ...}; legacy: rope_theta + rope_scaling.
  const params = (j.rope_parameters ?? null) as Json | null;
  const scalingJson = (params ?? j.rope_scaling ?? null) as Json | null;
  const theta = params && params.rope_theta !== undefined ? num(params, 'rope_theta', file) : num(j, 'rope_theta', file, 10000);
  if (scalingJson === null) return { theta, scaling: null };
  if (typeof scalingJson !== 'object') throw new ConfigError('rope_scaling', 'expected an object or null', file);
  const type = scalingJson.rope_type ?? scalingJson.type;
  if (type === 'default' || type === undefined) return { theta, scaling: null };
  if (type !== 'llama3') throw new ConfigError('rope_scaling.rope_type', `unsupported RoPE type '${String(type)}' (supported: llama3, default)`, file);
  const f = (k: string) => num(scalingJson, k, file);
  return {
    theta,
    scaling: { rope_type: 'llama3', factor: f('factor'), low_freq_factor: f('low_freq_factor'), high_freq_factor: f('high_freq_factor'), original_max_position_embeddings: int(scalingJson, 'original_max_position_embeddings', file) },
  };
}

/** `model_type` of an Apertus 1.5 config.json (the decoder's fields in `text_config`). */
export const APERTUS_1P5_MODEL_TYPE = 'apertus1p5';

/** Whether a config.json object is an Apertus 1.5 one (`model_type` or `architectures` says so). */
export function isApertus1p5Config(json: unknown): boolean {
  const j = (json ?? {}) as Json;
  return j.model_type === APERTUS_1P5_MODEL_TYPE || (Array.isArray(j.architectures) && j.architectures.includes('Apertus1p5ForConditionalGeneration'));
}

/**
 * The decoder's fields of an Apertus 1.5 config.json: its `text_config`, with the special token
 * ids and `tie_word_embeddings` the top level holds where `text_config` does not (releases differ
 * in where `eos_token_id` sits).
 */
function textConfigOf(j: Json, file?: string): Json {
  const text = j.text_config;
  if (typeof text !== 'object' || text === null || Array.isArray(text)) throw new ConfigError('text_config', 'an Apertus 1.5 config.json holds the decoder in a text_config object', file);
  const t = text as Json;
  if (t.model_type !== undefined && t.model_type !== 'apertus1p5_text' && t.model_type !== 'apertus') {
    throw new ConfigError('text_config.model_type', `expected 'apertus1p5_text', got '${String(t.model_type)}'`, file);
  }
  const out: Json = { ...t, model_type: 'apertus' };
  for (const k of ['bos_token_id', 'eos_token_id', 'pad_token_id', 'tie_word_embeddings']) if (out[k] === undefined && j[k] !== undefined) out[k] = j[k];
  return out;
}

/**
 * Read a Hugging Face Apertus `config.json` object: `ApertusForCausalLM` (2509, Apertus Mini) with
 * legacy `rope_theta`/`rope_scaling` keys or the newer `rope_parameters`, or Apertus 1.5 (the
 * decoder under `text_config`, whose keys errors name as `text_config.<key>`). Unknown extra keys
 * are ignored as transformers does; fields that change the computation in an unsupported way raise
 * ConfigError naming the field.
 */
export function parseConfig(json: unknown, file?: string): ApertusConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new ConfigError('(root)', 'config must be a JSON object', file);
  if (isApertus1p5Config(json)) {
    try {
      return parseDecoderConfig(textConfigOf(json as Json, file), file);
    } catch (e) {
      throw e instanceof ConfigError && !e.field.startsWith('text_config') ? new ConfigError(`text_config.${e.field}`, e.detail, file) : e;
    }
  }
  return parseDecoderConfig(json as Json, file);
}

function parseDecoderConfig(j: Json, file?: string): ApertusConfig {
  if (j.model_type !== undefined && j.model_type !== 'apertus') throw new ConfigError('model_type', `expected 'apertus', got '${String(j.model_type)}'`, file);
  const act = j.hidden_act ?? 'xielu';
  if (act !== 'xielu' && act !== 'swiglu') throw new ConfigError('hidden_act', `expected 'xielu' (or 'swiglu' for the ablation MLP), got '${String(act)}'`, file);
  const tied = j.tie_word_embeddings ?? false;
  if (typeof tied !== 'boolean') throw new ConfigError('tie_word_embeddings', `expected true or false, got ${JSON.stringify(tied)}`, file);
  for (const key of ['attention_bias', 'mlp_bias']) if (j[key] === true) throw new ConfigError(key, 'biases are not supported (Apertus has none)', file);
  if (j.post_norm === true) throw new ConfigError('post_norm', 'post-norm layers are not supported', file);
  if (j.qk_norm === false) throw new ConfigError('qk_norm', 'QK-norm is always on in Apertus', file);
  const heads = int(j, 'num_attention_heads', file, 32);
  const hidden = int(j, 'hidden_size', file, 4096);
  const rope = parseRope(j, file);
  const eos = j.eos_token_id ?? 2;
  if (!(typeof eos === 'number' || (Array.isArray(eos) && eos.every((e) => typeof e === 'number')))) throw new ConfigError('eos_token_id', 'expected an id or a list of ids', file);
  const vocab = int(j, 'vocab_size', file, 131072);
  const outVocab = j.output_vocab_size === undefined || j.output_vocab_size === null ? vocab : int(j, 'output_vocab_size', file);
  return validateConfig({
    vocab_size: vocab,
    ...(outVocab !== vocab ? { output_vocab_size: outVocab } : {}),
    hidden_size: hidden,
    intermediate_size: int(j, 'intermediate_size', file, 14336),
    hidden_act: act,
    num_hidden_layers: int(j, 'num_hidden_layers', file, 32),
    num_attention_heads: heads,
    num_key_value_heads: int(j, 'num_key_value_heads', file, (j.num_key_value_heads ?? heads) as number),
    head_dim: int(j, 'head_dim', file, hidden / heads),
    max_position_embeddings: int(j, 'max_position_embeddings', file, 65536),
    rms_norm_eps: num(j, 'rms_norm_eps', file, 1e-5),
    rope_theta: rope.theta,
    rope_scaling: rope.scaling,
    bos_token_id: int(j, 'bos_token_id', file, 1),
    eos_token_id: eos as number | number[],
    pad_token_id: int(j, 'pad_token_id', file, 3),
    initializer_range: num(j, 'initializer_range', file, 0.02),
    tie_word_embeddings: tied,
  }, file);
}

/** Check the relations between fields (divisibility, positivity); returns the config. */
export function validateConfig(c: ApertusConfig, file?: string): ApertusConfig {
  const pos = (k: keyof ApertusConfig) => { if (!((c[k] as number) > 0)) throw new ConfigError(k, `must be positive, got ${String(c[k])}`, file); };
  for (const k of ['vocab_size', 'hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'head_dim', 'max_position_embeddings', 'rms_norm_eps', 'rope_theta'] as const) pos(k);
  if (c.num_attention_heads % c.num_key_value_heads !== 0) throw new ConfigError('num_key_value_heads', `${c.num_key_value_heads} does not divide num_attention_heads ${c.num_attention_heads}`, file);
  if (c.hidden_act !== 'xielu' && c.hidden_act !== 'swiglu') throw new ConfigError('hidden_act', `expected 'xielu' or 'swiglu', got '${String(c.hidden_act)}'`, file);
  if (c.head_dim % 2 !== 0) throw new ConfigError('head_dim', `RoPE needs an even head_dim, got ${c.head_dim}`, file);
  if (c.output_vocab_size !== undefined) {
    const o = c.output_vocab_size;
    if (!(Number.isInteger(o) && o > 0 && o <= c.vocab_size)) throw new ConfigError('output_vocab_size', `must be an integer in [1, vocab_size ${c.vocab_size}], got ${o}`, file);
    if (c.tie_word_embeddings && o !== c.vocab_size) throw new ConfigError('output_vocab_size', `${o} differs from vocab_size ${c.vocab_size}: a tied LM head is the embedding, of vocab_size rows`, file);
  }
  return c;
}

/**
 * The config as Hugging Face writes it for `ApertusForCausalLM` (legacy keys, which every
 * transformers ≥ 4.56 reads; `output_vocab_size` only when the head is smaller than the embedding,
 * which only the Apertus 1.5 layout's `text_config` holds).
 */
export function toHfConfig(c: ApertusConfig): Record<string, unknown> {
  return {
    architectures: ['ApertusForCausalLM'],
    model_type: 'apertus',
    vocab_size: c.vocab_size,
    ...(outputVocabSize(c) !== c.vocab_size ? { output_vocab_size: outputVocabSize(c) } : {}),
    hidden_size: c.hidden_size,
    intermediate_size: c.intermediate_size,
    num_hidden_layers: c.num_hidden_layers,
    num_attention_heads: c.num_attention_heads,
    num_key_value_heads: c.num_key_value_heads,
    head_dim: c.head_dim,
    hidden_act: c.hidden_act,
    max_position_embeddings: c.max_position_embeddings,
    initializer_range: c.initializer_range,
    rms_norm_eps: c.rms_norm_eps,
    use_cache: true,
    rope_theta: c.rope_theta,
    rope_scaling: c.rope_scaling ? { ...c.rope_scaling, type: c.rope_scaling.rope_type } : null,
    attention_bias: false,
    attention_dropout: 0.0,
    mlp_bias: false,
    qk_norm: true,
    post_norm: false,
    bos_token_id: c.bos_token_id,
    eos_token_id: c.eos_token_id,
    pad_token_id: c.pad_token_id,
    tie_word_embeddings: c.tie_word_embeddings,
    torch_dtype: 'bfloat16',
    transformers_version: '4.56.2',
  };
}

/** Number of parameters (spec §1.2 arithmetic; the SwiGLU MLP has three matrices and no xIELU scalars; a tied head adds none). */
export function parameterCount(c: ApertusConfig): number {
  const H = c.hidden_size, d = c.head_dim;
  const attn = H * c.num_attention_heads * d * 2 + H * c.num_key_value_heads * d * 2 + 2 * d;
  const mlp = c.hidden_act === 'swiglu' ? 3 * H * c.intermediate_size : 2 * H * c.intermediate_size + 4;
  const layer = attn + mlp + 2 * H;
  const head = c.tie_word_embeddings ? 0 : outputVocabSize(c) * H;
  return c.vocab_size * H + head + H + c.num_hidden_layers * layer;
}

/**
 * The SwiGLU twin of an xIELU config, matched in MLP parameters and FLOPs as in the paper's
 * ablation: the xIELU MLP holds 2·H·I weights (2·2·H·I FLOPs per token), SwiGLU holds 3·H·I′, so
 * I′ = round(2·I / 3) (e.g. tiny: I = 512 → I′ = 341, 131 072 vs 130 944 weights per layer).
 */
export function swigluMatched(c: ApertusConfig): ApertusConfig {
  if (c.hidden_act === 'swiglu') return c;
  return validateConfig({ ...c, hidden_act: 'swiglu', intermediate_size: Math.round((2 * c.intermediate_size) / 3) });
}
