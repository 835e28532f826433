// One optimizer step over a batch split into micro-batches (gradient accumulation):
//   zero grads → for each micro-batch: forward, loss / N_batch, backward (grads add up)
//   → global-norm clipping → optimizer.step(lr(count)) → scheduler.step(samples).
// The same code serves both devices. On `webgpu` parameters, gradients and optimizer state stay on
// the GPU: per step the host reads back the loss and the global gradient norm (one float, reduced
// on the device: it is needed every step for the non-finite check and the log), nothing else of
// the update.

import { clipGradNorm, gradNorm, type LrScheduler } from '@apertus/ademamix';
import { backward, tidy, type Tensor } from '@apertus/tensor';
import { NonFiniteLossError, TrainerOptionError } from './errors';
import { assertFiniteParameters, nonFiniteGradient } from './finite';

/** What {@link trainStep} needs from an optimizer (`AdEMAMix` and `AdamW` fit). */
export interface StepOptimizer {
  /** Apply one update with learning rate `lr`. */
  step(lr?: number): void;
  /** Zero every gradient buffer. */
  zeroGrad(): void;
}

/** Inputs of {@link trainStep}. */
export interface TrainStepOptions<B> {
  /** Trainable parameters (e.g. `model.parameters()`), for clipping and the gradient norm. */
  readonly params: Iterable<readonly [string, Tensor]>;
  /** The optimizer over the same parameters. */
  readonly optimizer: StepOptimizer;
  /** Learning-rate schedule; its current value is used, then it is advanced by `schedulerIncrement`. */
  readonly scheduler: LrScheduler;
  /** The micro-batches of this step (gradient accumulation over all of them). */
  readonly microBatches: readonly B[];
  /** Loss weight of a micro-batch: its kept (supervised) tokens. */
  readonly weightOf: (batch: B) => number;
  /**
   * Scalar loss of one micro-batch, already divided by `normalizer` (the summed weight of the
   * whole step), so that the micro-batch losses add up to the step's token-mean loss.
   */
  readonly loss: (batch: B, normalizer: number) => Tensor;
  /** Global-norm clipping threshold (Apertus: 0.1 pretraining, 1.0 SFT); 0 or absent = no clipping. */
  readonly clip?: number;
  /** Scheduler count added after the step: the global batch size in samples (Megatron) or 1 (steps). Default 1. */
  readonly schedulerIncrement?: number;
  /** Step number (1-based) for error messages. */
  readonly step?: number;
}

/** Outcome of one optimizer step. */
export interface TrainStepResult {
  /** Token-mean loss of the step (Σ of the micro-batch losses). */
  readonly loss: number;
  /** Global L2 norm of the gradient before clipping. */
  readonly gradNorm: number;
  /** Learning rate used for the update. */
  readonly lr: number;
  /** Summed weight (kept tokens) of the step. */
  readonly weight: number;
}

/**
 * Run one optimizer step with gradient accumulation. The step's loss is the token mean over all
 * micro-batches; a NaN/∞ loss or gradient norm throws {@link NonFiniteLossError} (naming the first
 * parameter with a non-finite gradient) before the optimizer or scheduler changes anything
 * (gradients are left as computed); a weight that the update made non-finite throws
 * {@link NonFiniteWeightError} naming it (on the host; a device weight is not read back for this,
 * a non-finite one makes the next loss non-finite).
 */
export function trainStep<B>(o: TrainStepOptions<B>): TrainStepResult {
  if (o.microBatches.length === 0) throw new TrainerOptionError('microBatches', 'a step needs at least one micro-batch');
  if (o.clip !== undefined && !(o.clip >= 0 && Number.isFinite(o.clip))) throw new TrainerOptionError('clip', `must be a finite number ≥ 0, got ${o.clip}`);
  const params = [...o.params];
  let weight = 0;
  for (const mb of o.microBatches) weight += o.weightOf(mb);
  const normalizer = Math.max(1, weight);
  o.optimizer.zeroGrad();
  let loss = 0;
  for (const mb of o.microBatches) {
    // Forward and backward in one scope: the activations go back to the buffer pool at its end.
    loss += tidy(() => {
      const l = o.loss(mb, normalizer);
      const value = l.item();
      backward(l);
      return value;
    });
  }
  const step = o.step ?? 0;
  if (!Number.isFinite(loss)) throw new NonFiniteLossError(step, 'loss', loss);
  const norm = o.clip ? clipGradNorm(params, o.clip) : gradNorm(params);
  if (!Number.isFinite(norm)) throw new NonFiniteLossError(step, 'gradNorm', norm, nonFiniteGradient(params));
  const lr = o.scheduler.lr;
  o.optimizer.step(lr);
  assertFiniteParameters(params, step, false);
  o.scheduler.step(o.schedulerIncrement ?? 1);
  return { loss, gradNorm: norm, lr, weight };
}
