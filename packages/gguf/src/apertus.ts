// The `apertus` architecture as llama.cpp writes and reads it: tensor names, hyper-parameter keys,
// the per-layer xIELU arrays and the llama3 RoPE factors (`rope_freqs.weight`).

import { outputVocabSize, parseConfig, ropeInvFreq, type ApertusConfig } from '@apertus/model';
import { GgufArchitectureError, GgufMetadataError } from './errors';
import type { GgufValue } from './header';
import type { GgufEntry } from './writer';

/** `general.architecture` of Apertus files. */
export const ARCH = 'apertus';

const LAYER_NAMES: readonly (readonly [string, string])[] = [
  ['attention_layernorm.weight', 'attn_norm.weight'],
  ['self_attn.q_proj.weight', 'attn_q.weight'],
  ['self_attn.k_proj.weight', 'attn_k.weight'],
  ['self_attn.v_proj.weight', 'attn_v.weight'],
  ['self_attn.o_proj.weight', 'attn_output.weight'],
  ['self_attn.q_norm.weight', 'attn_q_norm.weight'],
  ['self_attn.k_norm.weight', 'attn_k_norm.weight'],
  ['feedforward_layernorm.weight', 'ffn_norm.weight'],
  ['mlp.up_proj.weight', 'ffn_up.weight'],
  ['mlp.down_proj.weight', 'ffn_down.weight'],
];

/** The xIELU scalars, stored as per-layer float arrays under these keys. */
export const XIELU_KEYS = { alpha_p: 'xielu.alpha_p', alpha_n: 'xielu.alpha_n', beta: 'xielu.beta', eps: 'xielu.eps' } as const;

/** GGUF tensor name of a Hugging Face weight name, or null for the xIELU scalars (stored as metadata). */
export function ggufTensorName(hf: string): string | null {
  if (hf === 'model.embed_tokens.weight') return 'token_embd.weight';
  if (hf === 'model.norm.weight') return 'output_norm.weight';
  if (hf === 'lm_head.weight') return 'output.weight';
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hf);
  if (!m) throw new GgufMetadataError(`no GGUF name for tensor "${hf}"`);
  if (m[2]!.startsWith('mlp.act_fn.')) return null;
  const pair = LAYER_NAMES.find(([h]) => h === m[2]);
  if (!pair) throw new GgufMetadataError(`no GGUF name for tensor "${hf}"`);
  return `blk.${m[1]}.${pair[1]}`;
}

/**
 * llama3 RoPE as llama.cpp stores it: one divisor per rotary pair (`rope_freqs.weight`), 1 for
 * high frequencies, `factor` for low ones, interpolated between.
 */
export function ropeFactors(c: ApertusConfig): Float32Array {
  const plain = ropeInvFreq({ ...c, rope_scaling: null }), scaled = ropeInvFreq(c);
  return plain.map((v, i) => v / scaled[i]!);
}

/**
 * Metadata entries (architecture and hyper-parameters) of a config, llama.cpp's converter layout.
 * A head smaller than the embedding (Apertus 1.5) adds `apertus.vocab_size_out`, the key llama.cpp's
 * pending support proposes; a tied head is told by the absence of `output.weight`, as llama.cpp's
 * converter writes such a model.
 */
