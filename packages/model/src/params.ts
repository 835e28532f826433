import { Rng, Tensor } from '@apertus/tensor';
import { initXielu } from '@apertus/xielu';
import { outputVocabSize, type ApertusConfig } from './config';

/**
 * Checkpoint name and shape of every tensor of an Apertus model (spec §2.1 order; SwiGLU: Llama's
 * gate_proj before up_proj). A tied model has no `lm_head.weight` (its head is the embedding); the
 * head of a split vocabulary has `output_vocab_size` rows.
 */
export function parameterShapes(c: ApertusConfig): Map<string, number[]> {
  const H = c.hidden_size, d = c.head_dim;
  const m = new Map<string, number[]>([['model.embed_tokens.weight', [c.vocab_size, H]]]);
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const p = `model.layers.${i}.`;
    m.set(p + 'attention_layernorm.weight', [H]);
    m.set(p + 'self_attn.q_proj.weight', [c.num_attention_heads * d, H]);
    m.set(p + 'self_attn.k_proj.weight', [c.num_key_value_heads * d, H]);
    m.set(p + 'self_attn.v_proj.weight', [c.num_key_value_heads * d, H]);
    m.set(p + 'self_attn.o_proj.weight', [H, c.num_attention_heads * d]);
    m.set(p + 'self_attn.q_norm.weight', [d]);
    m.set(p + 'self_attn.k_norm.weight', [d]);
    m.set(p + 'feedforward_layernorm.weight', [H]);
    if (c.hidden_act === 'swiglu') m.set(p + 'mlp.gate_proj.weight', [c.intermediate_size, H]);
    m.set(p + 'mlp.up_proj.weight', [c.intermediate_size, H]);
    m.set(p + 'mlp.down_proj.weight', [H, c.intermediate_size]);
    if (c.hidden_act === 'xielu') {
      m.set(p + 'mlp.act_fn.alpha_p', [1]);
      m.set(p + 'mlp.act_fn.alpha_n', [1]);
      m.set(p + 'mlp.act_fn.beta', []);
      m.set(p + 'mlp.act_fn.eps', []);
    }
  }
  m.set('model.norm.weight', [H]);
  if (!c.tie_word_embeddings) m.set('lm_head.weight', [outputVocabSize(c), H]);
  return m;
}

/** Buffers: stored in checkpoints but never trained. */
export function isBuffer(name: string): boolean {
  return name.endsWith('act_fn.beta') || name.endsWith('act_fn.eps');
}

/**
 * Fresh weights for training from scratch, Megatron-style as Apertus pretrained: every matrix
 * N(0, σ²) with σ = initializer_range, the residual-output projections (o_proj, down_proj) with
 * σ/√(2L); RMSNorm weights 1; xIELU scalars at their reference init (αp = αn = 0.8, β = 0.5, ε = −1e-6).
 */
export function initParameters(c: ApertusConfig, seed: number): Map<string, Tensor> {
  const rng = new Rng(seed);
  const sigma = c.initializer_range, scaled = sigma / Math.sqrt(2 * c.num_hidden_layers);
  const params = new Map<string, Tensor>();
  const xielu = initXielu();
  for (const [name, shape] of parameterShapes(c)) {
    let t: Tensor;
    if (name.endsWith('layernorm.weight') || name.endsWith('_norm.weight') || name === 'model.norm.weight') t = Tensor.ones(shape);
    else if (name.includes('act_fn.')) t = xielu[name.slice(name.lastIndexOf('.') + 1) as 'alpha_p' | 'alpha_n' | 'beta' | 'eps']!.clone();
    else t = Tensor.randn(shape, rng, name.endsWith('o_proj.weight') || name.endsWith('down_proj.weight') ? scaled : sigma);
    t.name = name;
    if (!isBuffer(name)) t.requireGrad();
    params.set(name, t);
  }
  return params;
}
