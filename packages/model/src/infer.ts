import { add, attention, noGrad, rmsnorm, rope, Tensor } from '@apertus/tensor';
import { xielu } from '@apertus/xielu';
import { GenerationError } from './errors';
import type { KVCache } from './kv-cache';
import type { ApertusModel } from './model';
import { project, weightRows } from './packed';

/** One sequence's share of a batched inference step. */
export interface StepInput {
  /** The sequence's cache; its `length` grows by tokens.length. */
  cache: KVCache;
  /** New tokens: the whole prompt at prefill (or a chunk of it), one token when decoding. */
  tokens: ArrayLike<number>;
}

/** Rows `ids` of the embedding table as float32 (bf16 or packed tables are converted row by row, never whole). */
function embedRows(model: ApertusModel, ids: Int32Array): Float32Array {
  for (const id of ids) {
    if (!(id >= 0 && id < model.config.vocab_size)) throw new GenerationError('tokens', `token id ${id} outside the vocabulary of ${model.config.vocab_size}`);
  }
  return weightRows(model.embedTokens, ids);
}

/**
 * Run new tokens of several sequences through the model in one batch (continuous batching:
 * prefill chunks and single decode tokens can be mixed). Linear layers see all rows at once;
 * attention runs per sequence against its own KV cache. Returns the logits of each sequence's
 * last new token, [n, V] row-major.
 */
export function step(model: ApertusModel, batch: readonly StepInput[]): Float32Array {
  const c = model.config, nh = c.num_attention_heads, nkv = c.num_key_value_heads, d = c.head_dim;
  let rows = 0;
  for (const s of batch) {
    if (s.tokens.length === 0) throw new GenerationError('tokens', 'a sequence in the batch has no new tokens');
    if (s.cache.length + s.tokens.length > s.cache.capacity) {
      throw new GenerationError('context', `sequence needs ${s.cache.length + s.tokens.length} positions but its cache holds ${s.cache.capacity}`);
    }
    rows += s.tokens.length;
  }
  return noGrad(() => {
    const ids = new Int32Array(rows), pos = new Int32Array(rows);
    let r = 0;
    for (const s of batch) for (let t = 0; t < s.tokens.length; t++, r++) { ids[r] = s.tokens[t]!; pos[r] = s.cache.length + t; }
    const positions = Tensor.from(pos);
    let h = Tensor.from(embedRows(model, ids), [rows, c.hidden_size]);
    model.layers.forEach((L, l) => {
      const a = rmsnorm(h, L.attention_layernorm, c.rms_norm_eps);
      const q = rope(rmsnorm(Tensor.from(project(a, L.q_proj).data, [rows, nh, d]), L.q_norm, c.rms_norm_eps), positions, model.invFreq);
      const k = rope(rmsnorm(Tensor.from(project(a, L.k_proj).data, [rows, nkv, d]), L.k_norm, c.rms_norm_eps), positions, model.invFreq);
      const v = project(a, L.v_proj);
      const o = new Float32Array(rows * nh * d);
      let r0 = 0;
      for (const s of batch) {
        const T = s.tokens.length, S = s.cache.length + T, row = s.cache.rowSize;
        s.cache.k[l]!.set(k.data.subarray(r0 * row, (r0 + T) * row), s.cache.length * row);
        s.cache.v[l]!.set(v.data.subarray(r0 * row, (r0 + T) * row), s.cache.length * row);
        const att = attention(
          Tensor.from(q.data.subarray(r0 * nh * d, (r0 + T) * nh * d), [1, T, nh, d]),
          Tensor.from(s.cache.k[l]!.subarray(0, S * row), [1, S, nkv, d]),
          Tensor.from(s.cache.v[l]!.subarray(0, S * row), [1, S, nkv, d]),
          { qOffset: s.cache.length },
        );
        o.set(att.data, r0 * nh * d);
        r0 += T;
      }
      h = add(h, project(Tensor.from(o, [rows, nh * d]), L.o_proj));
      const m = rmsnorm(h, L.feedforward_layernorm, c.rms_norm_eps);
      h = add(h, project(xielu(project(m, L.up_proj), L.act), L.down_proj));
    });
    for (const s of batch) s.cache.length += s.tokens.length;
    // Only the last row of each sequence goes through the final norm and the LM head.
    const last = new Float32Array(batch.length * c.hidden_size);
    let end = 0;
    batch.forEach((s, i) => { end += s.tokens.length; last.set(h.data.subarray((end - 1) * c.hidden_size, end * c.hidden_size), i * c.hidden_size); });
    return project(rmsnorm(Tensor.from(last, [batch.length, c.hidden_size]), model.norm, c.rms_norm_eps), model.lmHead).data;
  });
}
