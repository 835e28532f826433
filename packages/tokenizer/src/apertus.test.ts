// The Apertus layout (spec §5.2–5.3): special-token ids, byte tokens at 1000 + byte, BOS added by
// the post-processor, special/non-special added tokens, checked against both references on an
// Apertus-layout tokenizer trained on part of the UDHR corpus.

import { beforeAll, describe, expect, it } from 'vitest';
import {
  APERTUS_ASSISTANT_END_ID,
  APERTUS_BOS_ID,
  APERTUS_BYTE_OFFSET,
  APERTUS_EOS_ID,
  APERTUS_PAD_ID,
  APERTUS_SPECIAL_TOKENS,
  APERTUS_STOP_IDS,
  APERTUS_TOKEN_IDS,
  APERTUS_UNK_ID,
  buildApertusTokenizerConfig,
  buildApertusTokenizerJson,
  createApertusTokenizer,
} from './apertus.js';
import { ADVERSARIAL, loadTrio, udhrCorpus, type Trio } from './fixtures.test-helper.js';
import { Tokenizer } from './tokenizer.js';
import { trainApertusBpe } from './train.js';

let trio: Trio;
beforeAll(() => {
  const trained = trainApertusBpe(
    udhrCorpus()
      .filter((_, i) => i % 4 === 0)
      .map((d) => d.text.slice(0, 3000)),
    { vocabSize: 3000 },
  );
  trio = loadTrio(JSON.stringify(trained.tokenizerJson), trained.tokenizerConfig);
});

describe('Apertus special tokens (spec §5.2)', () => {
  it('has the listed names at the listed ids', () => {
    const name = (id: number): string => APERTUS_SPECIAL_TOKENS[id]!.content;
    expect([0, 1, 2, 3].map(name)).toEqual(['<unk>', '<s>', '</s>', '<pad>']);
    expect([14, 15, 16, 17].map(name)).toEqual(['\\begin{', '\\end{', '\\text{', '\\boxed{']);
    expect([18, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41].map(name)).toEqual([
      '<filename>', '<reponame>', '<think>', '</think>', '<answer>', '</answer>', '<iban-pii>', '<email-pii>', '<ip-pii>', '<file_sep>', '<code_to_intermediate>', '<intermediate_to_code>',
    ]);
    expect([42, 57, 58, 59, 60].map(name)).toEqual(['<pr>', '<pr_diff_hunk_comment_line>', '<|fim_begin|>', '<|fim_hole|>', '<|fim_end|>']);
    expect(Array.from({ length: 12 }, (_, i) => name(61 + i))).toEqual([
      '<|system_start|>', '<|system_end|>', '<|developer_start|>', '<|developer_end|>', '<|user_start|>', '<|user_end|>',
      '<|assistant_start|>', '<|assistant_end|>', '<|inner_prefix|>', '<|inner_suffix|>', '<|tools_prefix|>', '<|tools_suffix|>',
    ]);
    expect(APERTUS_SPECIAL_TOKENS).toHaveLength(1000);
    expect(new Set(APERTUS_SPECIAL_TOKENS.map((t) => t.content)).size).toBe(1000);
    expect(APERTUS_SPECIAL_TOKENS.filter((t) => !t.special).map((t) => t.id)).toEqual([14, 15, 16, 17]);
  });

  it('exports the ids as constants', () => {
    expect([APERTUS_UNK_ID, APERTUS_BOS_ID, APERTUS_EOS_ID, APERTUS_PAD_ID, APERTUS_ASSISTANT_END_ID]).toEqual([0, 1, 2, 3, 68]);
    expect(APERTUS_STOP_IDS).toEqual([2, 68, 72]);
    for (const [key, id] of Object.entries(APERTUS_TOKEN_IDS)) expect(trio.ours.tokenToId(APERTUS_SPECIAL_TOKENS[id]!.content), key).toBe(id);
  });
});

