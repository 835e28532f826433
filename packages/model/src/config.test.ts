import { describe, expect, test } from 'vitest';
import { parameterCount, parseConfig, presetConfig, PRESETS, toHfConfig } from './config';
import { ConfigError } from './errors';
import { parameterShapes } from './params';
import { ropeInvFreq } from './rope';

// The Hub config.json of Apertus-8B-Instruct-2509 (spec §1.1/§1.2, legacy rope keys).
const HUB_8B = {
  architectures: ['ApertusForCausalLM'], model_type: 'apertus', vocab_size: 131072, hidden_size: 4096, intermediate_size: 21504,
  num_hidden_layers: 32, num_attention_heads: 32, num_key_value_heads: 8, hidden_act: 'xielu', max_position_embeddings: 65536,
  rms_norm_eps: 1e-5, rope_theta: 12000000.0, rope_scaling: { rope_type: 'llama3', type: 'llama3', factor: 8.0, original_max_position_embeddings: 8192, low_freq_factor: 1.0, high_freq_factor: 4.0 },
  bos_token_id: 1, eos_token_id: 68, pad_token_id: 3, tie_word_embeddings: false, qk_norm: true, post_norm: false, mlp_bias: false, attention_bias: false, hidden_dropout: 0.0, dtype: 'bfloat16',
};

describe('config', () => {
  test('reads the Hub 8B config (legacy keys) and the rope_parameters form identically', () => {
    const legacy = parseConfig(HUB_8B);
    const { rope_theta: _t, rope_scaling: _s, ...rest } = HUB_8B;
    const modern = parseConfig({ ...rest, rope_parameters: { rope_type: 'llama3', rope_theta: 12000000.0, factor: 8.0, original_max_position_embeddings: 8192, low_freq_factor: 1.0, high_freq_factor: 4.0 } });
    expect(modern).toEqual(legacy);
    expect(legacy.head_dim).toBe(128);
    expect(legacy.eos_token_id).toBe(68);
    expect({ ...legacy, eos_token_id: 2 }).toEqual(presetConfig('apertus-8b', { initializer_range: 0.02 }));
    expect(parseConfig(toHfConfig(legacy))).toEqual(legacy);
  });
  test('parameter counts and tensor counts (spec §1.2, §2.1)', () => {
    expect(parameterCount(PRESETS['apertus-8b'])).toBe(8_053_338_240);
    expect(parameterCount(PRESETS['apertus-70b'])).toBe(70_599_864_640);
    expect(parameterShapes(PRESETS['apertus-8b']).size).toBe(451);
    const shapes = parameterShapes(PRESETS['apertus-8b']);
    expect(shapes.get('model.layers.0.self_attn.k_proj.weight')).toEqual([1024, 4096]);
    expect(shapes.get('model.layers.31.mlp.down_proj.weight')).toEqual([4096, 21504]);
    expect(shapes.get('model.layers.0.mlp.act_fn.beta')).toEqual([]);
    let total = 0;
    for (const s of shapes.values()) total += s.reduce((a, b) => a * b, 1);
    expect(total).toBe(8_053_338_240);
    expect(parameterCount(PRESETS.tiny)).toBeGreaterThan(1e6);
    expect(parameterCount(PRESETS.tiny)).toBeLessThan(10e6);
    expect(parameterCount(PRESETS.small)).toBeGreaterThan(80e6);
    expect(parameterCount(PRESETS.small)).toBeLessThan(130e6);
  });
  test('bad configs name the field', () => {
    expect(() => parseConfig({ ...HUB_8B, num_key_value_heads: 5 })).toThrow(/num_key_value_heads/);
    expect(() => parseConfig({ ...HUB_8B, hidden_act: 'silu' })).toThrow(ConfigError);
    expect(() => parseConfig({ ...HUB_8B, hidden_act: 'gelu' }, 'c.json')).toThrow(/c.json: hidden_act: expected 'xielu'/);
    expect(parseConfig({ ...HUB_8B, hidden_act: 'swiglu' }).hidden_act).toBe('swiglu');
    expect(() => presetConfig('tiny', { hidden_act: 'relu' as 'xielu' })).toThrow(/hidden_act/);
    expect(() => parseConfig({ ...HUB_8B, rope_scaling: { rope_type: 'yarn', factor: 4 } })).toThrow(/rope_scaling.rope_type.*yarn/);
    expect(() => parseConfig({ ...HUB_8B, hidden_size: '4096' }, 'config.json')).toThrow(/config.json: hidden_size: expected a number/);
    expect(() => parseConfig({ ...HUB_8B, model_type: 'llama' })).toThrow(/model_type/);
  });
});

describe('llama3 RoPE inverse frequencies (spec §4.1, 8B)', () => {
  const inv = ropeInvFreq(PRESETS['apertus-8b']);
  const expected: Record<number, number> = {
    0: 1, 1: 7.751536e-1, 10: 7.832095e-2, 22: 3.685797e-3, 23: 2.627921e-3, 24: 1.496028e-3, 25: 8.345757e-4,
    26: 4.515984e-4, 27: 2.326939e-4, 28: 1.098537e-4, 29: 7.747401e-5, 40: 4.703506e-6, 63: 1.34382e-8,
  };
  test.each(Object.entries(expected))('inv_freq[%s]', (i, v) => {
    expect(Math.abs(inv[Number(i)]! - v) / v).toBeLessThan(2e-6);
  });
  test('rotation spot values', () => {
    expect(Math.cos(1 * inv[0]!)).toBeCloseTo(0.540302306, 8);
    expect(Math.sin(1 * inv[32]!)).toBeCloseTo(3.6084e-5, 8);
    expect(Math.cos(100 * inv[0]!)).toBeCloseTo(0.862318872, 8);
    expect(Math.sin(100 * inv[0]!)).toBeCloseTo(-0.506365641, 8);
  });
});
