// A model whose matrices are stored weights (`weightTensor`, as a GGUF file loads them) runs every
// projection and the embedding through the registry's packed kernels and computes the dense
// model's logits. The stored f32 products sum in another order than the GEMM (each within
// γ_K·Σ|x·w|, K ≤ 48: ≈ 3·10⁻⁶ of Σ|x·w|): the logits agree to 10⁻⁵ of the largest, the bound
// load.test.ts in @apertus/gguf holds an F32 GGUF file to.
import { backward, isStoredWeight, noGrad, Tensor, weightTensor, WeightStore } from '@apertus/tensor';
import { describe, expect, test } from 'vitest';
import { presetConfig } from './config';
import { AdapterError, ModelError } from './errors';
import { step } from './infer';
import { KVCache } from './kv-cache';
import { LoraAdapter } from './lora';
import { mergeAdapter } from './merge-adapter';
import { ApertusModel } from './model';
import { parameterShapes } from './params';

const config = presetConfig('tiny', { vocab_size: 40, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, max_position_embeddings: 32, initializer_range: 0.3 });
const dense = ApertusModel.init(config, 11);

/** The same model with every matrix a stored f32 weight in one store. */
function storedCopy(): ApertusModel {
  const params = new Map(dense.params), store = new WeightStore();
  for (const [name, shape] of parameterShapes(config)) {
    if (shape.length !== 2) continue;
    const values = dense.params.get(name)!.toFloat32();
    params.set(name, weightTensor('f32', shape as [number, number], new Uint8Array(values.buffer), store));
  }
  return new ApertusModel(config, params);
}

/** max |a − b| over max |b|. */
const relErr = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let m = 0, s = 0;
  for (let i = 0; i < a.length; i++) { m = Math.max(m, Math.abs(a[i]! - b[i]!)); s = Math.max(s, Math.abs(b[i]!)); }
  return m / s;
};

describe('stored weights in the model', () => {
  test('cached inference with stored matrices matches the tensor model', () => {
    const model = storedCopy();
    expect(isStoredWeight(model.lmHead) && isStoredWeight(model.embedTokens) && isStoredWeight(model.layers[1]!.up_proj)).toBe(true);
    expect(isStoredWeight(dense.lmHead)).toBe(false);
    const prompt = [1, 5, 9, 13, 2, 7];
    const a = new KVCache(config, 16), b = new KVCache(config, 16);
    expect(relErr(step(model, [{ cache: b, tokens: prompt }]), step(dense, [{ cache: a, tokens: prompt }]))).toBeLessThan(1e-5);
    expect(relErr(step(model, [{ cache: b, tokens: [3] }]), step(dense, [{ cache: a, tokens: [3] }]))).toBeLessThan(1e-5);
  });

  test('the full forward accepts stored matrices; the fused loss refuses a stored head', () => {
    const model = storedCopy();
    const ids = Tensor.ints([1, 4, 8, 2], [1, 4]);
    const ref = noGrad(() => dense.forward(ids)).data, got = noGrad(() => model.forward(ids)).data;
    expect(relErr(got, ref)).toBeLessThan(1e-5);
    expect(() => model.loss(ids, Tensor.ints([4, 8, 2, -100], [1, 4]))).toThrow(ModelError);
  });

  test('a quantized matrix of the wrong shape is named', () => {
    const params = new Map(dense.params);
    params.set('model.layers.0.mlp.up_proj.weight', Tensor.zeros([2, 32], 'q8_0'));
    expect(() => new ApertusModel(config, params)).toThrow(/up_proj.*shape \[2,32\]/);
  });

  test('an adapter neither merges into stored weights nor trains through them', () => {
    const model = storedCopy(), lora = { r: 2, lora_alpha: 4, lora_dropout: 0, target_modules: ['q_proj' as const], use_rslora: false, trainable_token_indices: null };
    expect(() => mergeAdapter(model, LoraAdapter.init(model, lora))).toThrow(AdapterError);
    expect(() => mergeAdapter(model, LoraAdapter.init(model, lora))).toThrow(/model\.layers\.0\.self_attn\.q_proj.*stored f32 weight/);
    const adapter = LoraAdapter.init(model, lora);
    adapter.attach(model);
    const ids = Tensor.ints([1, 4, 8, 2], [1, 4]);
    // The head is stored: the loss refuses it before any product runs.
    expect(() => backward(model.loss(ids, Tensor.ints([4, 8, 2, -100], [1, 4])))).toThrow(ModelError);
  });
});
