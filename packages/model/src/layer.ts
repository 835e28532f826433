import { add, linear, mul, reshape, rmsnorm, rope, silu, type Tensor } from '@apertus/tensor';
import { xielu, type XieluParams } from '@apertus/xielu';
import type { ApertusConfig } from './config';

/** The tensors of one decoder layer (matrices of any storage dtype, e.g. GGUF-quantized). */
export interface LayerWeights {
  attention_layernorm: Tensor;
  q_proj: Tensor; k_proj: Tensor; v_proj: Tensor; o_proj: Tensor;
  q_norm: Tensor; k_norm: Tensor;
  feedforward_layernorm: Tensor;
  up_proj: Tensor; down_proj: Tensor;
  /** SwiGLU MLP only. */
  gate_proj?: Tensor;
  /** xIELU MLP only: its trainable αp, αn and buffers β, ε. */
  act?: XieluParams;
}

/** The projections of a decoder layer, by their checkpoint names. */
export type ProjName = 'q_proj' | 'k_proj' | 'v_proj' | 'o_proj' | 'gate_proj' | 'up_proj' | 'down_proj';

/**
 * x·Wᵀ of one projection of one layer: x [..., in], w [out, in] → [..., out]. The model's default
 * is `linear` (whatever the weight's dtype); an adapter (LoRA: x·Wᵀ + s·(x·Aᵀ)·Bᵀ) replaces it to reach every projection.
 */
export type Projection = (x: Tensor, w: Tensor, layer: number, name: ProjName) => Tensor;

/**
 * Where a layer's queries meet keys and values, given the new q [B, T, nh, d] and k, v
 * [B, T, nkv, d] → [B, T, nh, d]. Training attends within the batch (causal, optionally per
 * document); inference first appends k, v to each sequence's KV cache and attends over the whole
 * cache (Hugging Face's `Cache.update`).
 */
export type Attend = (layer: number, q: Tensor, k: Tensor, v: Tensor) => Tensor;

/** What a decoder layer reads of its model (an `ApertusModel`): the layer's weights, RoPE's inverse frequencies, the projection. */
export interface DecoderWeights {
  readonly config: ApertusConfig;
  readonly layers: readonly LayerWeights[];
  readonly invFreq: Float32Array;
  readonly projection: Projection;
}

/**
 * One pre-norm decoder layer on the residual stream h [B, T, H] with positions [B, T]:
 *   h ← h + o_proj(attend(RoPE(q_norm(q_proj(a))), RoPE(k_norm(k_proj(a))), v_proj(a))),  a = attention_layernorm(h)
 *   h ← h + MLP(feedforward_layernorm(h))
 * The one definition of the layer: training (`ApertusModel.hidden`) and KV-cache inference (`step`)
 * both run it and differ only in `attend`.
 */
export function decoderLayer(model: DecoderWeights, l: number, h: Tensor, positions: Tensor, attend: Attend): Tensor {
  const c = model.config, L = model.layers[l]!, eps = c.rms_norm_eps;
  const [B, T] = h.shape as [number, number];
  const proj = (name: ProjName, x: Tensor) => model.projection(x, L[name]!, l, name);
  const a = rmsnorm(h, L.attention_layernorm, eps);
  const q = reshape(proj('q_proj', a), [B, T, c.num_attention_heads, c.head_dim]);
  const k = reshape(proj('k_proj', a), [B, T, c.num_key_value_heads, c.head_dim]);
  const v = reshape(proj('v_proj', a), [B, T, c.num_key_value_heads, c.head_dim]);
  const o = attend(l,
    rope(rmsnorm(q, L.q_norm, eps), positions, model.invFreq),
    rope(rmsnorm(k, L.k_norm, eps), positions, model.invFreq), v);
  h = add(h, proj('o_proj', reshape(o, [B, T, c.num_attention_heads * c.head_dim])));
  const m = rmsnorm(h, L.feedforward_layernorm, eps);
  // xIELU MLP (Apertus): down(xIELU(up(m))). SwiGLU MLP (Llama, the ablation baseline): down(SiLU(gate(m)) ⊙ up(m)).
  const inner = c.hidden_act === 'swiglu'
    ? mul(silu(proj('gate_proj', m)), proj('up_proj', m))
    : xielu(proj('up_proj', m), L.act!);
  return add(h, proj('down_proj', inner));
}

/** The default projection: a plain bias-free linear layer. */
export const plainProjection: Projection = (x, w) => linear(x, w);
