import type { F32, I32 } from '../../arrays';
import type { KvBlockData, KvDType } from '../../memory/kv-blocks';

/** Arguments of the fused causal attention kernels (flash-style streaming softmax). */
export interface AttentionArgs {
  /** Batch size. */
  B: number;
  /** Number of queries per sequence. */
  T: number;
  /** Number of keys per sequence (T for training; cached length + T when decoding). */
  S: number;
  /** Query heads. */
  nh: number;
  /** Key/value heads; query head h uses kv head floor(h / (nh / nkv)). */
  nkv: number;
  /** Head dimension. */
  d: number;
  /** Queries, layout [B, T, nh, d]. */
  q: F32;
  /** Keys, layout [B, S, nkv, d]. */
  k: F32;
  /** Values, layout [B, S, nkv, d]. */
  v: F32;
  /** Score scale, usually d^-1/2. */
  scale: number;
  /** Query t of a sequence sits at key position `qOffset + t` (0 in training; the cache length when decoding). Causal: key s is visible iff s <= qOffset + t. */
  qOffset: number;
  /** Optional document ids of the queries, [B, T]; key s is visible only if docK[s] === docQ[t]. */
  docQ?: I32;
  /** Optional document ids of the keys, [B, S]; required when docQ is given. */
  docK?: I32;
  /** Output [B, T, nh, d]. */
  out: F32;
  /** Log-sum-exp of the scaled scores per query and head, [B, nh, T] (saved for the backward pass). */
  lse: F32;
}

/** Extra arguments of the attention backward kernel (gradients are overwritten, not accumulated). */
export interface AttentionBackwardArgs extends AttentionArgs {
  /** Gradient of the output, [B, T, nh, d]. */
  gout: F32;
  /** Gradient of q, [B, T, nh, d]. */
  gq: F32;
  /** Gradient of k, [B, S, nkv, d]. */
  gk: F32;
  /** Gradient of v, [B, S, nkv, d]. */
  gv: F32;
}

/**
 * One sequence's cached keys and values held in blocks (pages) of `blockSize` tokens, as a paged
 * KV cache keeps them: token s lives in block ⌊s / blockSize⌋, its key row of `heads · d` floats
 * at `keys + (s mod blockSize) · heads · d` of that block, its value row likewise from `values`.
 */
export interface KVPages {
  /** The blocks, in token order: float32, or f16 bits where `dtype` is 'f16'. */
  readonly blocks: readonly KvBlockData[];
  /** Element type of the blocks (default 'f32'). */
  readonly dtype?: KvDType;
  /** Tokens per block. */
  readonly blockSize: number;
  /** Offset (elements) of the first key row in each block. */
  readonly keys: number;
  /** Offset (elements) of the first value row in each block. */
  readonly values: number;
  /** Key/value heads. */
  readonly heads: number;
  /** Tokens held (S). */
  readonly length: number;
}

/**
 * Arguments of the paged attention kernel: `attention` (B = 1, no document ids) of one sequence's
 * T new query rows over keys and values read from its pages. Query t sits at position qOffset + t
 * and sees the keys s ≤ qOffset + t, so only the first qOffset + T tokens of the pages are read.
 */
export interface PagedAttentionArgs {
  /** New query rows. */
  T: number;
  /** Query heads; query head h reads kv head ⌊h / (nh / kv.heads)⌋. */
  nh: number;
  /** Head dimension. */
  d: number;
  /** Queries [T, nh, d]. */
  q: F32;
  /** The pages (qOffset + T ≤ kv.length, checked by the op). */
  kv: KVPages;
  /** Score scale, usually d^-1/2. */
  scale: number;
  /** Position of the first query row. */
  qOffset: number;
  /** Output [T, nh, d], overwritten. */
  out: F32;
}
