import { abs, add, mean, mul, neg, scale, softplus, square, sub, Tensor } from '@apertus/tensor';
import { apertusBeta, transformReward, type QuantileTransform } from './quantile';

/** Summed completion log-probs of one slot (chosen or rejected) for a batch of prompts. */
export interface Completions {
  /** log π_θ(y|x), summed over completion tokens: a [B] tensor with autograd. */
  policyLogps: Tensor;
  /** log π_ref(y|x), precomputed, [B]. */
  refLogps: ArrayLike<number>;
  /** Completion lengths |y| in tokens, [B] (needed by the Apertus variants and length normalisation). */
  lengths?: ArrayLike<number>;
}

/** QRPO options. */
export interface QrpoOptions {
  /** β (CLAIRE default 0.1; Apertus runs used 5.0 with length normalisation). */
  beta: number;
  /** 'apertus' (β_i = min(β/|y|, 0.1), identity transform) or 'claire' (fixed β, any transform). Default 'apertus'. */
  variant?: 'apertus' | 'claire';
  /** Reward transform for the CLAIRE form. Default 'identity'. */
  transform?: QuantileTransform;
  /** Number of reference rewards n (for the 'log' and 'normal-icdf' clamps). */
  numRefRewards?: number;
  /** 'mse' (default) or 'mae'. */
  lossType?: 'mse' | 'mae';
  /** Divide each completion's loss by |y| (Apertus `normalize_loss_by_length`, off by default). */
  normalizeByLength?: boolean;
}

function constant(values: ArrayLike<number>): Tensor {
  return Tensor.from(Float32Array.from(values));
}

/** Per-completion QRPO regression loss for one slot, [B]. */
function slotLoss(c: Completions, rq: ArrayLike<number>, o: QrpoOptions): Tensor {
  const B = c.policyLogps.size;
  const betas = new Float64Array(B), targets = new Float64Array(B);
  for (let i = 0; i < B; i++) {
    if (o.variant === 'claire') {
      const { reward, logZ } = transformReward(rq[i]!, o.numRefRewards ?? 1, o.beta, o.transform ?? 'identity');
      betas[i] = o.beta;
      targets[i] = reward - o.beta * logZ;
    } else {
      if (!c.lengths) throw new RangeError('qrpoLoss: the Apertus variant needs completion lengths');
      const { beta, betaLogZ } = apertusBeta(o.beta, c.lengths[i]!);
      betas[i] = beta;
      targets[i] = rq[i]! - betaLogZ;
    }
  }
  // residual = (R~ − β log Z) − β·(log π_θ − log π_ref)
  const logRatio = sub(c.policyLogps, constant(c.refLogps));
  const residual = sub(constant(targets), mul(constant(betas), logRatio));
  let loss = o.lossType === 'mae' ? abs(residual) : square(residual);
  if (o.normalizeByLength) loss = mul(loss, constant(Array.from(c.lengths!, (l) => 1 / l)));
  return loss;
}

/**
 * Offline QRPO loss with both completions used pointwise (selector "both"): per prompt
 * (loss_chosen + loss_rejected)/2, then the mean over prompts. Quantile rewards come from
 * `quantileReward`. Returns the scalar loss and the per-prompt losses (for logging).
 */
export function qrpoLoss(
  chosen: Completions, rejected: Completions,
  quantiles: { chosen: ArrayLike<number>; rejected: ArrayLike<number> },
  opts: QrpoOptions,
): { loss: Tensor; perPrompt: Tensor } {
  const o = { variant: 'apertus' as const, ...opts };
  const perPrompt = scale(add(slotLoss(chosen, quantiles.chosen, o), slotLoss(rejected, quantiles.rejected, o)), 0.5);
  return { loss: mean(perPrompt), perPrompt };
}

/** DPO options. */
export interface DpoOptions {
  /** β (0.1 typical; Apertus used 5.0 with length normalisation). */
  beta: number;
  /** Use β_w = β/|y_w|, β_l = β/|y_l| (no clamp), as the Apertus DPO variant. */
  lengthNormalized?: boolean;
  /** Divide the loss by (|y_w| + |y_l|)/2. */
  normalizeByLength?: boolean;
}

/**
 * DPO: −log σ(β_w·(log π_θ(y_w) − log π_ref(y_w)) − β_l·(log π_θ(y_l) − log π_ref(y_l))), computed as
 * softplus(−z) for stability; mean over prompts.
 */
export function dpoLoss(chosen: Completions, rejected: Completions, opts: DpoOptions): { loss: Tensor; perPrompt: Tensor } {
  const B = chosen.policyLogps.size;
  const bw = new Float64Array(B).fill(opts.beta), bl = new Float64Array(B).fill(opts.beta);
  if (opts.lengthNormalized || opts.normalizeByLength) {
    if (!chosen.lengths || !rejected.lengths) throw new RangeError('dpoLoss: length normalisation needs completion lengths');
  }
  if (opts.lengthNormalized) for (let i = 0; i < B; i++) { bw[i] = opts.beta / chosen.lengths![i]!; bl[i] = opts.beta / rejected.lengths![i]!; }
  const z = sub(
    mul(constant(bw), sub(chosen.policyLogps, constant(chosen.refLogps))),
    mul(constant(bl), sub(rejected.policyLogps, constant(rejected.refLogps))),
  );
  let perPrompt = softplus(neg(z));
  if (opts.normalizeByLength) perPrompt = mul(perPrompt, constant(Array.from({ length: B }, (_, i) => 2 / (chosen.lengths![i]! + rejected.lengths![i]!))));
  return { loss: mean(perPrompt), perPrompt };
}
