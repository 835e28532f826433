// Micro-batches for causal language modelling: packed samples (training-recipe §4.4) stacked into
// [B, T] tensors, with the loss mask = end-of-document mask × Goldfish keep-mask (§2.1, §2.4).

import { combineMasks, goldfishMask, type GoldfishOptions } from '@apertus/goldfish';
import { Tensor } from '@apertus/tensor';
import { TrainerOptionError } from './errors';

/**
 * One training row, structurally compatible with `@apertus/data`'s `PackedSample`: inputs, next
 * tokens, a per-token loss mask (1 = supervised), and optionally packed-sequence positions and
 * document ids. SFT rows use the same shape with the prompt masked out.
 */
export interface TrainingSample {
  /** Input ids, length T. */
  readonly tokens: ArrayLike<number>;
  /** Target ids (the inputs shifted by one), length T. */
  readonly labels: ArrayLike<number>;
  /** 1 where the target is trained on, 0 elsewhere (EoD inputs, padding, prompts). */
  readonly lossMask: ArrayLike<number>;
  /** Position ids (restarting after each EoD); default 0…T−1. */
  readonly positionIds?: ArrayLike<number>;
  /** Document id of each input token (−1 for padding); attention never crosses documents. */
  readonly documentIds?: ArrayLike<number>;
}

/** A stacked micro-batch, ready for `model.forward(ids, { positions, docIds })`. */
export interface LmBatch {
  /** Rows B. */
  readonly batchSize: number;
  /** Columns T. */
  readonly seqLength: number;
  /** Input ids [B, T] (i32). */
  readonly ids: Tensor;
  /** Targets [B·T] (i32), flattened to match the logits rows. */
  readonly targets: Tensor;
  /** Positions [B, T] (i32), when the samples carry them. */
  readonly positions?: Tensor;
  /** Per-row document ids [B, T] (i32, renumbered from 0 in each row), when the samples carry them. */
  readonly docIds?: Tensor;
  /** Loss weight of each target [B·T]: the loss mask, times the Goldfish keep-mask when enabled. */
  readonly mask: Float32Array;
  /** Σ mask: the targets this batch contributes to the loss. */
  readonly keptTokens: number;
  /** Targets the Goldfish mask removed from the loss (0 without Goldfish). */
  readonly goldfishDropped: number;
}

/** Options of {@link collateLm}. */
export interface CollateOptions {
  /**
   * Goldfish loss (hash-table strategy, Apertus: `{ goldfishK: 50, goldfishH: 50 }`), applied to
   * each row's labels independently, as Megatron applies it per sample. `null`/absent: standard loss.
   */
  readonly goldfish?: GoldfishOptions | null;
}

/**
 * Stack samples of equal length into an {@link LmBatch}. The loss mask of row b is
 * `lossMask_b ∧ goldfish(labels_b)`; document ids are renumbered per row (first document = 0,
 * padding keeps −1) so they fit in i32 whatever the corpus size.
 * @throws TrainerOptionError when there are no samples or their lengths differ
 */
export function collateLm(samples: readonly TrainingSample[], options: CollateOptions = {}): LmBatch {
  const B = samples.length;
  if (B === 0) throw new TrainerOptionError('samples', 'a batch needs at least one sample');
  const T = samples[0]!.tokens.length;
  if (T === 0) throw new TrainerOptionError('samples', 'samples must have at least one token');
  const ids = new Int32Array(B * T);
  const targets = new Int32Array(B * T);
  const mask = new Float32Array(B * T);
  const withPositions = samples.every((s) => s.positionIds !== undefined);
  const withDocs = samples.every((s) => s.documentIds !== undefined);
  const positions = withPositions ? new Int32Array(B * T) : null;
  const docs = withDocs ? new Int32Array(B * T) : null;
  let kept = 0;
  let dropped = 0;
  samples.forEach((s, b) => {
    for (const [name, arr] of [['tokens', s.tokens], ['labels', s.labels], ['lossMask', s.lossMask], ['positionIds', s.positionIds], ['documentIds', s.documentIds]] as const) {
      if (arr !== undefined && arr.length !== T) throw new TrainerOptionError(`samples[${b}].${name}`, `has length ${arr.length}, expected ${T}`);
    }
    const off = b * T;
    for (let t = 0; t < T; t++) {
      ids[off + t] = s.tokens[t]!;
      targets[off + t] = s.labels[t]!;
    }
    let rowMask: ArrayLike<number> = s.lossMask;
    if (options.goldfish) {
      const keep = goldfishMask(Int32Array.from(s.labels), options.goldfish);
      const combined = combineMasks(keep, s.lossMask as Uint8Array);
      for (let t = 0; t < T; t++) if (s.lossMask[t] && !combined[t]) dropped++;
      rowMask = combined;
    }
    for (let t = 0; t < T; t++) {
      const w = rowMask[t] ? 1 : 0;
      mask[off + t] = w;
      kept += w;
    }
    if (positions) for (let t = 0; t < T; t++) positions[off + t] = s.positionIds![t]!;
    if (docs) {
      const d = s.documentIds!;
      let first = -1;
      for (let t = 0; t < T && first < 0; t++) if (d[t]! >= 0) first = d[t]!;
      for (let t = 0; t < T; t++) docs[off + t] = d[t]! < 0 ? -1 : d[t]! - first;
    }
  });
  return {
    batchSize: B,
    seqLength: T,
    ids: Tensor.ints(ids, [B, T]),
    targets: Tensor.ints(targets, [B * T]),
    ...(positions ? { positions: Tensor.ints(positions, [B, T]) } : {}),
    ...(docs ? { docIds: Tensor.ints(docs, [B, T]) } : {}),
    mask,
    keptTokens: kept,
    goldfishDropped: dropped,
  };
}