export function configMetadata(c: ApertusConfig, xielu: Record<keyof typeof XIELU_KEYS, number[]>): [string, GgufEntry][] {
  const u32 = (value: number): GgufEntry => ({ type: 'u32', value });
  const f32 = (value: number): GgufEntry => ({ type: 'f32', value });
  const p = `${ARCH}.`;
  return [
    [p + 'block_count', u32(c.num_hidden_layers)],
    [p + 'context_length', u32(c.max_position_embeddings)],
    [p + 'embedding_length', u32(c.hidden_size)],
    [p + 'feed_forward_length', u32(c.intermediate_size)],
    [p + 'attention.head_count', u32(c.num_attention_heads)],
    [p + 'attention.head_count_kv', u32(c.num_key_value_heads)],
    [p + 'rope.freq_base', f32(c.rope_theta)],
    [p + 'attention.layer_norm_rms_epsilon', f32(c.rms_norm_eps)],
    [p + 'attention.key_length', u32(c.head_dim)],
    [p + 'attention.value_length', u32(c.head_dim)],
    [p + 'vocab_size', u32(c.vocab_size)],
    ...(outputVocabSize(c) !== c.vocab_size ? [[p + 'vocab_size_out', u32(outputVocabSize(c))] as [string, GgufEntry]] : []),
    [p + 'rope.dimension_count', u32(c.head_dim)],
    ...Object.entries(XIELU_KEYS).map(([k, key]) => [key, { type: 'array', elem: 'f32', value: xielu[k as keyof typeof XIELU_KEYS] }] as [string, GgufEntry]),
  ];
}

/** Read a metadata value of the expected kind, with a typed error naming the key. */
export function metaNumber(meta: ReadonlyMap<string, GgufValue>, key: string, file?: string, fallback?: number): number {
  const v = meta.get(key) ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new GgufMetadataError(v === undefined ? 'missing' : `expected a number, got ${JSON.stringify(v)}`, { key, ...(file ? { file } : {}) });
  return v;
}

/** The shortest decimal that rounds to the same float32 (1e-5 stored as f32 reads back as 1e-5). */
function shortestF32(v: number): number {
  for (let p = 1; p < 17; p++) { const d = Number(v.toPrecision(p)); if (Math.fround(d) === Math.fround(v)) return d; }
  return v;
}

/** Check `general.architecture` is `apertus` (GgufArchitectureError otherwise). */
export function checkArchitecture(meta: ReadonlyMap<string, GgufValue>, file?: string): void {
  const arch = meta.get('general.architecture');
  if (arch !== ARCH) {
    throw new GgufArchitectureError(arch === undefined ? 'missing (expected "apertus")' : `${JSON.stringify(arch)} is not supported (expected "apertus")`, { key: 'general.architecture', ...(file ? { file } : {}) });
  }
}

/**
 * llama3 RoPE scaling parameters that reproduce stored factors. The factors fix only the two
 * wavelength boundaries and the slope between them, so low_freq_factor is taken as 1 and
 * original_max_position_embeddings / high_freq_factor follow from two interpolated pairs.
 */
function fitLlama3(factors: Float32Array, c: ApertusConfig, file?: string): ApertusConfig['rope_scaling'] {
  const F = factors[factors.length - 1]!;
  if (factors.every((f) => Math.abs(f - 1) < 1e-6)) return null;
  const inv = ropeInvFreq({ ...c, rope_scaling: null });
  const mid: { s: number; x: number }[] = [];
  factors.forEach((f, i) => {
    if (Math.abs(f - 1) > 1e-6 && Math.abs(f - F) > 1e-6 * F) mid.push({ s: (1 / f - 1 / F) / (1 - 1 / F), x: inv[i]! / (2 * Math.PI) });
  });
  const err = (why: string) => new GgufMetadataError(`llama3 RoPE factors cannot be fitted: ${why}`, { tensor: 'rope_freqs.weight', ...(file ? { file } : {}) });
  let original: number, high: number;
  const wl = Array.from(inv, (v) => (2 * Math.PI) / v);
  const firstFull = factors.findIndex((f) => Math.abs(f - F) <= 1e-6 * F), lastOne = factors.findLastIndex((f) => Math.abs(f - 1) <= 1e-6);
  if (mid.length >= 2) {
    const a = mid[0]!, b = mid[mid.length - 1]!;
    const slope = (b.s - a.s) / (b.x - a.x), icpt = a.s - slope * a.x;
    high = 1 - 1 / icpt;
    original = Math.round(slope * (high - 1));
    high = Math.round(high * 1e6) / 1e6;
  } else if (mid.length === 1) {
    // One interpolated pair (s at x = 1/wavelength): put the high boundary original/high at the
    // geometric middle r between it and the last unscaled pair; s = (original·x − 1)/(high − 1)
    // then gives original = r(s − 1)/(s − r·x).
    if (lastOne < 0) throw err('no unscaled pair');
    const { s, x } = mid[0]!, r = Math.sqrt(wl[lastOne]! / x);
    original = Math.round((r * (s - 1)) / (s - r * x));
    high = 1 + (original * x - 1) / s;
  } else {
    // No interpolated pair: put both boundaries between the neighbouring wavelengths.
    if (firstFull <= 0 || lastOne < 0) throw err('the factors are neither 1 nor the largest factor');
    original = Math.ceil(wl[firstFull - 1]!);
    high = original / Math.sqrt(wl[lastOne]! * wl[lastOne + 1]!);
  }
  return { rope_type: 'llama3', factor: F, low_freq_factor: 1, high_freq_factor: high, original_max_position_embeddings: original };
}

