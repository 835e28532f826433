// Normalizers against the Rust tokenizers bindings: one small Apertus-layout vocabulary with each
// normalizer (and a normalized added token), ids and offsets over adversarial strings, UDHR text
// and random strings.

import fc from 'fast-check';
import rustTokenizers from 'tokenizers';
import { beforeAll, describe, expect, it } from 'vitest';
import { TokenizerError } from './errors.js';
import { ADVERSARIAL, codePointsOf, toCodePoints, udhrCorpus } from './fixtures.test-helper.js';
import type { NormalizerConfig } from './normalizer.js';
import { Tokenizer, type TokenizerJson } from './tokenizer.js';
import { NEWER, UNASSIGNED } from './reference-unicode-table.js';
import { trainApertusBpe } from './train.js';

const NORMALIZERS: [string, NormalizerConfig][] = [
  ['NFC', { type: 'NFC' }],
  ['NFD', { type: 'NFD' }],
  ['NFKC', { type: 'NFKC' }],
  ['NFKD', { type: 'NFKD' }],
  ['Lowercase', { type: 'Lowercase' }],
  ['Strip', { type: 'Strip', strip_left: true, strip_right: true }],
  ['Strip (right only)', { type: 'Strip', strip_left: false, strip_right: true }],
  ['empty Sequence', { type: 'Sequence', normalizers: [] }],
  ['Sequence NFKC, Lowercase, Strip', { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Lowercase' }, { type: 'Strip', strip_left: true, strip_right: true }] }],
  ['Sequence NFD, Lowercase', { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'Lowercase' }] }],
  ['Replace (string)', { type: 'Replace', pattern: { String: 'll' }, content: 'LLL' }],
  ['Replace (string, to nothing)', { type: 'Replace', pattern: { String: 'e' }, content: '' }],
  ['Replace (regex)', { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' }],
  // Apertus 1.5's rules (tokenizer.json's normalizer, the reasoning clean-up before the aliases) around an NFC.
  ['Sequence of Apertus 1.5 rules', { type: 'Sequence', normalizers: [
    { type: 'Replace', pattern: { Regex: '<\\|channel\\|?>thought\\s*\\n' }, content: '<|inner_prefix|>' },
    { type: 'Replace', pattern: { String: '<channel|>' }, content: '<|inner_suffix|>' },
    { type: 'Replace', pattern: { String: '</answer>' }, content: '' },
    { type: 'Replace', pattern: { Regex: '<\\|inner_suffix\\|>\\s+' }, content: '<|inner_suffix|>' },
    { type: 'Replace', pattern: { String: '<think>' }, content: '<|inner_prefix|>' },
    { type: 'Replace', pattern: { String: 'hello' }, content: 'hello world' },
    { type: 'NFC' },
  ] }],
];

const EXTRA: readonly string[] = [
  'ｶﾞｷﾞ ﾊﾟ', // half-width voiced marks compose with the kana before them under NFKC
  'ﬁne ﬂow ẞ ß İstanbul ΣΑΣ ὈΔΥΣΣΕΎΣ',
  '\u1100\u1161\u11a8 한국어 \u1100\u1161', // conjoining jamo
  ' \t leading and trailing \u3000 ',
  '<s>Hello</s> <|assistant_start|>HELLO WORLD<|assistant_end|>',
  '<think>plan</think> <|channel>thought \n x<channel|>  y<|inner_suffix|> \t\nz</answer>hello hello',
  'well, hello helllo ee e',
  'HELLO WORLD, hello world, Hello World',
  'A\u030a Å Å e\u0301\u0327 ç\u0301',
  '①②③ ㎏ ㍻ ½ x² ℌ ﹏',
  'Ω Ω K K',
  // Assigned after the reference's Unicode 9.0 tables: it leaves them as they are (the engine maps U+1CCD6 to "A", U+32FF to "令和").
  'x\u{1CCD6}\u0301 \u{1CCD6}\u{1CCD7}b \u32FF \uA7F2\u0301 a\u1DF6\u0316\u0301 \u07FD\u0345',
  'e\u0301\u{1E4EC}\u0301 \u0C15\u0C3C\u0C4D \u{105D2}\u0307 \u{11382}\u{113C9} \u{16D67}\u{16D67}',
];

/** Code points newer than the reference's tables (and unassigned ones), next to marks and letters they could combine with. */
const NEWER_TEXT = fc.string({
  unit: fc.oneof(
    fc.constantFrom(...codePointsOf(NEWER)).map((c) => String.fromCodePoint(c)),
    fc.constantFrom(...codePointsOf(UNASSIGNED).filter((_, i) => i % 997 === 0)).map((c) => String.fromCodePoint(c)),
    fc.integer({ min: 0x0300, max: 0x036f }).map((c) => String.fromCodePoint(c)),
    fc.constantFrom('a', 'A', 'e', ' ', '\u3099', '\uFF76', '\u1100', '\u1161', '\u0C15'),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  ),
  maxLength: 20,
});

let json: TokenizerJson;
let nextId: number;
beforeAll(() => {
  const corpus = udhrCorpus().filter((d) => ['eng', 'deu_1996', 'fra', 'ell_monotonic', 'kor', 'jpn', 'vie'].includes(d.code)).map((d) => d.text);
  const trained = trainApertusBpe(corpus, { vocabSize: 3000 });
  json = trained.tokenizerJson;
  nextId = trained.vocabSize;
}, 120_000);

/** The vocabulary with `normalizer` and one normalized (non-special) added token. */
function build(normalizer: NormalizerConfig): { ours: Tokenizer; rust: InstanceType<typeof rustTokenizers.Tokenizer> } {
  const j = { ...json, normalizer, added_tokens: [...(json.added_tokens ?? []), { id: nextId, content: 'hello world', single_word: false, lstrip: false, rstrip: false, normalized: true, special: false }] };
  const text = JSON.stringify(j);
  return { ours: Tokenizer.fromJSON(text), rust: rustTokenizers.Tokenizer.fromString(text) };
}

describe.each(NORMALIZERS)('normalizer %s matches the Rust tokenizers', (_name, normalizer) => {
  it('on adversarial strings and UDHR text: ids and offsets', async () => {
    const { ours, rust } = build(normalizer);
    const texts = [...ADVERSARIAL, ...EXTRA, ...udhrCorpus().slice(0, 120).map((d) => d.text.slice(0, 300))];
    for (const text of texts) {
      const r = await rust.encode(text);
      const o = ours.encode(text);
      expect(o.ids, JSON.stringify(text.slice(0, 60))).toEqual(r.getIds());
      expect(toCodePoints(text, o.offsets), JSON.stringify(text.slice(0, 60))).toEqual(r.getOffsets());
      expect(ours.encodeIds(text)).toEqual(o.ids);
    }
  });

  it('on random strings (property test): ids', async () => {
    const { ours, rust } = build(normalizer);
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 30 }), async (text) => {
        expect(ours.encodeIds(text)).toEqual((await rust.encode(text)).getIds());
      }),
      { numRuns: 150, seed: 3 },
    );
  });

  it('on random text with code points newer than the reference (property test): ids', async () => {
    const { ours, rust } = build(normalizer);
    await fc.assert(
      fc.asyncProperty(NEWER_TEXT, async (text) => {
        expect(ours.encodeIds(text)).toEqual((await rust.encode(text)).getIds());
      }),
      { numRuns: 150 },
    );
  });
});