describe('Apertus layout tokenizer', () => {
  it('puts byte b at id 1000 + b (1032 = " ", 1044 = ",")', () => {
    expect(APERTUS_BYTE_OFFSET).toBe(1000);
    const bare = createApertusTokenizer();
    expect(bare.eosTokenId).toBe(68);
    expect(bare.encodeIds(' ', { addSpecialTokens: false })).toEqual([1032]);
    expect(bare.encodeIds(',', { addSpecialTokens: false })).toEqual([1044]);
    expect(bare.encodeIds('€', { addSpecialTokens: false })).toEqual([0xe2, 0x82, 0xac].map((b) => 1000 + b));
    expect(bare.vocabSize).toBe(1256);
  });

  it('prepends exactly one <s> (id 1), in all three implementations (spec §5.3, §7d)', async () => {
    for (const text of ['Simply put, the theory of relativity states that ', 'x', '']) {
      const ours = trio.ours.encodeIds(text);
      expect(ours[0]).toBe(1);
      expect(ours.filter((id) => id === 1)).toHaveLength(1);
      expect(ours).toEqual((await trio.rust.encode(text)).getIds());
      expect(ours).toEqual(trio.hfjs.encode(text).ids);
      expect(trio.ours.encodeIds(text, { addSpecialTokens: false })).toEqual(ours.slice(1));
    }
    expect(trio.ours.encode('ab').specialTokensMask[0]).toBe(1);
    expect(trio.ours.encode('ab').offsets[0]).toEqual([0, 0]);
  });

  it('matches both references on multilingual text with special and non-special added tokens', async () => {
    const texts = [
      ...udhrCorpus()
        .filter((_, i) => i % 9 === 1)
        .map((d) => d.text.slice(0, 500)),
      ...ADVERSARIAL.filter((s) => s.length < 400),
      'Solve \\begin{align} x \\end{align} and \\boxed{42}, \\text{ok}',
      '<s><|user_start|>Hi<|user_end|><|assistant_start|>Hello<|assistant_end|></s><pad><SPECIAL_500>',
      '<|inner_prefix|>think<|inner_suffix|><|tools_prefix|>[{"f": {}}]<|tools_suffix|>',
    ];
    for (const text of texts) {
      const ours = trio.ours.encode(text);
      const rust = await trio.rust.encode(text);
      expect(ours.ids, JSON.stringify(text.slice(0, 50))).toEqual(rust.getIds());
      expect(ours.ids).toEqual(trio.hfjs.encode(text).ids);
      expect(ours.tokens).toEqual(rust.getTokens());
      for (const skip of [false, true]) {
        const decoded = trio.ours.decode(ours.ids, { skipSpecialTokens: skip });
        expect(decoded).toBe(await trio.rust.decode(ours.ids, skip));
        expect(decoded).toBe(trio.hfjs.decode(ours.ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false }));
      }
    }
    // \begin{ is one id and, being non-special, survives skipSpecialTokens.
    const ids = trio.ours.encodeIds('\\begin{x}', { addSpecialTokens: false });
    expect(ids[0]).toBe(14);
    expect(trio.ours.decode([1, ...ids, 68], { skipSpecialTokens: true })).toBe('\\begin{x}');
  });

  it('reads BOS / EOS / PAD from the generated tokenizer_config.json', () => {
    const json = buildApertusTokenizerJson({ merges: [] });
    const instruct = Tokenizer.fromJSON(json, buildApertusTokenizerConfig());
    expect([instruct.bosTokenId, instruct.eosTokenId, instruct.padTokenId, instruct.unkTokenId]).toEqual([1, 68, 3, 0]);
    const baseModel = Tokenizer.fromJSON(json, buildApertusTokenizerConfig({ instruct: false }));
    expect(baseModel.eosTokenId).toBe(2);
    // AddedToken-style objects are accepted too; unknown strings give null.
    const objects = Tokenizer.fromJSON(json, { bos_token: { content: '<s>' }, eos_token: { content: '</s>' }, pad_token: '<nope>' });
    expect([objects.bosTokenId, objects.eosTokenId, objects.padTokenId]).toEqual([1, 2, null]);
  });
});
