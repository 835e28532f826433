// Perplexity from summed negative log-likelihoods: PPL = exp( Σ NLL / #tokens ), natural log.

import { checkOption } from '../errors';

/** Summed negative log-likelihood (nats) over a number of predicted tokens. */
export interface NllSum {
  /** Σ −log p(token | context) over the tokens, in nats. */
  readonly sumNll: number;
  /** Number of predicted tokens. */
  readonly tokens: number;
}

/**
 * Perplexity `exp(sumNll / tokens)` of one or several summed NLLs (parts are pooled: their sums
 * and token counts are added, which is the token-weighted corpus perplexity, not a mean of
 * per-part perplexities).
 */
export function perplexity(sumNll: number, tokens: number): number;
/** Perplexity of pooled parts. */
export function perplexity(parts: readonly NllSum[]): number;
export function perplexity(a: number | readonly NllSum[], b?: number): number {
  let sum: number;
  let n: number;
  if (typeof a === 'number') {
    sum = a;
    n = b ?? NaN;
  } else {
    sum = 0;
    n = 0;
    for (const p of a) {
      sum += p.sumNll;
      n += p.tokens;
    }
  }
  checkOption(Number.isFinite(sum) && sum >= 0, 'sumNll', `expected a finite non-negative number, got ${sum}`);
  checkOption(Number.isInteger(n) && n > 0, 'tokens', `expected a positive integer, got ${n}`);
  return Math.exp(sum / n);
}
