// GGUF both ways for the 2026 layouts: Apertus Mini (tied head: no output.weight; its own special
// token names) and an Apertus 1.5 text tower (token_embd of vocab_size rows, output of
// vocab_size_out rows, the tokenizer with its normalizer rules as tokenizer.huggingface.json).
import fs from 'node:fs';
import path from 'node:path';
import { ApertusModel, KVCache, outputVocabSize, presetConfig, saveCheckpoint, step, type ApertusConfig } from '@apertus/model';
import { buildApertus1p5TokenizerJson, loadTokenizerFromDirectory, type TokenizerJson } from '@apertus/tokenizer';
import { afterAll, describe, expect, it } from 'vitest';
import { convertCheckpoint } from './convert';
import { GgufMetadataError } from './errors';
import { fixtureTokenizer, rewrite, tempDir } from './fixture.test-helper';
import { loadGguf, openGgufFile } from './open';

const tmp = tempDir();
afterAll(() => tmp.remove());

const TEXTS = ['Alle Menschen sind frei und gleich an Würde und Rechten geboren.', '<s><|user_start|>Hi [INST] <pad><|user_end|>', 'for (let i = 0; i < n; i++) total += x;'];
const prompt = [1, 1100, 1200, 1300, 1050, 1256];

function logits(m: ApertusModel): Float32Array {
  return step(m, [{ cache: new KVCache(m.config, 16), tokens: prompt }]);
}

function relErr(a: Float32Array, b: Float32Array): number {
  let num = 0, den = 0;
  for (let i = 0; i < b.length; i++) { num = Math.max(num, Math.abs(a[i]! - b[i]!)); den = Math.max(den, Math.abs(b[i]!)); }
  return num / den;
}

const small = (o: Partial<ApertusConfig>) => presetConfig('tiny', {
  vocab_size: 1536, hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64,
  max_position_embeddings: 512, initializer_range: 0.08, ...o,
});

describe('Apertus Mini as GGUF', () => {
  // Mini's quirk: id 3 is "[INST]", "<pad>" is id 10; the config says pad 3, special_tokens_map.json says <pad>.
  const t = fixtureTokenizer();
  const json = structuredClone(t.tokenizerJson) as TokenizerJson;
  const vocab = json.model.vocab as Record<string, number>;
  delete vocab['<pad>'];
  delete vocab['<SPECIAL_10>'];
  vocab['[INST]'] = 3;
  vocab['<pad>'] = 10;
  for (const a of json.added_tokens!) if (a.id === 3) a.content = '[INST]'; else if (a.id === 10) a.content = '<pad>';
  const dir = path.join(tmp.dir, 'mini');
  const model = ApertusModel.init(small({ tie_word_embeddings: true }), 8);
  saveCheckpoint(model, dir, { dtype: 'f32', files: {
    'tokenizer.json': JSON.stringify(json),
    'tokenizer_config.json': JSON.stringify({ ...t.tokenizerConfig, pad_token: '[INST]' }),
    'special_tokens_map.json': JSON.stringify({ pad_token: '<pad>' }),
  } });

  it('is written without output.weight and loads back tied, with the source\'s logits', () => {
    const file = path.join(tmp.dir, 'mini.gguf');
    const types = convertCheckpoint(dir, file, 'Q8_0');
    expect(types.has('output.weight')).toBe(false);
    expect(types.get('token_embd.weight')).toBe('Q8_0');
    const f32 = path.join(tmp.dir, 'mini-f32.gguf');
    convertCheckpoint(dir, f32, 'F32');
    const loaded = loadGguf(f32);
    expect(loaded.model.config.tie_word_embeddings).toBe(true);
    expect(loaded.model.lmHead).toBe(loaded.model.embedTokens);
    expect(relErr(logits(loaded.model), logits(model))).toBeLessThan(1e-5);
    // Q4_K_M: the tied embedding is the output and takes its Q6_K, as llama-quantize gives it.
    expect(convertCheckpoint(dir, path.join(tmp.dir, 'mini-q4km.gguf'), 'Q4_K_M').get('token_embd.weight')).toBe('Q6_K');
  });

  it('keeps its special tokens: the file\'s names and ids, pad 10 from special_tokens_map.json', () => {
    const file = path.join(tmp.dir, 'mini-f32.gguf');
    const f = openGgufFile(file);
    expect(f.metadata.get('tokenizer.ggml.padding_token_id')).toBe(10);
    expect((f.metadata.get('tokenizer.ggml.tokens') as string[])[3]).toBe('[INST]');
    f.close();
    const ours = loadGguf(file).tokenizer!, original = loadTokenizerFromDirectory(dir);
    expect(ours.padTokenId).toBe(10);
    expect([ours.bosTokenId, ours.eosTokenId]).toEqual([original.bosTokenId, original.eosTokenId]);
    for (const text of TEXTS) expect(ours.encodeIds(text)).toEqual(original.encodeIds(text));
  });
});

