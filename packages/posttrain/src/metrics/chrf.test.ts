// chrF / chrF++ against sacreBLEU 2.6.0 (golden values from test/sacrebleu_golden.py) and against
// scores worked out by hand on tiny segments.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CORPUS_GOLDEN, SENTENCE_GOLDEN } from '../../test/sacrebleu-golden';
import { PosttrainError } from '../errors';
import { corpusChrf, sentenceChrf } from './chrf';

const close = (a: number, b: number): void => expect(Math.abs(a - b)).toBeLessThan(1e-9);

describe('chrF, worked by hand', () => {
  it('"ab" vs "abc": P̄ = 1, R̄ = (2/3 + 1/2)/2, chrF2 = 5·P̄·R̄/(4·P̄ + R̄) = 7/11', () => {
    // orders 1, 2 have n-grams on both sides; order 3 has a reference n-gram but no hypothesis
    // n-gram and orders 4–6 have none: only orders 1 and 2 enter the averages
    const s = sentenceChrf('ab', 'abc');
    expect(s.stats.slice(0, 9)).toEqual([2, 3, 2, 1, 2, 1, 0, 1, 0]);
    close(s.score, (100 * 7) / 11);
    expect(s.name).toBe('chrF2');
  });

  it('removes whitespace before taking character n-grams', () => {
    expect(sentenceChrf('a b c', 'abc').score).toBe(100);
    expect(sentenceChrf('a b c', 'abc', { whitespace: true }).score).toBeLessThan(100);
  });

  it('sums statistics over segments (not a mean of sentence scores)', () => {
    // segment 1 is perfect ("x"), segment 2 matches nothing ("yyyy" vs "zzzz"); the mean of the
    // sentence scores would be (100 + 0)/2 = 50, but the summed order-1 counts are hyp 5, ref 5, match 1
    const c = corpusChrf(['x', 'yyyy'], ['x', 'zzzz']);
    expect(c.stats.slice(0, 3)).toEqual([5, 5, 1]);
    // orders 2–4 exist only in the second segment and never match (P = R = 0 there), orders 5–6 are
    // empty: P̄ = R̄ = (1/5)/4 = 1/20 and chrF2 = 100·5·P̄·R̄/(4·P̄ + R̄) = 100/20 = 5
    close(c.score, 5);
  });

  it('chrF++ appends word unigrams and bigrams, splitting one edge punctuation mark', () => {
    const s = sentenceChrf('Hallo, Welt!', 'Hallo Welt', { wordOrder: 2 });
    // words: [Hallo , , Welt !] vs [Hallo Welt]: unigrams hyp 4, ref 2, match 2; bigrams hyp 3, ref 1, match 0
    expect(s.stats.slice(18)).toEqual([4, 2, 2, 3, 1, 0]);
    expect(s.name).toBe('chrF2++');
  });

  it('scores identical strings 100 and disjoint strings 0', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 30 }).filter((s) => s.trim() !== ''), (s) => {
        expect(sentenceChrf(s, s).score).toBeCloseTo(100, 10);
      }),
    );
    expect(sentenceChrf('aaaa', 'bbbb').score).toBe(0);
  });
});

describe('chrF against sacreBLEU 2.6.0', () => {
  it('matches sentence chrF and chrF++ on every golden segment', () => {
    for (const row of SENTENCE_GOLDEN) {
      close(sentenceChrf(row.hyp, row.refs).score, row.chrf);
      close(sentenceChrf(row.hyp, row.refs, { wordOrder: 2 }).score, row.chrfPlusPlus);
    }
    expect(SENTENCE_GOLDEN.length).toBe(55);
  });

  it('matches corpus chrF and its variants', () => {
    for (const row of CORPUS_GOLDEN) {
      close(corpusChrf(row.hyps, row.refs).score, row.chrf);
      close(corpusChrf(row.hyps, row.refs, { wordOrder: 2 }).score, row.chrfPlusPlus);
      close(corpusChrf(row.hyps, row.refs, { lowercase: true }).score, row.chrfLowercase);
      close(corpusChrf(row.hyps, row.refs, { whitespace: true }).score, row.chrfWhitespace);
      close(corpusChrf(row.hyps, row.refs, { epsSmoothing: true }).score, row.chrfEps);
    }
  });
});

describe('chrF errors', () => {
  it('rejects mismatched lengths, empty corpora, missing references and bad options', () => {
    expect(() => corpusChrf(['a'], [])).toThrow(PosttrainError);
    expect(() => corpusChrf([], [])).toThrow(/no segments/);
    expect(() => sentenceChrf('a', [])).toThrow(/no reference/);
    expect(() => sentenceChrf('a', 'a', { beta: 0 })).toThrow(/beta/);
    expect(() => sentenceChrf('a', 'a', { charOrder: 0, wordOrder: 0 })).toThrow(/charOrder/);
  });
});
