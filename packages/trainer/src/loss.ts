// The masked next-token loss: L = Σ_i m_i · CE(logits_i, target_i) / N (training-recipe §2.1),
// where m is the batch mask and N the number of kept targets of the whole accumulated batch.

import type { ForwardOptions } from '@apertus/model';
import { crossEntropy, reshape, type Tensor } from '@apertus/tensor';
import type { LmBatch } from './batch';

/** Anything with the `ApertusModel.forward` signature: ids [B, T] → logits [B, T, V]. */
export interface CausalLm {
  /** Logits [B, T, V] for ids [B, T]. */
  forward(ids: Tensor, opts?: ForwardOptions): Tensor;
  /**
   * Optional fused loss (`ApertusModel.loss`): the LM head folded into the cross-entropy, so the
   * [B, T, V] logits are never stored. Used when present; same value and gradients.
   */
  loss?(ids: Tensor, targets: Tensor, opts: ForwardOptions & { mask?: Float32Array; normalizer?: number; reduction?: 'mean' | 'sum' }): Tensor;
}

function forwardOptions(batch: LmBatch): ForwardOptions {
  return {
    ...(batch.positions ? { positions: batch.positions } : {}),
    ...(batch.docIds ? { docIds: batch.docIds } : {}),
  };
}

/**
 * Masked cross-entropy of one micro-batch.
 *
 * With `normalizer` = kept targets of the *whole* accumulated batch, the losses of the
 * micro-batches add up to the token mean over the batch, and so do their gradients: gradient
 * accumulation gives the same update as one big batch (Megatron's `--calculate-per-token-loss`;
 * with one micro-batch per step it equals Megatron's default per-micro-batch mean).
 * Without `normalizer` the micro-batch's own kept-token count is used.
 */
export function causalLmLoss(model: CausalLm, batch: LmBatch, options: { readonly normalizer?: number } = {}): Tensor {
  const normalizer = options.normalizer ?? Math.max(1, batch.keptTokens);
  if (model.loss) return model.loss(batch.ids, batch.targets, { ...forwardOptions(batch), mask: batch.mask, normalizer });
  const logits = model.forward(batch.ids, forwardOptions(batch));
  const V = logits.shape[logits.shape.length - 1]!;
  const flat = reshape(logits, [batch.batchSize * batch.seqLength, V]);
  return crossEntropy(flat, batch.targets, { mask: batch.mask, reduction: 'mean', normalizer });
}

/** Σ m_i · CE_i of one batch (no normalisation): the building block of validation losses. */
export function summedLmLoss(model: CausalLm, batch: LmBatch): number {
  if (model.loss) return model.loss(batch.ids, batch.targets, { ...forwardOptions(batch), mask: batch.mask, reduction: 'sum' }).item();
  const logits = model.forward(batch.ids, forwardOptions(batch));
  const V = logits.shape[logits.shape.length - 1]!;
  return crossEntropy(reshape(logits, [batch.batchSize * batch.seqLength, V]), batch.targets, { mask: batch.mask, reduction: 'sum' }).item();
}
