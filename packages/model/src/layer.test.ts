import { gradcheck, linear, noGrad, scale, Tensor } from '@apertus/tensor';
import { describe, expect, test } from 'vitest';
import { parameterCount, presetConfig, swigluMatched } from './config';
import { step } from './infer';
import { KVCache } from './kv-cache';
import type { ProjName, Projection } from './layer';
import { ApertusModel } from './model';

const config = presetConfig('tiny', { vocab_size: 40, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, max_position_embeddings: 64, initializer_range: 0.3 });
const prompt = [1, 7, 3, 22, 9, 14];

function cachedLogits(model: ApertusModel): Float32Array[] {
  const cache = new KVCache(config, 8);
  return prompt.map((t) => step(model, [{ cache, tokens: [t] }]));
}

function fullLogits(model: ApertusModel): Float32Array {
  return noGrad(() => model.forward(Tensor.ints(prompt, [1, prompt.length]))).data;
}

describe('the decoder layer', () => {
  for (const act of ['xielu', 'swiglu'] as const) {
    test(`${act}: every projection goes through model.projection, in training and in cached inference`, () => {
      const model = ApertusModel.init({ ...config, hidden_act: act, intermediate_size: act === 'swiglu' ? 32 : 48 }, 3);
      const seen = new Set<string>();
      model.projection = (x, w, l, name) => { seen.add(`${l}.${name}`); return linear(x, w); };
      fullLogits(model);
      const names: ProjName[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', ...(act === 'swiglu' ? ['gate_proj' as const] : []), 'up_proj', 'down_proj'];
      const expected = [0, 1].flatMap((l) => names.map((n) => `${l}.${n}`)).sort();
      expect([...seen].sort()).toEqual(expected);
      seen.clear();
      cachedLogits(model);
      expect([...seen].sort()).toEqual(expected);
    });
  }

  test('a projection that rescales one weight equals a model with that weight rescaled, on both paths', () => {
    const base = ApertusModel.init(config, 4);
    const hooked = ApertusModel.init(config, 4);
    const double: Projection = (x, w, l, name) => (l === 1 && name === 'v_proj' ? scale(linear(x, w), 2) : linear(x, w));
    hooked.projection = double;
    const edited = ApertusModel.init(config, 4);
    const v = (edited.layers[1]!.v_proj as Tensor).data;
    for (let i = 0; i < v.length; i++) v[i]! *= 2;
    const want = fullLogits(edited), V = config.vocab_size;
    // Scaling by 2 is exact in float32, so both paths agree with the edited model to rounding of the attention sums.
    expect(Math.max(...fullLogits(hooked).map((x, i) => Math.abs(x - want[i]!)))).toBeLessThan(1e-5);
    cachedLogits(hooked).forEach((l, t) => expect(Math.max(...l.map((x, i) => Math.abs(x - want[t * V + i]!)))).toBeLessThan(1e-5));
    // …and differ from the unhooked model, so the hook had an effect.
    expect(Math.max(...fullLogits(base).map((x, i) => Math.abs(x - want[i]!)))).toBeGreaterThan(1e-3);
  });
});

describe('the SwiGLU MLP', () => {
  test('gradients of the loss w.r.t. gate_proj, up_proj, down_proj (and the rest) match finite differences', () => {
    const c = swigluMatched({ ...config, intermediate_size: 24 });
    const model = ApertusModel.init(c, 9);
    const ids = Tensor.ints([1, 7, 3, 22, 9, 14, 2, 30], [2, 4]), targets = Tensor.ints([7, 3, 22, 9, 14, 2, 30, 5], [2, 4]);
    const names = ['mlp.gate_proj.weight', 'mlp.up_proj.weight', 'mlp.down_proj.weight'].flatMap((n) => [`model.layers.0.${n}`, `model.layers.1.${n}`])
      .concat(['model.layers.1.feedforward_layernorm.weight', 'model.layers.0.self_attn.v_proj.weight']);
    const inputs = names.map((n) => model.params.get(n)!);
    const r = gradcheck(() => model.loss(ids, targets), inputs, { eps: 1e-2, maxElements: 24 });
    expect(r.maxError).toBeLessThan(3e-3);
  });

  test('the matched width: parameters and MLP FLOPs within 0.5 % of the xIELU MLP', () => {
    for (const name of ['tiny', 'small', 'apertus-8b'] as const) {
      const x = presetConfig(name), s = swigluMatched(x);
      const mlpX = 2 * x.hidden_size * x.intermediate_size, mlpS = 3 * s.hidden_size * s.intermediate_size;
      expect(Math.abs(mlpS - mlpX) / mlpX).toBeLessThan(5e-3);
      expect(Math.abs(parameterCount(s) - parameterCount(x)) / parameterCount(x)).toBeLessThan(5e-3);
    }
    expect(swigluMatched(presetConfig('tiny')).intermediate_size).toBe(341);
    expect(swigluMatched(presetConfig('apertus-8b')).intermediate_size).toBe(14336);
  });
});
