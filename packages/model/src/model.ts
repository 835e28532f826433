import { attention, embedding, isStoredWeight, linear, linearCrossEntropy, rmsnorm, Tensor, tidy } from '@apertus/tensor';
import type { ApertusConfig } from './config';
import { CheckpointError, ModelError } from './errors';
import { decoderLayer, plainProjection, type Attend, type LayerWeights, type Projection } from './layer';
import type { LoraAdapter } from './lora';
import { CAUSAL_LM_LAYOUT, type CheckpointLayout } from './layout';
import { initParameters, isBuffer, parameterShapes } from './params';
import { ropeInvFreq } from './rope';


/** Loss options of `ApertusModel.loss`. */
export interface LossOptions extends ForwardOptions {
  /** Per-token float weights [B·T] (Goldfish keep-mask × EoD loss mask, assistant-token mask…). */
  mask?: Float32Array;
  /** Denominator of the mean (e.g. kept tokens of the whole accumulated batch); default the mask sum. */
  normalizer?: number;
  /** 'mean' (default) or 'sum'. */
  reduction?: 'mean' | 'sum';
}

/** Inputs of a training/scoring forward pass. */
export interface ForwardOptions {
  /** Position ids [B, T] (i32); default 0…T−1 per row. With packing: positions reset after each EoD. */
  positions?: Tensor;
  /** Document ids [B, T] (i32): attention never crosses documents (packing's cross-document mask). */
  docIds?: Tensor;
}

/**
 * ApertusForCausalLM: token embedding, L pre-norm decoder layers (QK-norm, llama3 RoPE, causal
 * GQA attention, xIELU MLP — or SwiGLU for ablations), final RMSNorm and the LM head (untied, or
 * the embedding itself with `tie_word_embeddings`). Weights are named as in 2509 Hugging Face
 * checkpoints (`params`; `layout` says how the files name them); large matrices may stay bf16 for
 * inference, or be stored weights of any dtype (`weightTensor`: GGUF blocks, inference only).
 */
export class ApertusModel {
  /** Architecture. */
  readonly config: ApertusConfig;
  /** Every checkpoint tensor by its Hugging Face name. */
  readonly params: Map<string, Tensor>;
  /** Typed views of the per-layer tensors. */
  readonly layers: LayerWeights[];
  /** RoPE inverse frequencies (float32, llama3-scaled). */
  readonly invFreq: Float32Array;
  /** How every projection x·Wᵀ of every layer is computed (`linear`; adapters such as LoRA wrap it). */
  projection: Projection = plainProjection;
  /** The LoRA adapter attached by `LoraAdapter.attach` (then the base is frozen), or null. */
  adapter: LoraAdapter | null = null;
  /** How a checkpoint holds this model (the 2509 layout unless loaded from another); `saveCheckpoint` writes it back. */
  layout: CheckpointLayout = CAUSAL_LM_LAYOUT;

