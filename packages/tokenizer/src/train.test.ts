// BPE training: a hand-computed example, agreement with a naive recount-everything trainer on
// random corpora, determinism, and the saved tokenizer.json loading in both references.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Tokenizer as HfJsTokenizer } from '@huggingface/tokenizers';
import rustTokenizers from 'tokenizers';
import { describe, expect, it } from 'vitest';
import { APERTUS_PRETOKENIZER_PATTERN, PreTokenizer } from './pretokenizer.js';
import { BYTE_TO_CHAR } from './byte-level.js';
import { TokenizerError } from './errors.js';
import { loadTokenizerFromDirectory, saveTokenizer } from './files.js';
import { udhrCorpus } from './fixtures.test-helper.js';
import { APERTUS_EOS_ID } from './apertus.js';
import { Tokenizer } from './tokenizer.js';
import { trainApertusBpe } from './train.js';

const pre = PreTokenizer.fromConfig({
  type: 'Sequence',
  pretokenizers: [
    { type: 'Split', pattern: { Regex: APERTUS_PRETOKENIZER_PATTERN }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, use_regex: false, trim_offsets: true },
  ],
});
const encoder = new TextEncoder();

/**
 * Reference trainer written the slow, obvious way: after every merge, recount all pairs of all
 * words from scratch. Same rules: most frequent pair, ties to the smaller (left id, right id),
 * merged string gets the next id unless it already has one, merge left to right.
 */
function naiveTrain(texts: string[], vocabSize: number, minFrequency: number): [string, string][] {
  const counts = new Map<string, number>();
  for (const text of texts) {
    const out: number[] = [];
    pre.run(text, 0, text.length, out);
    for (let k = 0; k < out.length; k += 3) {
      const w = text.slice(out[k]!, out[k + 1]!);
      counts.set(w, (counts.get(w) ?? 0) + 1);
    }
  }
  const idOf = new Map<string, number>();
  for (let b = 0; b < 256; b++) idOf.set(BYTE_TO_CHAR[b]!, 1000 + b);
  let next = 1256;
  const words = [...counts].map(([w, c]) => ({ syms: [...encoder.encode(w)].map((b) => BYTE_TO_CHAR[b]!), c }));
  const merges: [string, string][] = [];
  while (next < vocabSize) {
    const pairs = new Map<string, { a: string; b: string; n: number }>();
    for (const { syms, c } of words) {
      for (let i = 0; i + 1 < syms.length; i++) {
        const key = `${syms[i]}\u0000${syms[i + 1]}`;
        const p = pairs.get(key) ?? { a: syms[i]!, b: syms[i + 1]!, n: 0 };
        p.n += c;
        pairs.set(key, p);
      }
    }
    let best: { a: string; b: string; n: number } | undefined;
    for (const p of pairs.values()) {
      if (p.n < minFrequency) continue;
      if (
        best === undefined ||
        p.n > best.n ||
        (p.n === best.n && (idOf.get(p.a)! < idOf.get(best.a)! || (idOf.get(p.a) === idOf.get(best.a) && idOf.get(p.b)! < idOf.get(best.b)!)))
      ) {
        best = p;
      }
    }
    if (best === undefined) break;
    const merged = best.a + best.b;
    if (!idOf.has(merged)) idOf.set(merged, next++);
    merges.push([best.a, best.b]);
    for (const w of words) {
      const out: string[] = [];
      for (let i = 0; i < w.syms.length; i++) {
        if (i + 1 < w.syms.length && w.syms[i] === best.a && w.syms[i + 1] === best.b) {
          out.push(merged);
          i++;
        } else out.push(w.syms[i]!);
      }
      w.syms = out;
    }
  }
  return merges;
}