describe('normalizer errors', () => {
  it('an unknown or malformed normalizer is a typed error naming the field', () => {
    const bad = (normalizer: unknown) => () => Tokenizer.fromJSON({ ...json, normalizer } as TokenizerJson);
    expect(bad({ type: 'Precompiled', precompiled_charsmap: '' })).toThrow(TokenizerError);
    expect(bad({ type: 'Precompiled' })).toThrow(expect.objectContaining({ code: 'UnsupportedComponent', field: 'normalizer.type' }));
    expect(bad({ type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'Nope' }] })).toThrow(expect.objectContaining({ field: 'normalizer.normalizers[1].type' }));
    expect(bad({ type: 'Strip', strip_left: 'yes' })).toThrow(expect.objectContaining({ code: 'InvalidField', field: 'normalizer.strip_left' }));
    expect(bad({ type: 'Sequence' })).toThrow(expect.objectContaining({ field: 'normalizer.normalizers' }));
    expect(bad({ type: 'Replace', pattern: { String: 'a' } })).toThrow(expect.objectContaining({ code: 'InvalidField', field: 'normalizer.content' }));
    expect(bad({ type: 'Replace', pattern: { Glob: 'a' }, content: '' })).toThrow(expect.objectContaining({ code: 'InvalidField', field: 'normalizer.pattern' }));
    expect(bad({ type: 'Sequence', normalizers: [{ type: 'Replace', pattern: { Regex: '(?>a)b' }, content: '' }] })).toThrow(expect.objectContaining({ field: 'normalizer.normalizers[0].pattern.Regex' }));
  });
});
