import { copyInto, embedding, kernelF32, linear, noGrad, pagedAttention, rmsnorm, Tensor, tidy } from '@apertus/tensor';
import { outputVocabSize } from './config';
import { GenerationError } from './errors';
import type { KVCache } from './kv-cache';
import { decoderLayer, type Attend } from './layer';
import type { ApertusModel } from './model';

/** One sequence's share of a batched inference step. */
export interface StepInput {
  /** The sequence's cache; its `length` grows by tokens.length. */
  cache: KVCache;
  /** New tokens: the whole prompt at prefill (or a chunk of it), one token when decoding. */
  tokens: ArrayLike<number>;
}

/** Rows `ids` of the embedding table as float32 [1, n, H] (`embedding` converts bf16 or quantized tables row by row, never whole). */
function embedRows(model: ApertusModel, table: Tensor, ids: Int32Array): Tensor {
  for (const id of ids) {
    if (!(id >= 0 && id < model.config.vocab_size)) throw new GenerationError('tokens', `token id ${id} outside the vocabulary of ${model.config.vocab_size}`);
  }
  return embedding(Tensor.from(ids, [1, ids.length]), table);
}

/**
 * Attention against KV caches for a batch whose rows are the sequences' new tokens one after the
 * other: each sequence appends its keys and values to its cache and its queries attend over the
 * whole cache (positions continue after `cache.length`), read from the cache's blocks in place.
 */
function cachedAttend(batch: readonly StepInput[]): Attend {
  return (l, q, k, v) => {
    const [, , nh, d] = q.shape as [number, number, number, number];
    // One sequence (a single decode stream): its attention output is the layer's, no copy into a batch array.
    const o = batch.length === 1 ? null : Tensor.zeros(q.shape);
    let r0 = 0;
    for (const s of batch) {
      // Row views of the storage (no copy back from a device that holds it).
      const T = s.tokens.length, rows = (t: Tensor, w: number) => kernelF32(t, 'attend').subarray(r0 * w, (r0 + T) * w);
      const kv = s.cache.update(l, rows(k, s.cache.rowSize), rows(v, s.cache.rowSize));
      const a = pagedAttention(Tensor.from(rows(q, nh * d), [1, T, nh, d]), kv, { qOffset: s.cache.length });
      if (!o) return a;
      copyInto(kernelF32(a, 'attend'), kernelF32(o, 'attend').subarray(r0 * nh * d, (r0 + T) * nh * d));
      r0 += T;
    }
    return o!;
  };
}

/** Check a batch: tokens in every sequence, room in every cache. Returns the number of rows. */
function batchRows(batch: readonly StepInput[]): number {
  let rows = 0;
  for (const s of batch) {
    if (s.tokens.length === 0) throw new GenerationError('tokens', 'a sequence in the batch has no new tokens');
    if (s.cache.length + s.tokens.length > s.cache.capacity) {
      throw new GenerationError('context', `sequence needs ${s.cache.length + s.tokens.length} positions but its cache holds ${s.cache.capacity}`);
    }
    rows += s.tokens.length;
  }
  return rows;
}

/**
/**
 * The decoder over a batch's new tokens, one row of all of them: the hidden states after the last
 * layer, [1, rows, H] (before the final norm), in the caller's `tidy` scope; the caches advance.
 */
function decodeRows(model: ApertusModel, batch: readonly StepInput[], embed: Tensor, rows: number): Tensor {
  const ids = new Int32Array(rows), pos = new Int32Array(rows);
  let r = 0;
  for (const s of batch) for (let t = 0; t < s.tokens.length; t++, r++) { ids[r] = s.tokens[t]!; pos[r] = s.cache.length + t; }
  const positions = Tensor.from(pos, [1, rows]), attend = cachedAttend(batch);
  let h = embedRows(model, embed, ids);
  // Each layer's intermediates go back to the pool when it ends: a long prefill holds one layer's, not all of them.
  for (let l = 0; l < model.layers.length; l++) h = tidy(() => decoderLayer(model, l, h, positions, attend));
  for (const s of batch) s.cache.advance(s.tokens.length);
  return h;
}

/**
 * The logits [n, V] of each sequence's last new token as a tensor, where the step ran (on a
 * device they stay there: sample them there, or read them). Runs in a `tidy` scope: nothing else
 * of the step outlives it. See `step`.
 */
export function stepLogits(model: ApertusModel, batch: readonly StepInput[]): Tensor {
  const c = model.config;
  const rows = batchRows(batch);
  return noGrad(() => {
    // The token tables first, outside the scope below: an adapter keeps its merged tables across steps.
    const embed = model.embedTokens, head = model.lmHead;
    // Every intermediate of the step is released when it ends (its blocks reused, still warm, by
    // the next step) instead of waiting for the garbage collector: 1.4–1.6× faster decoding.
    return tidy(() => {
      const h = decodeRows(model, batch, embed, rows);
      // Only the last row of each sequence goes through the final norm and the LM head (copied where h lives).
      const H = c.hidden_size, last = Tensor.zeros([batch.length, H]), hd = kernelF32(h, 'step'), ld = kernelF32(last, 'step');
      let end = 0;
      batch.forEach((s, i) => { end += s.tokens.length; copyInto(hd.subarray((end - 1) * H, end * H), ld.subarray(i * H, (i + 1) * H)); });
      return linear(rmsnorm(last, model.norm, c.rms_norm_eps), head);
    });
  });
}

/**
 * Run new tokens of several sequences through the model in one batch (continuous batching:
 * prefill chunks and single decode tokens can be mixed). The batch is one row of all new tokens
 * through the same decoder layers as training; linear layers see all rows at once, attention
 * runs per sequence against its own KV cache. Returns the logits of each sequence's last new
 * token, [n, V] row-major (V = the head's rows, `outputVocabSize`): in `out` (at least n·V
 * floats) when given, else in a new array. The
 * step runs in a `tidy` scope: its activations live on the cpu heap (read in place by the
 * kernels) and go back to the pool when it returns. A decode loop passes the same `out` every
 * step: a fresh [n, V] array per step costs page faults and garbage-collector work (5–10 % of a
 * `small` decode step).
 */
export function step(model: ApertusModel, batch: readonly StepInput[], out?: Float32Array): Float32Array {
  const V = outputVocabSize(model.config);
  if (out && out.length < batch.length * V) {
    throw new GenerationError('out', `${out.length} floats cannot hold the logits of ${batch.length} sequences (${batch.length * V})`);
  }
  const t = stepLogits(model, batch);
  // The logits leave as a copy, into `out` or a new array (nothing of the step's storage outlives it).
  try {
    const logits = t.data;
    if (!out) return logits.slice();
    out.set(logits);
    return out.subarray(0, logits.length);
  } finally {
    t.dispose();
  }
}

/**
 * The final hidden states (after the last RMSNorm, what the LM head reads) of one sequence's new
 * tokens, [T, H] row-major: the states an embedding pools (llama.cpp's `result_norm`). A long
 * input goes through in chunks, each attending to the ones before through `input.cache`.
 */
export function hiddenStates(model: ApertusModel, input: StepInput): Float32Array {
  const rows = batchRows([input]);
  return noGrad(() => {
    const embed = model.embedTokens;
    return tidy(() => rmsnorm(decodeRows(model, [input], embed, rows), model.norm, model.config.rms_norm_eps).data.slice());
  });
}
