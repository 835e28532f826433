import { crossEntropy, neg, reshape, ShapeError, sum, type Tensor } from '@apertus/tensor';

/**
 * Summed log-probabilities of completion tokens: logits [B, T, V] predict `targets` [B, T]
 * (already shifted: targets[b, t] is the token after position t); `completionMask` [B·T] is 1 on
 * completion tokens and 0 on prompt and padding. Returns log π(y|x) per sequence, [B], with
 * autograd (fused log-softmax: no [B, T, V] probability tensor is kept).
 */
export function sequenceLogProbs(logits: Tensor, targets: Tensor, completionMask: Float32Array): Tensor {
  if (logits.rank !== 3) throw new ShapeError(`sequenceLogProbs: logits must be [B, T, V], got [${logits.shape}]`);
  const [B, T] = logits.shape as [number, number, number];
  if (targets.size !== B * T || completionMask.length !== B * T) {
    throw new ShapeError(`sequenceLogProbs: targets (${targets.size}) and mask (${completionMask.length}) must have B·T = ${B * T} entries`);
  }
  const tokenNll = crossEntropy(logits, targets, { mask: completionMask, reduction: 'none' });
  return neg(sum(reshape(tokenNll, [B, T]), 1));
}
