// Validation loss and perplexity: the token mean of the masked cross-entropy over a whole
// validation set, computed without recording autograd.

import { noGrad, tidy } from '@apertus/tensor';
import type { LmBatch } from './batch';
import { summedLmLoss, type CausalLm } from './loss';

/** Result of {@link evaluateLm}. */
export interface EvalResult {
  /** Σ mask·CE / Σ mask over every batch (nats per token). */
  readonly loss: number;
  /** exp(loss). */
  readonly perplexity: number;
  /** Σ mask: targets scored. */
  readonly tokens: number;
}

/**
 * Token-mean validation loss over `batches` (summed in float64 across batches, so the result does
 * not depend on how the set is cut into batches beyond float32 rounding inside each batch).
 * Returns NaN loss when no target is scored.
 */
export function evaluateLm(model: CausalLm, batches: Iterable<LmBatch>): EvalResult {
  return noGrad(() => {
    let sum = 0;
    let tokens = 0;
    for (const b of batches) {
      if (b.keptTokens === 0) continue;
      sum += tidy(() => summedLmLoss(model, b));
      tokens += b.keptTokens;
    }
    const loss = tokens > 0 ? sum / tokens : Number.NaN;
    return { loss, perplexity: Math.exp(loss), tokens };
  });
}
