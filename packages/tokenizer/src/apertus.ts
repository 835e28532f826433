// The Apertus tokenizer layout (spec apertus-model.md §5.1–5.3).
//
//   ids 0–72      named special tokens (0 <unk>, 1 <s>, 2 </s>, 3 <pad>, chat tokens 61–72, ...)
//   ids 4–13,
//       73–999    reserved; their real names are not confirmed (spec §8.4), so this package
//                 names them `<SPECIAL_n>` (special added tokens that never occur in text)
//   ids 1000–1255 the 256 single bytes, id = 1000 + byte
//   ids 1256–     merged BPE tokens, in merge order

import { BYTE_TO_CHAR } from './byte-level.js';
import type { AddedTokenConfig } from './added-tokens.js';
import { APERTUS_PRETOKENIZER_PATTERN } from './pretokenizer.js';
import { TokenizerError } from './errors.js';
import { Tokenizer, type TokenizerConfigJson, type TokenizerJson } from './tokenizer.js';

/** Named ids of the Apertus special tokens (spec §5.2). */
export const APERTUS_TOKEN_IDS = {
  unk: 0,
  bos: 1,
  eos: 2,
  pad: 3,
  beginBrace: 14,
  endBrace: 15,
  textBrace: 16,
  boxedBrace: 17,
  think: 32,
  thinkEnd: 33,
  answer: 34,
  answerEnd: 35,
  fimBegin: 58,
  fimHole: 59,
  fimEnd: 60,
  systemStart: 61,
  systemEnd: 62,
  developerStart: 63,
  developerEnd: 64,
  userStart: 65,
  userEnd: 66,
  assistantStart: 67,
  assistantEnd: 68,
  innerPrefix: 69,
  innerSuffix: 70,
  toolsPrefix: 71,
  toolsSuffix: 72,
} as const;

/** `<s>`, id 1: beginning of sequence / document. */
export const APERTUS_BOS_ID = 1;
/** `</s>`, id 2: end of document (base-model EOS). */
export const APERTUS_EOS_ID = 2;
/** `<pad>`, id 3. */
export const APERTUS_PAD_ID = 3;
/** `<unk>`, id 0. */
export const APERTUS_UNK_ID = 0;
/** `<|assistant_end|>`, id 68: end of an assistant turn (Instruct EOS). */
export const APERTUS_ASSISTANT_END_ID = 68;
/** Generation stops on any of these ids (Instruct `generation_config.json`, spec §6). */
export const APERTUS_STOP_IDS: readonly number[] = [2, 68, 72];
/** Id of the single-byte token for byte 0; byte b has id `APERTUS_BYTE_OFFSET + b`. */
export const APERTUS_BYTE_OFFSET = 1000;
/** First id of merged BPE tokens. */
export const APERTUS_FIRST_MERGE_ID = APERTUS_BYTE_OFFSET + 256;
/** Vocabulary size of the released Apertus tokenizer. */
export const APERTUS_VOCAB_SIZE = 131072;

const NAMED: readonly (readonly [number, string])[] = [
  [0, '<unk>'],
  [1, '<s>'],
  [2, '</s>'],
  [3, '<pad>'],
  [14, '\\begin{'],
  [15, '\\end{'],
  [16, '\\text{'],
  [17, '\\boxed{'],
  ...[
    '<filename>',
    '<gh_stars>',
    '<issue_start>',
    '<issue_comment>',
    '<issue_closed>',
    '<jupyter_start>',
    '<jupyter_text>',
    '<jupyter_code>',
    '<jupyter_output>',
    '<empty_output>',
    '<commit_before>',
    '<commit_msg>',
    '<commit_after>',
    '<reponame>',
    '<think>',
    '</think>',
    '<answer>',
    '</answer>',
    '<iban-pii>',
    '<email-pii>',
    '<ip-pii>',
    '<file_sep>',
    '<code_to_intermediate>',
    '<intermediate_to_code>',
    '<pr>',
    '<pr_status>',
    '<pr_is_merged>',
    '<pr_base>',
    '<pr_file>',
    '<pr_base_code>',
    '<pr_diff>',
    '<pr_diff_hunk>',
    '<pr_comment>',
    '<pr_event_id>',
    '<pr_review>',
    '<pr_review_state>',
    '<pr_review_comment>',
    '<pr_in_reply_to_review_id>',
    '<pr_in_reply_to_comment_id>',
    '<pr_diff_hunk_comment_line>',
    '<|fim_begin|>',
    '<|fim_hole|>',
    '<|fim_end|>',
    '<|system_start|>',
    '<|system_end|>',
    '<|developer_start|>',
    '<|developer_end|>',
    '<|user_start|>',
    '<|user_end|>',
    '<|assistant_start|>',
    '<|assistant_end|>',
    '<|inner_prefix|>',
    '<|inner_suffix|>',
    '<|tools_prefix|>',
    '<|tools_suffix|>',
  ].map((content, i) => [18 + i, content] as const),
];

