// The byte-level BPE tokenizer as GGUF metadata (`tokenizer.ggml.*`, llama.cpp's "gpt2" model
// with the Apertus pre-tokenizer "tekken") and back.

import { APERTUS_PRETOKENIZER_PATTERN, Tokenizer, type AddedTokenConfig, type TokenizerConfigJson, type TokenizerJson } from '@apertus/tokenizer';
import { GgufMetadataError } from './errors';
import type { GgufValue } from './header';
import type { GgufEntry } from './writer';

/** llama.cpp token types. */
export const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

function configToken(t: TokenizerConfigJson[string]): string | undefined {
  if (typeof t === 'string') return t;
  if (t && typeof t === 'object' && typeof (t as { content?: unknown }).content === 'string') return (t as { content: string }).content;
  return undefined;
}

/**
 * Metadata entries of a tokenizer (tokenizer.json + tokenizer_config.json) for a model of
 * `vocabSize` ids: every id gets a token (ids past the tokenizer are `[PAD<id>]`, UNUSED, as
 * llama.cpp's converter writes them), special added tokens are CONTROL, merges are "a b" strings.
 * A tokenizer with a normalizer (Apertus 1.5's Replace rules), which tokenizer.ggml.* cannot
 * express, is also stored whole as `tokenizer.huggingface.json` (a key of the GGUF spec).
 */
export function tokenizerMetadata(json: TokenizerJson, config: TokenizerConfigJson, vocabSize: number, ids: { bos: number; eos: number; pad: number }): [string, GgufEntry][] {
  const tokens: string[] = new Array(vocabSize);
  const types: number[] = new Array(vocabSize).fill(TOKEN_TYPE.NORMAL);
  for (const [tok, id] of Object.entries(json.model.vocab)) if (id < vocabSize) tokens[id] = tok;
  for (const a of json.added_tokens ?? []) {
    if (a.id >= vocabSize) continue;
    tokens[a.id] = a.content;
    types[a.id] = a.special ? TOKEN_TYPE.CONTROL : TOKEN_TYPE.USER_DEFINED;
  }
  for (let i = 0; i < vocabSize; i++) {
    if (tokens[i] === undefined) { tokens[i] = `[PAD${i}]`; types[i] = TOKEN_TYPE.UNUSED; }
  }
  const merges = json.model.merges.map((m) => (typeof m === 'string' ? m : `${m[0]} ${m[1]}`));
  const entries: [string, GgufEntry][] = [
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'string', value: 'tekken' }],
    ['tokenizer.ggml.tokens', { type: 'array', elem: 'string', value: tokens }],
    ['tokenizer.ggml.token_type', { type: 'array', elem: 'i32', value: types }],
    ['tokenizer.ggml.merges', { type: 'array', elem: 'string', value: merges }],
    ['tokenizer.ggml.bos_token_id', { type: 'u32', value: ids.bos }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: ids.eos }],
    ['tokenizer.ggml.padding_token_id', { type: 'u32', value: ids.pad }],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: config.add_bos_token !== false }],
    ['tokenizer.ggml.add_eos_token', { type: 'bool', value: config.add_eos_token === true }],
  ];
  const unk = configToken(config.unk_token);
  const unkId = unk !== undefined ? json.model.vocab[unk] ?? json.added_tokens?.find((a) => a.content === unk)?.id : undefined;
  if (unkId !== undefined) entries.push(['tokenizer.ggml.unknown_token_id', { type: 'u32', value: unkId }]);
  if (typeof config.chat_template === 'string') entries.push(['tokenizer.chat_template', { type: 'string', value: config.chat_template }]);
  if (json.normalizer) entries.push([HF_JSON, { type: 'string', value: JSON.stringify(json) }]);
  return entries;
}

/** The GGUF key of a whole tokenizer.json. */
const HF_JSON = 'tokenizer.huggingface.json';

function strings(meta: ReadonlyMap<string, GgufValue>, key: string, file?: string): readonly string[] {
  const v = meta.get(key);
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw new GgufMetadataError(v === undefined ? 'missing' : 'expected an array of strings', { key, ...(file ? { file } : {}) });
  return v as readonly string[];
}

/** bos/eos/pad ids from `tokenizer.ggml.*_token_id` (Apertus defaults 1, 2, 3 when absent). */
export function specialIds(meta: ReadonlyMap<string, GgufValue>): { bos: number; eos: number; pad: number } {
  const id = (k: string, d: number) => { const v = meta.get(`tokenizer.ggml.${k}_token_id`); return typeof v === 'number' ? v : d; };
  return { bos: id('bos', 1), eos: id('eos', 2), pad: id('padding', 3) };
}