describe('trainApertusBpe', () => {
  it('learns the hand-computed merges of a tiny corpus', () => {
    // Pre-tokens "ab", " ab", " ab", " abc": (a,b) x4, then (Ġ,ab) x3; (Ġab,c) x1 < minFrequency 2.
    const r = trainApertusBpe(['ab ab ab abc'], { vocabSize: 1300 });
    expect(r.merges).toEqual([
      ['a', 'b'],
      ['Ġ', 'ab'],
    ]);
    expect(r.vocabSize).toBe(1258);
    expect(r.tokenizerJson.model.vocab['ab']).toBe(1256);
    expect(r.tokenizerJson.model.vocab['Ġab']).toBe(1257);
    expect(r.distinctWords).toBe(3);
  });

  it('agrees with a naive recount-everything trainer on random corpora', () => {
    const piece = fc.constantFrom('a', 'b', 'c', 'ab', 'ba', ' ', 'é', 'Ab', '1', '.', '\n', 'aaa', ' the', '😀');
    fc.assert(
      fc.property(
        fc.array(fc.array(piece, { minLength: 1, maxLength: 30 }).map((p) => p.join('')), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1256, max: 1300 }),
        fc.integer({ min: 1, max: 3 }),
        (texts, vocabSize, minFrequency) => {
          const fast = trainApertusBpe(texts, { vocabSize, minFrequency });
          expect(fast.merges).toEqual(naiveTrain(texts, vocabSize, minFrequency));
        },
      ),
      { numRuns: 150, seed: 9 },
    );
  });

  it('agrees with the naive trainer on real multilingual text', () => {
    const texts = udhrCorpus()
      .filter((_, i) => i % 50 === 0)
      .map((d) => d.text.slice(0, 1500));
    expect(trainApertusBpe(texts, { vocabSize: 1500 }).merges).toEqual(naiveTrain(texts, 1500, 2));
  });

  it('is deterministic and independent of text order', () => {
    const texts = udhrCorpus()
      .slice(0, 40)
      .map((d) => d.text.slice(0, 2000));
    const a = trainApertusBpe(texts, { vocabSize: 2000 });
    const b = trainApertusBpe([...texts].reverse(), { vocabSize: 2000 });
    expect(b.merges).toEqual(a.merges);
    expect(a.vocabSize).toBe(2000);
  });

  it('never learns the reserved tokens from text containing them', () => {
    const r = trainApertusBpe(['<|user_start|>hello<|user_end|> \\begin{x} <s></s>'.repeat(20)], { vocabSize: 1400 });
    const learned = Object.keys(r.tokenizerJson.model.vocab).filter((t) => r.tokenizerJson.model.vocab[t]! >= 1256);
    expect(learned.some((t) => t.includes('user_start') || t.includes('begin{'))).toBe(false);
  });

  it('saves a tokenizer.json that both references load, with identical encodings that round-trip', async () => {
    const corpus = udhrCorpus().filter((_, i) => i % 6 === 0);
    const trained = trainApertusBpe(
      corpus.map((d) => d.text.slice(0, 4000)),
      { vocabSize: 4096 },
    );
    expect(trained.vocabSize).toBe(4096);
    const dir = mkdtempSync(join(tmpdir(), 'apertus-bpe-'));
    saveTokenizer(dir, trained.tokenizerJson, trained.tokenizerConfig);
    const ours = loadTokenizerFromDirectory(dir);
    const rust = rustTokenizers.Tokenizer.fromFile(join(dir, 'tokenizer.json'));
    const hfjs = new HfJsTokenizer(trained.tokenizerJson as unknown as object, trained.tokenizerConfig);
    expect(ours.vocabSize).toBe(4096);
    expect(rust.getVocabSize(true)).toBe(4096);
    // Held-out text: the part of each declaration not used for training, other languages too.
    for (const { text } of udhrCorpus().filter((_, i) => i % 6 !== 0 && i % 5 === 0)) {
      const t = text.slice(0, 600);
      const ids = ours.encodeIds(t);
      expect(ids).toEqual((await rust.encode(t)).getIds());
      expect(ids).toEqual(hfjs.encode(t).ids);
      expect(ours.decode(ids, { skipSpecialTokens: true })).toBe(t);
      expect(await rust.decode(ids, true)).toBe(t);
    }
  });

  it('writes an Instruct tokenizer_config (EOS <|assistant_end|>) or, with instruct: false, a base one (EOS </s> = id 2)', () => {
    const corpus = ['All human beings are born free and equal in dignity and rights.'];
    const instruct = trainApertusBpe(corpus, { vocabSize: 1300 });
    expect(instruct.tokenizerConfig.eos_token).toBe('<|assistant_end|>');
    expect(Tokenizer.fromJSON(instruct.tokenizerJson, instruct.tokenizerConfig).eosTokenId).toBe(68);
    const base = trainApertusBpe(corpus, { vocabSize: 1300, instruct: false });
    expect(base.tokenizerConfig.eos_token).toBe('</s>');
    expect(Tokenizer.fromJSON(base.tokenizerJson, base.tokenizerConfig).eosTokenId).toBe(APERTUS_EOS_ID);
    expect(base.tokenizerJson).toEqual(instruct.tokenizerJson);
  });

  it('rejects bad options', () => {
    const bad: [() => unknown, string][] = [
      [() => trainApertusBpe(['x'], { vocabSize: 1000 }), 'vocabSize'],
      [() => trainApertusBpe(['x'], { vocabSize: 2000.5 }), 'vocabSize'],
      [() => trainApertusBpe(['x'], { vocabSize: 2000, minFrequency: 0 }), 'minFrequency'],
      [() => trainApertusBpe([5 as unknown as string], { vocabSize: 2000 }), 'corpus'],
    ];
    for (const [fn, field] of bad) {
      let err: unknown;
      try {
        fn();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(TokenizerError);
      expect((err as TokenizerError).code).toBe('InvalidTrainerOption');
      expect((err as TokenizerError).field).toBe(field);
    }
  });
});