/** Ids of added tokens that are not special (they take part in normal text tokenization). */
const NON_SPECIAL = new Set([14, 15, 16, 17]);

/**
 * The 1000 reserved tokens of the Apertus layout, id order: `{ id, content, special }`. Ids 0–72
 * have their spec names; the others are `<SPECIAL_n>` placeholders.
 */
export const APERTUS_SPECIAL_TOKENS: readonly { readonly id: number; readonly content: string; readonly special: boolean }[] = (() => {
  const byId = new Map(NAMED);
  const out: { id: number; content: string; special: boolean }[] = [];
  for (let id = 0; id < APERTUS_BYTE_OFFSET; id++) {
    out.push({ id, content: byId.get(id) ?? `<SPECIAL_${id}>`, special: !NON_SPECIAL.has(id) });
  }
  return out;
})();

/** Options of {@link buildApertusTokenizerJson}. */
export interface ApertusTokenizerOptions {
  /**
   * Merges in rank order, as pairs of byte-level token strings (e.g. `['Ġ', 't']`). Each merged
   * string gets the next free id from 1256 on (a merge whose result already exists reuses its id).
   */
  merges: readonly (readonly [string, string])[];
}

/**
 * Build an Apertus-layout `tokenizer.json` document: the 1000 reserved tokens, the byte tokens at
 * `1000 + byte`, then one token per merge; the Apertus Split regex + ByteLevel pre-tokenizer,
 * `ignore_merges: true`, ByteLevel decoder and a `<s>` + text template. Throws
 * {@link TokenizerError} (`MergeOutOfVocabulary`) if a merge uses a token not built so far.
 */
export function buildApertusTokenizerJson(options: ApertusTokenizerOptions): TokenizerJson {
  const vocab: Record<string, number> = {};
  const seen = new Map<string, number>();
  const add = (token: string, id: number): void => {
    vocab[token] = id;
    seen.set(token, id);
  };
  for (const t of APERTUS_SPECIAL_TOKENS) add(t.content, t.id);
  for (let b = 0; b < 256; b++) add(BYTE_TO_CHAR[b]!, APERTUS_BYTE_OFFSET + b);
  let next = APERTUS_FIRST_MERGE_ID;
  const merges: [string, string][] = [];
  options.merges.forEach(([a, b], i) => {
    if (!seen.has(a) || !seen.has(b)) {
      throw new TokenizerError('MergeOutOfVocabulary', `merge uses unknown token ${JSON.stringify(seen.has(a) ? b : a)}`, {
        field: `merges[${i}]`,
      });
    }
    const merged = a + b;
    if (!seen.has(merged)) add(merged, next++);
    merges.push([a, b]);
  });
  const addedTokens: AddedTokenConfig[] = APERTUS_SPECIAL_TOKENS.map((t) => ({
    id: t.id,
    content: t.content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: t.special,
  }));
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: APERTUS_PRETOKENIZER_PATTERN }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '<s>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<s>', type_id: 1 } },
        { Sequence: { id: 'B', type_id: 1 } },
      ],
      special_tokens: { '<s>': { id: '<s>', ids: [APERTUS_BOS_ID], tokens: ['<s>'] } },
    },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: true,
      vocab,
      merges,
    },
  };
}

/**
 * The matching `tokenizer_config.json` (spec §5.3): `<s>` BOS, `<pad>`, `<unk>`, no space clean-up;
 * EOS is `<|assistant_end|>` for Instruct models and `</s>` for base models.
 */
export function buildApertusTokenizerConfig(options: { instruct?: boolean } = {}): TokenizerConfigJson {
  return {
    add_bos_token: true,
    add_eos_token: false,
    bos_token: '<s>',
    eos_token: (options.instruct ?? true) ? '<|assistant_end|>' : '</s>',
    pad_token: '<pad>',
    unk_token: '<unk>',
    clean_up_tokenization_spaces: false,
    model_max_length: 65536,
    tokenizer_class: 'PreTrainedTokenizerFast',
  };
}

/**
 * A ready {@link Tokenizer} with the Apertus layout and the given merges (Instruct config by
 * default: EOS `<|assistant_end|>`). With no merges every byte is its own token.
 */
export function createApertusTokenizer(options: ApertusTokenizerOptions & { instruct?: boolean } = { merges: [] }): Tokenizer {
  return Tokenizer.fromJSON(
    buildApertusTokenizerJson(options),
    buildApertusTokenizerConfig(options.instruct !== undefined ? { instruct: options.instruct } : {}),
  );
}