/**
 * The Apertus config of a GGUF file's metadata (+ its `rope_freqs` factors when present; `tied`:
 * the file has no `output.weight`, the head is the embedding).
 */
export function configFromMetadata(meta: ReadonlyMap<string, GgufValue>, ropeFreqs: Float32Array | null, ids: { bos: number; eos: number; pad: number }, file?: string, tied = false): ApertusConfig {
  checkArchitecture(meta, file);
  const n = (k: string, fallback?: number) => metaNumber(meta, `${ARCH}.${k}`, file, fallback);
  const heads = n('attention.head_count'), hidden = n('embedding_length');
  const vocab = n('vocab_size', (meta.get('tokenizer.ggml.tokens') as readonly string[] | undefined)?.length);
  const base = {
    vocab_size: vocab,
    ...(meta.has(`${ARCH}.vocab_size_out`) ? { output_vocab_size: n('vocab_size_out') } : {}),
    hidden_size: hidden,
    intermediate_size: n('feed_forward_length'),
    num_hidden_layers: n('block_count'),
    num_attention_heads: heads,
    num_key_value_heads: n('attention.head_count_kv', heads),
    head_dim: n('attention.key_length', hidden / heads),
    max_position_embeddings: n('context_length'),
    rms_norm_eps: shortestF32(n('attention.layer_norm_rms_epsilon')),
    rope_theta: shortestF32(n('rope.freq_base', 10000)),
    rope_scaling: null,
    bos_token_id: ids.bos, eos_token_id: ids.eos, pad_token_id: ids.pad,
    tie_word_embeddings: tied,
  };
  const plain = parseConfig(base, file);
  const rope = n('rope.dimension_count', plain.head_dim);
  if (rope !== plain.head_dim) throw new GgufMetadataError(`rotary dimension ${rope} differs from head_dim ${plain.head_dim} (partial RoPE is not Apertus)`, { key: `${ARCH}.rope.dimension_count`, ...(file ? { file } : {}) });
  if (!ropeFreqs) return plain;
  if (ropeFreqs.length !== plain.head_dim / 2) throw new GgufMetadataError(`has ${ropeFreqs.length} factors, head_dim ${plain.head_dim} needs ${plain.head_dim / 2}`, { tensor: 'rope_freqs.weight', ...(file ? { file } : {}) });
  const config = parseConfig({ ...base, rope_scaling: fitLlama3(ropeFreqs, plain, file) }, file);
  const again = ropeFactors(config);
  again.forEach((f, i) => {
    if (Math.abs(f - ropeFreqs[i]!) > 1e-5 * Math.abs(f)) throw new GgufMetadataError(`factor ${i} = ${ropeFreqs[i]} is not llama3 RoPE scaling (fitted ${f})`, { tensor: 'rope_freqs.weight', ...(file ? { file } : {}) });
  });
  return config;
}