/**
 * Our Tokenizer from the metadata: `tokenizer.huggingface.json` when the file has it, else rebuilt
 * from `tokenizer.ggml.*` — the tokens (UNUSED padding ids left out; CONTROL ones special added
 * tokens, USER_DEFINED ones plain added tokens), the merges, the Apertus pre-tokenizer ("tekken"),
 * `<s>` first when add_bos_token. GgufMetadataError names the key that does not fit.
 */
export function tokenizerFromMetadata(meta: ReadonlyMap<string, GgufValue>, file?: string): Tokenizer {
  const ctx = (key: string) => ({ key, ...(file ? { file } : {}) });
  const model = meta.get('tokenizer.ggml.model');
  if (model !== 'gpt2') throw new GgufMetadataError(`tokenizer model ${JSON.stringify(model)} is not byte-level BPE ("gpt2")`, ctx('tokenizer.ggml.model'));
  const tokens = strings(meta, 'tokenizer.ggml.tokens', file);
  const ids = specialIds(meta);
  const addBos = meta.get('tokenizer.ggml.add_bos_token') !== false;
  const config: TokenizerConfigJson = {
    add_bos_token: addBos,
    add_eos_token: meta.get('tokenizer.ggml.add_eos_token') === true,
    bos_token: tokens[ids.bos] ?? null,
    eos_token: tokens[ids.eos] ?? null,
    pad_token: tokens[ids.pad] ?? null,
    unk_token: tokens[typeof meta.get('tokenizer.ggml.unknown_token_id') === 'number' ? (meta.get('tokenizer.ggml.unknown_token_id') as number) : 0] ?? null,
    clean_up_tokenization_spaces: false,
    ...(typeof meta.get('tokenizer.chat_template') === 'string' ? { chat_template: meta.get('tokenizer.chat_template') } : {}),
  };
  const whole = meta.get(HF_JSON);
  if (typeof whole === 'string') return Tokenizer.fromJSON(whole, config, { file: `${file ?? 'gguf'}: ${HF_JSON}` });
  const pre = meta.get('tokenizer.ggml.pre');
  if (pre !== undefined && pre !== 'tekken') throw new GgufMetadataError(`pre-tokenizer ${JSON.stringify(pre)} is not the Apertus one ("tekken")`, ctx('tokenizer.ggml.pre'));
  const types = meta.get('tokenizer.ggml.token_type');
  if (types !== undefined && (!Array.isArray(types) || types.length !== tokens.length)) throw new GgufMetadataError(`expected ${tokens.length} token types (one per token)`, ctx('tokenizer.ggml.token_type'));
  const merges = strings(meta, 'tokenizer.ggml.merges', file).map((m, i) => {
    const parts = m.split(' ');
    if (parts.length !== 2) throw new GgufMetadataError(`merge ${i} ${JSON.stringify(m)} is not two tokens`, ctx('tokenizer.ggml.merges'));
    return parts as [string, string];
  });
  const vocab: Record<string, number> = {};
  const added: AddedTokenConfig[] = [];
  tokens.forEach((t, id) => {
    const type = (types as readonly number[] | undefined)?.[id] ?? TOKEN_TYPE.NORMAL;
    if (type === TOKEN_TYPE.UNUSED) return;
    if (Object.hasOwn(vocab, t)) throw new GgufMetadataError(`token ${JSON.stringify(t)} appears at ids ${vocab[t]} and ${id}`, ctx('tokenizer.ggml.tokens'));
    vocab[t] = id;
    if (type === TOKEN_TYPE.CONTROL || type === TOKEN_TYPE.USER_DEFINED) added.push({ id, content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: type === TOKEN_TYPE.CONTROL });
  });
  const bos = tokens[ids.bos]!;
  const json: TokenizerJson = {
    version: '1.0', truncation: null, padding: null, added_tokens: added, normalizer: null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: APERTUS_PRETOKENIZER_PATTERN }, behavior: 'Isolated', invert: false },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
    ] },
    post_processor: addBos
      ? { type: 'TemplateProcessing', single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: bos, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: { [bos]: { id: bos, ids: [ids.bos], tokens: [bos] } } }
      : null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: true, vocab, merges },
  };
  try {
    return Tokenizer.fromJSON(json, config);
  } catch (e) {
    throw new GgufMetadataError(`the tokenizer cannot be rebuilt: ${(e as Error).message}`, ctx('tokenizer.ggml.merges'));
  }
}
