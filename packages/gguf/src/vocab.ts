// The byte-level BPE tokenizer as GGUF metadata (`tokenizer.ggml.*`, llama.cpp's "gpt2" model
// with the Apertus pre-tokenizer "tekken") and back.

import { buildApertusTokenizerJson, Tokenizer, type TokenizerConfigJson, type TokenizerJson } from '@apertus/tokenizer';
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
  return entries;
}

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
 * Our Tokenizer from `tokenizer.ggml.*`: the Apertus layout rebuilt from the merges, checked token
 * by token against `tokenizer.ggml.tokens` (GgufMetadataError naming the key on any difference).
 */
export function tokenizerFromMetadata(meta: ReadonlyMap<string, GgufValue>, file?: string): Tokenizer {
  const ctx = (key: string) => ({ key, ...(file ? { file } : {}) });
  const model = meta.get('tokenizer.ggml.model');
  if (model !== 'gpt2') throw new GgufMetadataError(`tokenizer model ${JSON.stringify(model)} is not byte-level BPE ("gpt2")`, ctx('tokenizer.ggml.model'));
  const tokens = strings(meta, 'tokenizer.ggml.tokens', file);
  const merges = strings(meta, 'tokenizer.ggml.merges', file).map((m, i) => {
    const parts = m.split(' ');
    if (parts.length !== 2) throw new GgufMetadataError(`merge ${i} ${JSON.stringify(m)} is not two tokens`, ctx('tokenizer.ggml.merges'));
    return parts as [string, string];
  });
  const json = buildApertusTokenizerJson({ merges });
  const byId: string[] = [];
  for (const [t, id] of Object.entries(json.model.vocab)) byId[id] = t;
  byId.forEach((t, id) => {
    if (id >= tokens.length || tokens[id] !== t) throw new GgufMetadataError(`token ${id} is ${JSON.stringify(tokens[id])}, the Apertus layout built from the merges has ${JSON.stringify(t)}`, ctx('tokenizer.ggml.tokens'));
  });
  const ids = specialIds(meta);
  const config: TokenizerConfigJson = {
    add_bos_token: meta.get('tokenizer.ggml.add_bos_token') !== false,
    add_eos_token: meta.get('tokenizer.ggml.add_eos_token') === true,
    bos_token: tokens[ids.bos] ?? null,
    eos_token: tokens[ids.eos] ?? null,
    pad_token: tokens[ids.pad] ?? null,
    unk_token: '<unk>',
    clean_up_tokenization_spaces: false,
    ...(typeof meta.get('tokenizer.chat_template') === 'string' ? { chat_template: meta.get('tokenizer.chat_template') } : {}),
  };
  return Tokenizer.fromJSON(json, config);
}
