import { describe, expect, it } from 'vitest';
import { PosttrainError } from '../errors';
import { perplexity } from './perplexity';

describe('perplexity', () => {
  it('is exp of the mean NLL', () => {
    // a uniform model over V symbols has NLL log V per token and perplexity V
    expect(perplexity(10 * Math.log(50), 10)).toBeCloseTo(50, 12);
    expect(perplexity(0, 3)).toBe(1);
  });

  it('pools parts by tokens, not by averaging perplexities', () => {
    // parts with mean NLL 1 (1 token) and 2 (3 tokens): pooled mean 7/4
    expect(perplexity([{ sumNll: 1, tokens: 1 }, { sumNll: 6, tokens: 3 }])).toBeCloseTo(Math.exp(7 / 4), 12);
  });

  it('rejects empty counts and non-finite sums', () => {
    expect(() => perplexity(1, 0)).toThrow(PosttrainError);
    expect(() => perplexity(Number.NaN, 1)).toThrow(/sumNll/);
    expect(() => perplexity([])).toThrow(/tokens/);
  });
});
