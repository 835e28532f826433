/**
 * The raw kernel contract of @apertus/tensor.
 *
 * A kernel works on contiguous, row-major typed arrays and writes into the output arrays it is
 * given; it never allocates tensors and knows nothing about autograd. Every kernel has a plain
 * TypeScript implementation (`kernels/js`, the reference); the `cpu` backend (`kernels/cpu`)
 * runs GEMM, attention and the fused LM-head loss on the WebAssembly SIMD GEMM (`kernels/gemm`),
 * and `kernels/gpujs` has gpu.js versions. Which one runs is chosen per op — GEMM included — by
 * the backend registry (`backend.ts`) and can be queried.
 *
 * Conventions: `F32` arrays hold float32 values, `I32` arrays hold token ids or positions.
 * "accumulate" means the kernel adds into the output instead of overwriting it.
 */

import type { GemmArgs, GemmBf16Args } from './gemm/args';

export type { GemmArgs, GemmBf16Args };

/** Float32 buffer. */
export type F32 = Float32Array;
/** Int32 buffer. */
export type I32 = Int32Array;
/** bf16 bit patterns (the upper 16 bits of each float32). */
export type U16 = Uint16Array;

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

/** Elementwise functions y = f(x). */
export type UnaryOp =
  | 'neg'
  | 'exp'
  | 'log'
  | 'expm1'
  | 'log1p'
  | 'softplus'
  | 'sigmoid'
  | 'silu'
  | 'tanh'
  | 'sqrt'
  | 'rsqrt'
  | 'square'
  | 'abs'
  | 'relu';

/** Elementwise functions of two broadcast operands. */
export type BinaryOp = 'add' | 'sub' | 'mul' | 'div' | 'maximum' | 'minimum' | 'pow';

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
  /** The blocks, in token order. */
  readonly blocks: readonly Float32Array[];
  /** Tokens per block. */
  readonly blockSize: number;
  /** Offset (floats) of the first key row in each block. */
  readonly keys: number;
  /** Offset (floats) of the first value row in each block. */
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

/**
 * One AdEMAMix update of one parameter (training-recipe.md §1.1), every array updated in place:
 *   m1 ← β1·m1 + (1−β1)·g;  m2 ← β3·m2 + (1−β3)·g;  nu ← β2·nu + (1−β2)·g²
 *   θ ← θ − lr·((m1/bc1 + α·m2) / (sqrt(nu)/sqrt(bc2) + eps) + λ·θ)
 * The step-dependent scalars (α and β3 from their schedulers, the bias corrections) are computed
 * by the optimizer on the host in float64; only the per-element math runs in the kernel.
 */
export interface AdemamixUpdateArgs {
  /** Parameter θ. */
  param: F32;
  /** Gradient g. */
  grad: F32;
  /** Fast EMA m1, or null when β1 = 0 (m1 is g itself, no buffer). */
  m1: F32 | null;
  /** Slow EMA m2 (no bias correction). */
  m2: F32;
  /** Second moment nu. */
  nu: F32;
  beta1: number;
  beta2: number;
  /** β3 at this step (from the β3 scheduler, T_beta3). */
  beta3: number;
  /** α at this step (from the α scheduler, T_alpha). */
  alpha: number;
  /** Bias corrections 1 − β1^t and 1 − β2^t. */
  bc1: number;
  bc2: number;
  eps: number;
  /** Decoupled weight decay λ. */
  weightDecay: number;
  lr: number;
}

/**
 * One AdamW update of one parameter, every array updated in place:
 *   m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;  θ ← θ·(1 − lr·λ) − (lr/bc1)·m / (sqrt(v)/sqrt(bc2) + eps)
 */
export interface AdamwUpdateArgs {
  param: F32;
  grad: F32;
  /** First moment m. */
  m: F32;
  /** Second moment v. */
  v: F32;
  beta1: number;
  beta2: number;
  /** Bias corrections 1 − β1^t and 1 − β2^t. */
  bc1: number;
  bc2: number;
  eps: number;
  weightDecay: number;
  lr: number;
}

