// The Apertus 1.5 tokenizer layout, built from a 2509-layout tokenizer.json the way the released
// one was built from Apertus-8B-2509's (spec apertus-family-2026.md):
//
//   ids 32/33      <|inner_prefix|> / <|inner_suffix|> (the reasoning delimiters; non-special, so
//                  they survive skip_special_tokens; normalized, so the literal <think>/</think>
//                  text the normalizer rewrites onto them matches)
//   ids 69/70      <think> / </think>, plain vocabulary entries (no longer added tokens)
//   ids 73/74      <|tool_output_start|> / <|tool_output_end|>
//   base + 0…199   200 omni slots: <|RESERVED_OMNI_nnn|>, slots 1–7 vision and 8–15 audio
//                  structure tokens (<|image|> at 7, <|audio|> at 13, both aliased: <image>, <audio>)
//   base + 200…    131,072 <|visual token N|>, then 4,096 <|audio token N|> (special)
//
// and a normalizer of Replace rules in front of the base's: the reasoning clean-up (older
// reasoning markers onto the 1.5 delimiters), then the aliases.

import type { AddedTokenConfig } from './added-tokens.js';
import type { NormalizerConfig } from './normalizer.js';
import { TokenizerError } from './errors.js';
import type { TokenizerJson } from './tokenizer.js';

/** Omni slots after the text vocabulary. */
export const APERTUS_1P5_RESERVED = 200;
/** Image codes (Emu3.5 codebook). */
export const APERTUS_1P5_VISUAL_TOKENS = 131072;
/** Audio codes (WavTokenizer codebook). */
export const APERTUS_1P5_AUDIO_TOKENS = 4096;

/** Structure tokens of the omni slots: slot → [name, alias]. */
const STRUCTURE: Readonly<Record<number, readonly [string, string | null]>> = {
  1: ['<|img_start|>', null], 2: ['<|img_end|>', null], 3: ['<|img_token_start|>', null], 4: ['<|img_end_of_row|>', null],
  5: ['<|img_end_of_frame|>', null], 6: ['<|img_generation_start|>', null], 7: ['<|image|>', '<image>'],
  8: ['<|audio_start|>', null], 9: ['<|audio_end|>', null], 10: ['<|stt_transcribe|>', null], 11: ['<|stt_continue|>', null],
  12: ['<|tts_continue|>', null], 13: ['<|audio|>', '<audio>'], 14: ['<|stt_translate|>', null], 15: ['<|audio_annotate|>', null],
};

/** The normalizer rules of the released 1.5 tokenizer, in order (clean-up, then aliases). */
export const APERTUS_1P5_NORMALIZER_RULES: readonly NormalizerConfig[] = [
  { type: 'Replace', pattern: { Regex: '<\\|channel\\|?>thought\\s*\\n' }, content: '<|inner_prefix|>' },
  { type: 'Replace', pattern: { String: '<channel|>' }, content: '<|inner_suffix|>' },
  { type: 'Replace', pattern: { String: '<thought>' }, content: '<|inner_prefix|>' },
  { type: 'Replace', pattern: { String: '</thought>' }, content: '<|inner_suffix|>' },
  { type: 'Replace', pattern: { String: '</answer>' }, content: '' },
  { type: 'Replace', pattern: { String: '<answer>' }, content: '' },
  { type: 'Replace', pattern: { Regex: '<\\|inner_suffix\\|>\\s+' }, content: '<|inner_suffix|>' },
  { type: 'Replace', pattern: { String: '<audio>' }, content: '<|audio|>' },
  { type: 'Replace', pattern: { String: '<image>' }, content: '<|image|>' },
  { type: 'Replace', pattern: { String: '<think>' }, content: '<|inner_prefix|>' },
  { type: 'Replace', pattern: { String: '</think>' }, content: '<|inner_suffix|>' },
];

/** Renames of the text vocabulary: id → [old name, new name]. */
const RENAMES: Readonly<Record<number, readonly [string, string]>> = {
  32: ['<think>', '<|inner_prefix|>'], 33: ['</think>', '<|inner_suffix|>'], 69: ['<|inner_prefix|>', '<think>'], 70: ['<|inner_suffix|>', '</think>'],
  73: ['<SPECIAL_73>', '<|tool_output_start|>'], 74: ['<SPECIAL_74>', '<|tool_output_end|>'],
};

/**
 * The Apertus 1.5 tokenizer.json of a 2509-layout one (see the file header); `base` is not
 * changed. Throws TokenizerError (`InvalidField`, naming `model.vocab`) when the base does not have
 * the 2509 names at the renamed ids.
 */
export function buildApertus1p5TokenizerJson(base: TokenizerJson): TokenizerJson {
  const vocab: Record<string, number> = { ...base.model.vocab as Record<string, number> };
  for (const [id, [old]] of Object.entries(RENAMES)) {
    if (vocab[old] !== Number(id)) throw new TokenizerError('InvalidField', `expected ${JSON.stringify(old)} at id ${id} (the 2509 layout), found ${vocab[old] ?? 'none'}`, { field: 'model.vocab' });
  }
  for (const [old] of Object.values(RENAMES)) delete vocab[old];
  for (const [id, [, name]] of Object.entries(RENAMES)) vocab[name] = Number(id);
  const baseSize = Math.max(...Object.values(vocab), ...(base.added_tokens ?? []).map((t) => t.id)) + 1;
  const added: AddedTokenConfig[] = [];
  for (const t of base.added_tokens ?? []) {
    if (t.id === 69 || t.id === 70) continue;
    const rename = RENAMES[t.id];
    const reasoning = t.id === 32 || t.id === 33;
    added.push({ ...t, content: rename ? rename[1] : t.content, ...(reasoning ? { special: false, normalized: true } : {}) });
  }
  const token = (id: number, content: string, normalized = false): AddedTokenConfig => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized, special: true });
  for (let slot = 0; slot < APERTUS_1P5_RESERVED; slot++) {
    const s = STRUCTURE[slot];
    added.push(token(baseSize + slot, s ? s[0] : `<|RESERVED_OMNI_${String(slot).padStart(3, '0')}|>`, s?.[1] != null));
  }
  const visual = baseSize + APERTUS_1P5_RESERVED, audio = visual + APERTUS_1P5_VISUAL_TOKENS;
  for (let i = 0; i < APERTUS_1P5_VISUAL_TOKENS; i++) added.push(token(visual + i, `<|visual token ${i}|>`));
  for (let i = 0; i < APERTUS_1P5_AUDIO_TOKENS; i++) added.push(token(audio + i, `<|audio token ${i}|>`));
  const rules = [...APERTUS_1P5_NORMALIZER_RULES];
  const normalizer: NormalizerConfig = { type: 'Sequence', normalizers: base.normalizer ? [...rules, base.normalizer] : rules };
  return { ...base, added_tokens: added, normalizer, model: { ...base.model, vocab } };
}
