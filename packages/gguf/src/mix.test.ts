// The per-tensor types of the mixes against llama-quantize itself (llama_model_quantize of the
// llama library node-llama-cpp ships): F32 files of Apertus models we write — 16 layers so that
// use_more_bits picks first, last and every third layer; a tied one (no output.weight); one whose
// rows are not whole k-quant super-blocks (fallbacks) — quantized by llama.cpp for each mix, and
// the types it chose compared with mixTypes.
import path from 'node:path';
import { ApertusModel, presetConfig, type ApertusConfig } from '@apertus/model';
import { gguf as hfGguf } from '@huggingface/gguf';
import { afterAll, describe, expect, it } from 'vitest';
import { writeModelGguf } from './convert';
import { fixtureTokenizer, tempDir } from './fixture.test-helper';
import { ggmlReference } from './ggml-reference.test-helper';
import { MIX_FILE_TYPE, mixTypes, useMoreBits, type MixType, type QuantMix } from './mix';
import { openGgufFile } from './open';

const tmp = tempDir();
afterAll(() => tmp.remove());

const NAMES: Record<number, MixType> = { 0: 'F32', 1: 'F16', 6: 'Q5_0', 7: 'Q5_1', 8: 'Q8_0', 12: 'Q4_K', 13: 'Q5_K', 14: 'Q6_K', 30: 'BF16' };

const small = (o: Partial<ApertusConfig>) => presetConfig('tiny', {
  vocab_size: 1536, hidden_size: 256, intermediate_size: 512, num_hidden_layers: 16, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64,
  max_position_embeddings: 512, ...o,
});

const MODELS: Record<string, ApertusConfig> = {
  untied: small({}),
  tied: small({ tie_word_embeddings: true, num_hidden_layers: 9 }),
  // Rows of 320 (hidden) and 200 (ffn_down) values: the k-quants fall back to 32-value blocks, then to F16.
  odd: small({ hidden_size: 320, intermediate_size: 200, num_attention_heads: 5, num_key_value_heads: 1, head_dim: 64, num_hidden_layers: 4 }),
};

async function llamaTypes(file: string): Promise<Map<string, MixType>> {
  const { tensorInfos } = await hfGguf(file, { allowLocalFile: true });
  return new Map(tensorInfos.map((t) => [t.name, NAMES[Number(t.dtype)] ?? (`type ${t.dtype}` as MixType)]));
}

describe('the mixes choose llama-quantize\'s types', () => {
  it('use_more_bits: layers 0–1, 4, 7, 10 and 13–15 of 16', () => {
    expect(Array.from({ length: 16 }, (_, i) => i).filter((i) => useMoreBits(i, 16))).toEqual([0, 1, 4, 7, 10, 13, 14, 15]);
  });

  for (const [name, config] of Object.entries(MODELS)) {
    it(`${name} model (${config.num_hidden_layers} layers, hidden ${config.hidden_size}): Q4_K_M, Q5_K_M, Q6_K, Q8_0`, async () => {
      const t = fixtureTokenizer();
      const f32 = path.join(tmp.dir, `${name}-f32.gguf`);
      writeModelGguf(ApertusModel.init(config, 3), f32, { type: 'F32', tokenizer: { json: t.tokenizerJson, config: t.tokenizerConfig } });
      const file = openGgufFile(f32);
      const tensors = file.tensors.map((x) => ({ name: x.name, shape: x.shape, type: x.type.name as MixType }));
      file.close();
      expect(tensors.some((x) => x.name === 'output.weight')).toBe(!config.tie_word_embeddings);
      for (const mix of ['Q4_K_M', 'Q5_K_M', 'Q6_K', 'Q8_0'] as QuantMix[]) {
        const out = path.join(tmp.dir, `${name}-${mix}.gguf`);
        ggmlReference('model_quantize', f32, out, String(MIX_FILE_TYPE[mix]));
        const want = await llamaTypes(out);
        expect(Object.fromEntries(mixTypes(tensors, mix, config.num_hidden_layers)), mix).toEqual(Object.fromEntries(want));
      }
    }, 120_000);
  }
});