/** The full set of raw kernels one backend provides. */
export interface KernelSet {
  /**
   * C = alpha·op(A)·op(B) + beta·C on row-major operands (see `GemmArgs`); B holds bf16 bits
   * when it is a Uint16Array. Every `matmul` and `linear` product and their gradients run here.
   */
  gemm(args: GemmArgs | GemmBf16Args): void;
  /** out[i] = f(x[i]). */
  unary(op: UnaryOp, x: F32, out: F32): void;
  /** gx[i] = gy[i] * f'(x[i]); y = f(x) is passed so kernels can reuse it (exp, sigmoid...). */
  unaryBackward(op: UnaryOp, x: F32, y: F32, gy: F32, gx: F32): void;
  /**
   * out = a (op) b with broadcasting. `outShape` has rank r; `aStrides`/`bStrides` are the
   * operands' element strides for each of the r output axes (0 on a broadcast axis).
   */
  binary(op: BinaryOp, a: F32, aStrides: readonly number[], b: F32, bStrides: readonly number[], outShape: readonly number[], out: F32): void;
  /**
   * The strided view of `x` (element `offset`, `shape`, `strides`) copied into `out` in row-major
   * order: out[i] = x[offset + Σ_k idx_k(i)·strides[k]]. Materialises non-contiguous views
   * (transpose, permute, narrow).
   */
  copyStrided(x: F32, offset: number, shape: readonly number[], strides: readonly number[], out: F32): void;
  /** out[o, i] = sum_j x[o, j, i] for x viewed as [outer, n, inner]. */
  sum(x: F32, outer: number, n: number, inner: number, out: F32): void;
  /** out[o, i] = max_j x[o, j, i]; arg[o, i] = first j attaining it. */
  max(x: F32, outer: number, n: number, inner: number, out: F32, arg: I32): void;
  /** Row softmax over the last axis of x viewed as [rows, n]. */
  softmax(x: F32, rows: number, n: number, out: F32): void;
  /** gx = y * (gy - sum(gy * y)) per row. */
  softmaxBackward(y: F32, gy: F32, rows: number, n: number, gx: F32): void;
  /** Row log-softmax. */
  logSoftmax(x: F32, rows: number, n: number, out: F32): void;
  /** gx = gy - exp(y) * sum(gy) per row. */
  logSoftmaxBackward(y: F32, gy: F32, rows: number, n: number, gx: F32): void;
  /** out = w * x / sqrt(mean(x^2) + eps) per row of length n; rstd[row] = 1/sqrt(mean(x^2)+eps). */
  rmsnorm(x: F32, w: F32, rows: number, n: number, eps: number, out: F32, rstd: F32): void;
  /** gx and gw overwritten (gw summed over rows). */
  rmsnormBackward(x: F32, w: F32, rstd: F32, gy: F32, rows: number, n: number, gx: F32, gw: F32): void;
  /** out[t, :] = table[ids[t], :] with table [V, H]. */
  embedding(ids: I32, table: F32, H: number, out: F32): void;
  /** gtable[v, :] = sum of gy[t, :] over the positions t with ids[t] = v, in token order (overwritten; rows without ids are zero). */
  embeddingBackward(ids: I32, gy: F32, H: number, gtable: F32): void;
  /**
   * Rotary embedding, rotate_half (NeoX) form, on x [N, heads, d] with one position per row:
   * for i < d/2, angle = pos * invFreq[i]; (x1, x2) = (x[i], x[i + d/2]);
   * out[i] = x1 cos - x2 sin, out[i + d/2] = x2 cos + x1 sin. `inverse` rotates by -angle (the backward pass).
   */
  rope(x: F32, N: number, heads: number, d: number, positions: I32, invFreq: F32, inverse: boolean, out: F32): void;
  /** Fused causal (GQA, optional document mask) attention forward. */
  attention(args: AttentionArgs): void;
  /** Fused attention backward recomputing probabilities from the saved lse. */
  attentionBackward(args: AttentionBackwardArgs): void;
  /** Attention of a sequence's new queries over its paged KV cache, inference only (see `PagedAttentionArgs`). */
  pagedAttention(args: PagedAttentionArgs): void;
  /**
   * Row cross-entropy with weights: loss[r] = w[r] * (lse[r] - logits[r, targets[r]]); rows whose
   * target is negative (ignore index) get loss 0 and w treated as 0. `weights` null means all 1.
   * lse[r] is written for the backward pass.
   */
  crossEntropy(logits: F32, targets: I32, weights: F32 | null, rows: number, V: number, loss: F32, lse: F32): void;
  /** glogits[r, :] = g[r] * w[r] * (softmax(logits[r]) - onehot(targets[r])); g is the per-row upstream gradient. */
  crossEntropyBackward(logits: F32, targets: I32, weights: F32 | null, lse: F32, g: F32, rows: number, V: number, glogits: F32): void;
  /**
   * Fused LM head + cross-entropy (`linearCrossEntropy`): the weighted loss sums and, when dh/dw
   * are given, the gradients of the weighted loss sum. Optional in the contract: a backend
   * without it cannot be selected for this op (`setBackend` throws).
   */
  linearCrossEntropy?(args: LinearCrossEntropyArgs): void;
  /** The AdEMAMix update of one parameter (see `AdemamixUpdateArgs`). */
  ademamixUpdate(args: AdemamixUpdateArgs): void;
  /** The AdamW update of one parameter (see `AdamwUpdateArgs`). */
  adamwUpdate(args: AdamwUpdateArgs): void;
  /** out[0] = acc[0] + Σ_i x[i]² (acc null: 0); `out` may be `acc` (the squared global norm of clipping, parameter by parameter). */
  sumSquares(x: F32, acc: F32 | null, out: F32): void;
  /** out[i] = x[i]·s; `out` may be `x` (gradient clipping in place, loss-gradient scaling). */
  scaleBy(x: F32, s: number, out: F32): void;
  /**
   * xIELU (the Apertus MLP activation) with αp = alpha_p[0] and αn = β + softplus_n[0], both
   * passed as one-element arrays so they can stay where the tensors live:
   * out[i] = αp·x² + β·x for x > 0, αn·(expm1(min(x, ε)) − x) + β·x for x ≤ 0.
   */
  xielu(x: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, out: F32): void;
  /**
   * gx[i] = gy[i]·∂out/∂x (overwritten), and the two sums the parameter gradients are made of
   * (before the softplus derivative; overwritten): sumP[0] = Σ_{x>0} gy·x²,
   * sumN[0] = Σ_{x≤0} gy·(expm1(min(x, ε)) − x).
   */
  xieluBackward(x: F32, gy: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, gx: F32, sumP: F32, sumN: F32): void;
}

/** Names of the ops in a KernelSet, used for per-op backend selection. */
export type KernelName = keyof KernelSet;
