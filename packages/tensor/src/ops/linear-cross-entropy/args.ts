import type { F32, I32, U16 } from '../../arrays';

/**
 * Arguments of the fused LM-head cross-entropy kernel: for hidden states h [rows, H] and a head
 * W [V, H], each row's loss is weight[r]·(logsumexp(h_r·Wᵀ) − (h_r·Wᵀ)[target[r]]), computed in
 * chunks of `chunkRows` rows so that the [rows, V] logits are never stored.
 */
export interface LinearCrossEntropyArgs {
  /** Rows (tokens). */
  rows: number;
  /** Vocabulary size. */
  V: number;
  /** Hidden size. */
  H: number;
  /** Hidden states [rows, H]. */
  h: F32;
  /** Head weight [V, H]: float32, or bf16 bits when a Uint16Array. */
  w: F32 | U16;
  /** Target ids [rows]; not read where the weight is 0. */
  targets: I32;
  /** Per-row loss weights [rows]; rows of weight 0 (ignored, masked) are skipped. */
  weights: F32;
  /** Rows per chunk of logits. */
  chunkRows: number;
  /** Output: Σ_r weight[r]·loss_r at [0] and Σ_r weight[r] at [1]. */
  sums: Float64Array;
  /** Output (or null): d(Σ weight·loss)/dh [rows, H], overwritten. */
  dh: F32 | null;
  /** Output (or null): d(Σ weight·loss)/dW [V, H], overwritten (f32 W only). */
  dw: F32 | null;
}