describe('an Apertus 1.5 text tower as GGUF', () => {
  const base = fixtureTokenizer();
  const json = buildApertus1p5TokenizerJson(base.tokenizerJson);
  const tokens = base.vocabSize + 135368;
  // Input ids: the whole tokenizer and padding rows (as 266,440 of 266,752); output: the text vocabulary.
  const config = small({ vocab_size: tokens + 24, output_vocab_size: base.vocabSize, hidden_size: 64, head_dim: 16, intermediate_size: 128, num_hidden_layers: 1 });
  const dir = path.join(tmp.dir, '1p5');
  const model = ApertusModel.init(config, 9);
  model.layout = { architecture: 'Apertus1p5ForConditionalGeneration', configJson: { architectures: ['Apertus1p5ForConditionalGeneration'], model_type: 'apertus1p5', tie_word_embeddings: false }, carried: null };
  saveCheckpoint(model, dir, { dtype: 'f32', files: { 'tokenizer.json': JSON.stringify(json), 'tokenizer_config.json': JSON.stringify({ ...base.tokenizerConfig, eos_token: '</s>' }) } });
  const file = path.join(tmp.dir, '1p5.gguf');

  it('holds vocab_size and vocab_size_out, and loads back with the split vocabulary and the source\'s logits', () => {
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')).text_config.output_vocab_size).toBe(base.vocabSize);
    convertCheckpoint(dir, file, 'F32');
    const f = openGgufFile(file);
    expect([f.metadata.get('apertus.vocab_size'), f.metadata.get('apertus.vocab_size_out')]).toEqual([tokens + 24, base.vocabSize]);
    expect([f.info('token_embd.weight').shape[0], f.info('output.weight').shape[0]]).toEqual([tokens + 24, base.vocabSize]);
    f.close();
    const loaded = loadGguf(file);
    expect(outputVocabSize(loaded.model.config)).toBe(base.vocabSize);
    expect(loaded.model.config.vocab_size).toBe(tokens + 24);
    const got = logits(loaded.model);
    expect(got.length).toBe(base.vocabSize);
    expect(relErr(got, logits(model))).toBeLessThan(1e-5);
  });

  it('keeps the 1.5 tokenizer whole (normalizer rules, 135k added tokens) in tokenizer.huggingface.json', () => {
    const ours = loadGguf(file).tokenizer!, original = loadTokenizerFromDirectory(dir);
    for (const text of [...TEXTS, '<think>plan</think>Answer <image><|visual token 12|>', '<|tool_output_start|>{}<|tool_output_end|>']) {
      expect(ours.encodeIds(text)).toEqual(original.encodeIds(text));
    }
    expect(ours.encodeIds('<think>', { addSpecialTokens: false })).toEqual([32]);
  });

  it('a vocab_size_out that disagrees with output.weight is a typed error naming the tensor', () => {
    const bad = rewrite(file, path.join(tmp.dir, '1p5-bad.gguf'), { 'apertus.vocab_size_out': { type: 'u32', value: base.vocabSize - 1 } });
    expect(() => loadGguf(bad)).toThrow(GgufMetadataError);
    expect(() => loadGguf(bad)).toThrow(/1p5-bad.gguf: tensor "output.weight": shape \[\d+,64\] disagrees with the metadata/);
  });
});
