// The llama3 RoPE factors (rope_freqs.weight) as llama.cpp's converter computes them, and the
// config recovered from them reproduces the model's inverse frequencies.
import { presetConfig, ropeInvFreq, type ApertusConfig } from '@apertus/model';
import { describe, expect, it } from 'vitest';
import { configFromMetadata, configMetadata, ggufTensorName, ropeFactors } from './apertus';
import type { GgufValue } from './header';

/** llama.cpp's converter (LlamaModel.generate_extra_tensors), written out from its description, in float64. */
function converterFactors(c: ApertusConfig): number[] {
  const s = c.rope_scaling!, out: number[] = [];
  for (let i = 0; i < c.head_dim / 2; i++) {
    const freq = 1 / c.rope_theta ** ((2 * i) / c.head_dim), wavelen = (2 * Math.PI) / freq;
    const low = s.original_max_position_embeddings / s.low_freq_factor, high = s.original_max_position_embeddings / s.high_freq_factor;
    if (wavelen < high) out.push(1);
    else if (wavelen > low) out.push(s.factor);
    else {
      const smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      out.push(1 / ((1 - smooth) / s.factor + smooth));
    }
  }
  return out;
}

const configs: [string, ApertusConfig][] = [
  ['apertus-8b', presetConfig('apertus-8b')],
  ['small', presetConfig('small')],
  ['tiny', presetConfig('tiny')],
  ['head_dim 16 (one interpolated pair)', presetConfig('tiny', { hidden_size: 64, head_dim: 16 })],
];

describe('llama3 RoPE factors', () => {
  for (const [name, c] of configs) {
    it(`${name}: factors match the converter and the fitted config reproduces the frequencies`, () => {
      const f = ropeFactors(c);
      converterFactors(c).forEach((v, i) => expect(f[i]).toBeCloseTo(v, 5));
      const meta = new Map<string, GgufValue>([['general.architecture', 'apertus'], ...configMetadata(c, { alpha_p: [], alpha_n: [], beta: [], eps: [] }).map(([k, e]) => [k, e.value] as [string, GgufValue])]);
      const back = configFromMetadata(meta, f, { bos: 1, eos: 2, pad: 3 });
      const want = ropeInvFreq(c), got = ropeInvFreq(back);
      want.forEach((v, i) => expect(Math.abs(got[i]! - v) / v).toBeLessThan(1e-6));
      expect(back.rope_scaling!.factor).toBe(c.rope_scaling!.factor);
    });
  }
});

describe('tensor names', () => {
  it('maps Hugging Face names to llama.cpp names; xIELU scalars are metadata', () => {
    expect(ggufTensorName('model.embed_tokens.weight')).toBe('token_embd.weight');
    expect(ggufTensorName('model.layers.3.self_attn.o_proj.weight')).toBe('blk.3.attn_output.weight');
    expect(ggufTensorName('model.layers.0.feedforward_layernorm.weight')).toBe('blk.0.ffn_norm.weight');
    expect(ggufTensorName('model.layers.0.mlp.act_fn.alpha_p')).toBeNull();
    expect(() => ggufTensorName('model.layers.0.mlp.gate_proj.weight')).toThrow(/no GGUF name/);
  });
});
