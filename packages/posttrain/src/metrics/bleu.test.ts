// BLEU and the 13a tokenizer against sacreBLEU 2.6.0 (golden values from test/sacrebleu_golden.py)
// and against scores worked out by hand.

import { describe, expect, it } from 'vitest';
import { CORPUS_GOLDEN, SENTENCE_GOLDEN } from '../../test/sacrebleu-golden';
import { PosttrainError } from '../errors';
import { corpusBleu, sentenceBleu } from './bleu';
import { pyRstrip, pySplit } from './python-text';
import { tokenize13a } from './tokenize-13a';

const close = (a: number, b: number): void => expect(Math.abs(a - b)).toBeLessThan(1e-9);

describe('13a tokenizer', () => {
  it('matches sacreBLEU on every golden segment', () => {
    for (const row of SENTENCE_GOLDEN) expect(tokenize13a(pyRstrip(row.hyp))).toBe(row.tok13a);
  });

  it('splits symbols, keeps digits together around . , and splits digit-dash', () => {
    expect(tokenize13a('It costs $3.14, 1,000 (approx.) 2-3.')).toBe('It costs $ 3.14 , 1,000 ( approx . ) 2 - 3 .');
    expect(tokenize13a('a &amp; b &quot;c&quot;')).toBe('a & b " c "');
  });

  it('splits on Python whitespace (U+0085 yes, U+FEFF no)', () => {
    expect(pySplit('a\u0085b\u00a0c\ufeffd')).toEqual(['a', 'b', 'c\ufeffd']);
    expect(pyRstrip('x \u0085\u3000')).toBe('x');
  });
});

describe('BLEU, worked by hand', () => {
  it('"the cat" vs "the cat sat": sentence BLEU = 100·exp(1 − 3/2), corpus BLEU = 0', () => {
    // unigrams 2/2, bigrams 1/1, no trigrams or 4-grams in the hypothesis.
    // Sentence BLEU (effective order): geometric mean over orders 1–2 = 100, BP = e^(1−3/2).
    const s = sentenceBleu('the cat', 'the cat sat');
    expect(s.counts).toEqual([2, 1, 0, 0]);
    expect(s.totals).toEqual([2, 1, 0, 0]);
    close(s.bp, Math.exp(-0.5));
    close(s.score, 100 * Math.exp(-0.5));
    // Corpus BLEU averages all 4 orders; p3 = p4 = 0 (no trigram at all, smoothing cannot apply).
    expect(corpusBleu(['the cat'], ['the cat sat']).score).toBe(0);
  });

  it('exp smoothing: the k-th zero-match order gets 100/(2^k·total)', () => {
    // "a b c d" vs "a b x d": p1 = 3/4, p2 = 1/3, p3 = 0/2 → 100/(2·2), p4 = 0/1 → 100/(4·1)
    const s = corpusBleu(['a b c d'], ['a b x d']);
    expect(s.counts).toEqual([3, 1, 0, 0]);
    expect(s.totals).toEqual([4, 3, 2, 1]);
    const expected = Math.exp((Math.log(75) + Math.log(100 / 3) + Math.log(25) + Math.log(25)) / 4);
    close(s.score, expected);
    // 'none' floors log 0 at −9999999999: the score is 0
    expect(corpusBleu(['a b c d'], ['a b x d'], { smoothMethod: 'none' }).score).toBe(0);
    // 'add-k' (k = 1) adds 1 to matches and totals of orders ≥ 2: p = 3/4, 2/4, 1/3, 1/2
    const addK = sentenceBleu('a b c d', 'a b x d', { smoothMethod: 'add-k' });
    close(addK.score, 100 * Math.pow((3 / 4) * (2 / 4) * (1 / 3) * (1 / 2), 1 / 4));
  });

  it('uses the closest reference length, the shorter one on ties', () => {
    // hypothesis of 2 tokens, references of 1 and 3 tokens: both 1 away, the shorter (1) is used
    expect(sentenceBleu('x y', ['x y z', 'x']).refLen).toBe(1);
  });
});

describe('BLEU against sacreBLEU 2.6.0', () => {
  it('matches sentence BLEU (exp and add-k) on every golden segment', () => {
    for (const row of SENTENCE_GOLDEN) {
      close(sentenceBleu(row.hyp, row.refs).score, row.bleu);
      close(sentenceBleu(row.hyp, row.refs, { smoothMethod: 'add-k' }).score, row.bleuAddK);
    }
  });

  it('matches corpus BLEU with every smoothing method and option', () => {
    for (const row of CORPUS_GOLDEN) {
      const b = corpusBleu(row.hyps, row.refs);
      close(b.score, row.bleu);
      expect(b.counts).toEqual(row.bleuDetail.counts);
      expect(b.totals).toEqual(row.bleuDetail.totals);
      expect([b.sysLen, b.refLen]).toEqual([row.bleuDetail.sysLen, row.bleuDetail.refLen]);
      close(b.bp, row.bleuDetail.bp);
      close(corpusBleu(row.hyps, row.refs, { smoothMethod: 'none' }).score, row.bleuNone);
      close(corpusBleu(row.hyps, row.refs, { smoothMethod: 'floor' }).score, row.bleuFloor);
      close(corpusBleu(row.hyps, row.refs, { smoothMethod: 'add-k' }).score, row.bleuAddK);
      close(corpusBleu(row.hyps, row.refs, { effectiveOrder: true }).score, row.bleuEffective);
      close(corpusBleu(row.hyps, row.refs, { lowercase: true }).score, row.bleuLowercase);
      close(corpusBleu(row.hyps, row.refs, { tokenize: 'none' }).score, row.bleuTokNone);
    }
  });
});

describe('BLEU errors', () => {
  it('rejects mismatched lengths and bad options', () => {
    expect(() => corpusBleu(['a', 'b'], ['a'])).toThrow(PosttrainError);
    expect(() => corpusBleu(['a'], ['a'], { smoothMethod: 'bogus' as 'exp' })).toThrow(/smoothMethod/);
    expect(() => corpusBleu(['a'], ['a'], { maxNgramOrder: 0 })).toThrow(/maxNgramOrder/);
  });
});
