// The Apertus 1.5 layout (135,368 added tokens, the Replace normalizer rules) against the Rust
// tokenizers bindings on the same tokenizer.json: ids, offsets and decoding, and the encode pins of
// the released tokenizer's build recipe.
import fc from 'fast-check';
import rustTokenizers from 'tokenizers';
import { beforeAll, describe, expect, it } from 'vitest';
import { APERTUS_1P5_AUDIO_TOKENS, APERTUS_1P5_RESERVED, APERTUS_1P5_VISUAL_TOKENS, buildApertus1p5TokenizerJson } from './apertus-1p5.js';
import { TokenizerError } from './errors.js';
import { ADVERSARIAL, toCodePoints, udhrCorpus } from './fixtures.test-helper.js';
import { Tokenizer, type TokenizerJson } from './tokenizer.js';
import { trainApertusBpe } from './train.js';

let ours: Tokenizer;
let rust: InstanceType<typeof rustTokenizers.Tokenizer>;
let base: number;
beforeAll(() => {
  const corpus = udhrCorpus().filter((d) => ['eng', 'deu_1996', 'fra', 'rus'].includes(d.code)).map((d) => d.text);
  const trained = trainApertusBpe(corpus, { vocabSize: 2500 });
  base = trained.vocabSize;
  const text = JSON.stringify(buildApertus1p5TokenizerJson(trained.tokenizerJson));
  ours = Tokenizer.fromJSON(text);
  rust = rustTokenizers.Tokenizer.fromString(text);
}, 180_000);

const TEXTS = [
  '<think>Let me plan.</think>The answer is 4.',
  '<|inner_prefix|>plan<|inner_suffix|>   done',
  '<|channel>thought \n first<channel|>then <thought>a</thought><answer>b</answer>',
  'Look: <image> and <|image|> then <audio><|audio|>.',
  '<|img_start|><|visual token 0|><|visual token 131071|><|img_end_of_row|><|img_end|> <|audio token 4095|>',
  '<|tool_output_start|>{"temp": 20}<|tool_output_end|><|assistant_end|>',
  '<|visual token 131072|> <|audio token 4096|> <|visual token 12',
  '<s><|system_start|>Be brief.<|system_end|><|user_start|>Hi<|user_end|><|assistant_start|>',
  '<|inner_suffix|>\n\n\t<|inner_suffix|>x',
];

describe('the Apertus 1.5 tokenizer layout', () => {
  it('has the ids of the released tokenizer (its build recipe\'s encode pins) and 266,440 entries', async () => {
    expect(ours.vocabSize).toBe(base + APERTUS_1P5_RESERVED + APERTUS_1P5_VISUAL_TOKENS + APERTUS_1P5_AUDIO_TOKENS);
    const pins: [string, number][] = [
      ['<think>', 32], ['</think>', 33], ['<|inner_prefix|>', 32], ['<|inner_suffix|>', 33], ['<|tool_output_start|>', 73], ['<|tool_output_end|>', 74],
      ['<|RESERVED_OMNI_000|>', base], ['<|img_start|>', base + 1], ['<|image|>', base + 7], ['<image>', base + 7], ['<|audio_start|>', base + 8],
      ['<|audio|>', base + 13], ['<audio>', base + 13], ['<|visual token 0|>', base + 200], ['<|audio token 0|>', base + 200 + 131072],
    ];
    for (const [text, id] of pins) {
      expect(ours.encodeIds(text, { addSpecialTokens: false }), text).toEqual([id]);
      expect((await rust.encode(text, null, { addSpecialTokens: false })).getIds(), text).toEqual([id]);
    }
    // The reasoning delimiters are not special: they survive skip_special_tokens.
    expect(ours.decode([32, 1100, 33], { skipSpecialTokens: true })).toBe('<|inner_prefix|>d<|inner_suffix|>');
    expect(ours.tokenToId('<think>')).toBe(69);
  });

  it('encodes as the Rust tokenizers do: ids, offsets and decoded text', async () => {
    const texts = [...TEXTS, ...ADVERSARIAL, ...udhrCorpus().slice(0, 40).map((d) => d.text.slice(0, 200))];
    for (const text of texts) {
      const r = await rust.encode(text);
      const o = ours.encode(text);
      expect(o.ids, JSON.stringify(text.slice(0, 60))).toEqual(r.getIds());
      expect(toCodePoints(text, o.offsets), JSON.stringify(text.slice(0, 60))).toEqual(r.getOffsets());
      expect(ours.decode(o.ids), JSON.stringify(text.slice(0, 60))).toBe(await rust.decode(r.getIds(), false));
    }
  });

  it('random mixes of markers and text (property test): ids', async () => {
    const piece = fc.oneof(
      fc.constantFrom('<think>', '</think>', '<image>', '<audio>', '<|image|>', '<|inner_suffix|>', ' ', '\n', '<|channel>thought', '<channel|>', '<answer>', '<|visual token 7|>', '<|audio token 9|>', '<s>', 'think', '<', '>', '|'),
      fc.string({ unit: 'binary', maxLength: 6 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 12 }).map((a) => a.join('')), async (text) => {
        expect(ours.encodeIds(text)).toEqual((await rust.encode(text)).getIds());
      }),
      { numRuns: 300, seed: 15 },
    );
  });

  it('keeps the 2509 added tokens but 69/70 and adds the 135,368 omni tokens', () => {
    expect(ours.addedTokens.tokens.length).toBe(1000 - 2 + 135368);
    expect(ours.vocabSize - base).toBe(135368);
  });

  it('refuses a base that is not in the 2509 layout, naming the field', () => {
    const j = trainApertusBpe(['abc'], { vocabSize: 1300 }).tokenizerJson;
    const vocab = { ...(j.model.vocab as Record<string, number>) };
    delete vocab['<think>'];
    expect(() => buildApertus1p5TokenizerJson({ ...j, model: { ...j.model, vocab } } as TokenizerJson)).toThrow(TokenizerError);
    expect(() => buildApertus1p5TokenizerJson({ ...j, model: { ...j.model, vocab } } as TokenizerJson)).toThrow(/model.vocab: expected "<think>" at id 32/);
  });
});