  /**
   * Wrap a complete set of named tensors; throws CheckpointError naming the first missing or
   * misshapen one.
   */
  constructor(config: ApertusConfig, params: Map<string, Tensor>) {
    this.config = config;
    this.params = params;
    for (const [name, shape] of parameterShapes(config)) {
      const t = params.get(name);
      if (!t) throw new CheckpointError('missing tensor', name);
      if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
        throw new CheckpointError(`shape [${t.shape}] does not match config (expected [${shape}])`, name);
      }
    }
    const get = (n: string) => params.get(n)!;
    this.layers = Array.from({ length: config.num_hidden_layers }, (_, i) => {
      const p = `model.layers.${i}.`;
      return {
        attention_layernorm: get(p + 'attention_layernorm.weight'),
        q_proj: get(p + 'self_attn.q_proj.weight'), k_proj: get(p + 'self_attn.k_proj.weight'),
        v_proj: get(p + 'self_attn.v_proj.weight'), o_proj: get(p + 'self_attn.o_proj.weight'),
        q_norm: get(p + 'self_attn.q_norm.weight'), k_norm: get(p + 'self_attn.k_norm.weight'),
        feedforward_layernorm: get(p + 'feedforward_layernorm.weight'),
        up_proj: get(p + 'mlp.up_proj.weight'), down_proj: get(p + 'mlp.down_proj.weight'),
        ...(config.hidden_act === 'swiglu'
          ? { gate_proj: get(p + 'mlp.gate_proj.weight') }
          : { act: { alpha_p: get(p + 'mlp.act_fn.alpha_p'), alpha_n: get(p + 'mlp.act_fn.alpha_n'), beta: get(p + 'mlp.act_fn.beta'), eps: get(p + 'mlp.act_fn.eps') } }),
      };
    });
    this.invFreq = ropeInvFreq(config);
  }

  /**
   * A randomly initialised model (Apertus recipe init, §initParameters). The weights are made
   * inside a `tidy` scope and kept: storage allocated outside a scope goes to plain arrays past
   * the cpu heap's soft limit (256 MiB), which every GEMM would then copy in again.
   */
  static init(config: ApertusConfig, seed = 28): ApertusModel {
    return new ApertusModel(config, new Map(tidy(() => [...initParameters(config, seed)])));
  }

  /** Trainable parameters: the attached adapter's factors, else every tensor in checkpoint order but the buffers β, ε. */
  parameters(): [string, Tensor][] {
    if (this.adapter) return this.adapter.parameters();
    return [...this.params].filter(([n]) => !isBuffer(n));
  }

  /** The embedding table (with an attached adapter's trained token rows). */
  get embedTokens(): Tensor { return this.table('model.embed_tokens'); }
  /** The final norm weight. */
  get norm(): Tensor { return this.params.get('model.norm.weight')!; }
  /** The LM head [V, H] (with an attached adapter's trained token rows): the embedding table when tied. */
  get lmHead(): Tensor { return this.config.tie_word_embeddings ? this.embedTokens : this.table('lm_head'); }

  private table(module: 'model.embed_tokens' | 'lm_head'): Tensor {
    const w = this.params.get(`${module}.weight`)!;
    return this.adapter ? this.adapter.table(module, w) : w;
  }

  /**
   * Final hidden states [B, T, H] for token ids [B, T], recorded for autograd when parameters
   * require grad. Positions and document ids implement packed-sequence training (§4.4).
   */
  hidden(ids: Tensor, opts: ForwardOptions = {}): Tensor {
    const [B, T] = ids.shape as [number, number];
    const positions = opts.positions ?? Tensor.ints(Array.from({ length: B * T }, (_, i) => i % T), [B, T]);
    const attend: Attend = (_l, q, k, v) => attention(q, k, v, opts.docIds ? { docQ: opts.docIds } : {});
    let h = embedding(ids, this.embedTokens);
    for (let l = 0; l < this.layers.length; l++) h = decoderLayer(this, l, h, positions, attend);
    return rmsnorm(h, this.norm, this.config.rms_norm_eps);
  }

  /**
   * Next-token cross-entropy of `targets` [B, T] (i32, −100 = ignore) with the LM head fused into
   * the loss: the [B, T, V] logits are never materialised and each logit is exponentiated once.
   */
  loss(ids: Tensor, targets: Tensor, opts: LossOptions = {}): Tensor {
    const head = this.lmHead;
    if (isStoredWeight(head)) throw new ModelError(`loss: the LM head is a stored ${head.dtype} weight (inference only); the fused loss needs a float weight`);
    return linearCrossEntropy(this.hidden(ids, opts), head, targets, {
      ...(opts.mask ? { mask: opts.mask } : {}),
      ...(opts.normalizer !== undefined ? { normalizer: opts.normalizer } : {}),
      ...(opts.reduction ? { reduction: opts.reduction } : {}),
    });
  }

  /** Logits [B, T, V] for token ids [B, T]. */
  forward(ids: Tensor, opts: ForwardOptions = {}): Tensor {
    return linear(this.hidden(ids, opts), this.lmHead);
  }
}
