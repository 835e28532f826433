import { describe, expect, it } from 'vitest';
import { FilterError, InvalidOptionError } from '../errors';
import { APERTUS_TOXICITY_THRESHOLDS, ToxicityFilter, WordListToxicityScorer } from './toxicity';

describe('WordListToxicityScorer', () => {
  it('scores the maximum over chunks of the fraction of listed words', () => {
    const s = new WordListToxicityScorer({ words: ['bad', 'Worse'], chunkWords: 4 });
    // chunks: [this is bad text] → 1/4, [worse worse ok] → 2/3
    expect(s.score('This is BAD text. Worse, worse ok', undefined)).toBeCloseTo(2 / 3, 15);
    expect(s.score('nothing to see', 'en')).toBe(0);
    expect(s.score('', 'en')).toBe(0);
    // words are whole tokens: "badge" is not "bad"
    expect(s.score('badge', undefined)).toBe(0);
  });

  it('uses per-language lists with a "*" fallback', () => {
    const s = new WordListToxicityScorer({ words: { de: ['mist'], '*': ['crap'] }, chunkWords: 10 });
    expect(s.score('so ein Mist', 'de-CH')).toBeCloseTo(1 / 3, 15);
    expect(s.score('so ein Mist', 'fr')).toBe(0);
    expect(s.score('what crap', 'fr')).toBe(0.5);
  });

  it('ships a default English list', () => {
    expect(new WordListToxicityScorer().score('you stupid idiot', 'en')).toBeCloseTo(2 / 3, 15);
  });
});

describe('ToxicityFilter', () => {
  it('keeps iff score < threshold', async () => {
    const fixed = (v: number) => ({ score: () => v });
    const f = new ToxicityFilter({ scorer: fixed(0.5), threshold: 0.5 });
    expect((await f.apply({ id: 'a', text: 'x' })).report).toEqual({
      kept: false,
      filter: 'toxicity',
      reason: 'toxicity',
      detail: 'score 0.5 >= threshold 0.5',
    });
    expect((await new ToxicityFilter({ scorer: fixed(0.4999), threshold: 0.5 }).apply({ id: 'a', text: 'x' })).report.kept).toBe(true);
  });

  it('with the Apertus per-language thresholds, only the 9 listed languages are filtered', async () => {
    const scorer = { score: async () => 0.999 };
    const f = new ToxicityFilter({ scorer, threshold: APERTUS_TOXICITY_THRESHOLDS });
    expect(f.thresholdFor('en')).toBe(0.999440610408783);
    expect(f.thresholdFor('zh-Hans')).toBe(0.5954);
    expect((await f.apply({ id: '1', text: 'x', lang: 'en' })).report.kept).toBe(true); // 0.999 < 0.99944
    expect((await f.apply({ id: '2', text: 'x', lang: 'de' })).report.kept).toBe(false); // 0.999 ≥ 0.9977
    expect((await f.apply({ id: '3', text: 'x', lang: 'ru' })).report.kept).toBe(true); // not filtered
    expect((await f.apply({ id: '4', text: 'x' })).report.kept).toBe(true);
  });

  it('rejects bad thresholds and unusable scores with typed errors', async () => {
    expect(() => new ToxicityFilter({ threshold: 1.5 })).toThrow(InvalidOptionError);
    expect(() => new ToxicityFilter({ threshold: { en: Number.NaN } })).toThrow(InvalidOptionError);
    expect(() => new WordListToxicityScorer({ chunkWords: 0 })).toThrow(InvalidOptionError);
    const f = new ToxicityFilter({ scorer: { score: () => Number.NaN } });
    await expect(f.apply({ id: 'z', text: 'x' })).rejects.toThrow(FilterError);
  });
});
