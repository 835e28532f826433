// The checkpoint layouts beside 2509's: Apertus Mini (tied embeddings) and the Apertus 1.5 text
// tower (nested config, split vocabulary, prefixed tensors, carried image/audio tokenizers).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openCheckpoint, readSafetensors, writeCheckpoint, type TensorEntry } from '@apertus/safetensors';
import { backward, noGrad, Rng, Tensor } from '@apertus/tensor';
import { afterAll, describe, expect, test } from 'vitest';
import { loadCheckpoint, loadCheckpointAsync, saveCheckpoint } from './checkpoint';
import { outputVocabSize, parameterCount, parseConfig, toHfConfig, type ApertusConfig } from './config';
import { AdapterError, CheckpointError, ConfigError } from './errors';
import { generate } from './generate';
import { hfCheckpointFiles, modelFromHfFiles } from './hf-format';
import { LANGUAGE_MODEL_PREFIX } from './layout';
import { LoraAdapter } from './lora';
import { ApertusModel } from './model';
import { parameterShapes } from './params';
import { testModelConfig } from './testing';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-layout-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const base = testModelConfig({ vocab_size: 96, initializer_range: 0.2 });
const tied: ApertusConfig = { ...base, tie_word_embeddings: true, pad_token_id: 10 };
const ids = Tensor.ints([1, 5, 9, 33, 70, 2, 1, 44, 45, 46, 47, 95], [2, 6]);
const logits = (m: ApertusModel, x = ids) => Array.from(noGrad(() => m.forward(x)).data);

/** The Apertus 1.5 config.json shape (as the released 8B's, at test size). */
function config1p5(text: Record<string, unknown>): Record<string, unknown> {
  return {
    architectures: ['Apertus1p5ForConditionalGeneration'], model_type: 'apertus1p5',
    image_token_id: 131079, audio_token_id: 131085, image_token_offset: 131272, audio_token_offset: 262344,
    vision_tokenizer_config: { codebook_size: 131072, type: 'Emu3.5' }, audio_tokenizer_config: { codebook_size: 4096, type: 'wavtokenizer' },
    tie_word_embeddings: false, dtype: 'float32', transformers_version: '5.18.0',
    text_config: text,
  };
}

/** The 1.5 text_config of a 2509 config: the decoder's keys, RoPE as rope_parameters, the larger input vocabulary. */
function textConfigOf(c: ApertusConfig, inputVocab: number): Record<string, unknown> {
  const { rope_theta, rope_scaling, architectures: _a, transformers_version: _t, ...rest } = toHfConfig(c) as Record<string, unknown>;
  const { type: _type, ...rope } = rope_scaling as Record<string, unknown>;
  return { ...rest, model_type: 'apertus1p5_text', vocab_size: inputVocab, output_vocab_size: c.vocab_size, rope_parameters: { ...rope, rope_theta } };
}

const EXTRA = 40; // input-only ids (image/audio structure and codes at test size)

/**
 * A 1.5 checkpoint written by hand from a 2509 model: the config nested, the decoder's tensors
 * under model.language_model., an embedding of EXTRA more rows whose first rows are the model's,
 * and image/audio tokenizer tensors of several dtypes. Returns its directory and the carried bytes.
 */
function write1p5(model: ApertusModel, dir: string): Map<string, Uint8Array> {
  const c = model.config, H = c.hidden_size, rng = new Rng(3);
  const entries: [string, TensorEntry][] = [];
  for (const [name] of parameterShapes(c)) {
    let t = model.params.get(name)!.toFloat32();
    if (name === 'model.embed_tokens.weight') {
      const bigger = new Float32Array((c.vocab_size + EXTRA) * H);
      bigger.set(t);
      for (let i = t.length; i < bigger.length; i++) bigger[i] = rng.normal() * 0.2;
      t = bigger;
    }
    const stored = name === 'lm_head.weight' ? name : LANGUAGE_MODEL_PREFIX + name.slice('model.'.length);
    entries.push([stored, { dtype: 'F32', shape: name === 'model.embed_tokens.weight' ? [c.vocab_size + EXTRA, H] : parameterShapes(c).get(name)!, data: t }]);
  }
  const media: [string, TensorEntry][] = [
    ['model.vision_tokenizer.encoder.conv_in.weight', { dtype: 'F32', shape: [8, 3, 3, 3], data: Float32Array.from({ length: 216 }, () => rng.normal()) }],
    ['model.vision_tokenizer.quantize.embedding.weight', { dtype: 'BF16', shape: [16, 4], data: Uint16Array.from({ length: 64 }, (_, i) => 0x3f80 + i) }],
    ['model.audio_tokenizer.feature_extractor.num_batches_tracked', { dtype: 'I64', shape: [], data: BigInt64Array.of(12345n) }],
  ];
  fs.mkdirSync(dir, { recursive: true });
  writeCheckpoint(dir, [...entries, ...media], { metadata: { format: 'pt' } });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config1p5(textConfigOf(c, c.vocab_size + EXTRA))));
  const f = openCheckpoint(dir);
  const bytes = new Map(media.map(([n]) => [n, f.readBytes(n).slice()]));
  f.close();
  return bytes;
}

describe('Apertus Mini: tied embeddings', () => {
  test('config: tie_word_embeddings is read and written; the head adds no parameters and no tensor', () => {
    const c = parseConfig({ ...toHfConfig(tied) });
    expect(c.tie_word_embeddings).toBe(true);
    expect(parameterShapes(c).has('lm_head.weight')).toBe(false);
    expect(parameterCount(c)).toBe(parameterCount(base) - 96 * 32);
    expect(() => parseConfig({ ...toHfConfig(base), tie_word_embeddings: 'yes' }, 'c.json')).toThrow(/c.json: tie_word_embeddings: expected true or false/);
  });

  test('the head is the embedding: logits are h·Eᵀ; save writes no lm_head.weight; load gives the same logits', () => {
    const m = ApertusModel.init(tied, 3);
    expect(m.lmHead).toBe(m.embedTokens);
    const dir = path.join(tmp, 'mini');
    saveCheckpoint(m, dir, { dtype: 'f32' });
    const f = openCheckpoint(dir);
    expect(f.has('lm_head.weight')).toBe(false);
    f.close();
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'))).toMatchObject({ tie_word_embeddings: true, pad_token_id: 10 });
    const back = loadCheckpoint(dir, { precision: 'f32' }).model;
    expect(back.config).toEqual(tied);
    expect(logits(back)).toEqual(logits(m));
    // The same weights as an untied model whose head is a copy of the embedding: the same logits.
    const params = new Map(m.params);
    params.set('lm_head.weight', m.params.get('model.embed_tokens.weight')!.clone());
    expect(logits(new ApertusModel(base, params))).toEqual(logits(m));
  });

  test('training: the shared matrix gets the gradient of both uses (the embedding\'s plus the head\'s)', () => {
    const m = ApertusModel.init(tied, 4);
    const targets = Tensor.ints([5, 9, 33, 70, 2, -100, 44, 45, 46, 47, 95, 3], [2, 6]);
    backward(m.loss(ids, targets));
    const gTied = m.params.get('model.embed_tokens.weight')!.grad!.data;
    // Untied twin with the head a copy: its two gradients, summed, are the tied gradient.
    const twin = new Map([...m.params].map(([n, t]) => [n, t.clone().requireGrad(t.requiresGrad)] as const));
    twin.set('lm_head.weight', m.params.get('model.embed_tokens.weight')!.clone().requireGrad());
    const u = new ApertusModel(base, twin);
    backward(u.loss(ids, targets));
    const gE = u.params.get('model.embed_tokens.weight')!.grad!.data, gH = u.params.get('lm_head.weight')!.grad!.data;
    let err = 0, scale = 0;
    for (let i = 0; i < gTied.length; i++) { err = Math.max(err, Math.abs(gTied[i]! - (gE[i]! + gH[i]!))); scale = Math.max(scale, Math.abs(gH[i]!)); }
    // One float32 addition apart: the tied gradient accumulates the same two terms.
    expect(err).toBeLessThanOrEqual(scale * 2 ** -23 * 2);
    expect(scale).toBeGreaterThan(0);
    // Rows no input token reads still learn through the head.
    expect(Math.abs(gTied[20 * 32]!)).toBeGreaterThan(0);
  });

  test('a stored lm_head.weight of a tied checkpoint is left out (the head is the embedding, as transformers ties it)', () => {
    const m = ApertusModel.init(tied, 5);
    const dir = path.join(tmp, 'mini-extra');
    const entries: [string, TensorEntry][] = [...parameterShapes(tied)].map(([n, s]) => [n, { dtype: 'F32', shape: s, data: m.params.get(n)!.toFloat32() }]);
    entries.push(['lm_head.weight', { dtype: 'F32', shape: [96, 32], data: new Float32Array(96 * 32) }]);
    writeCheckpoint(dir, entries, { metadata: { format: 'pt' } });
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(toHfConfig(tied)));
    expect(logits(loadCheckpoint(dir, { precision: 'f32' }).model)).toEqual(logits(m));
    // Untied config, no lm_head.weight: a typed error naming the tensor and the key.
    const plain = path.join(tmp, 'untied-headless');
    saveCheckpoint(m, plain, { dtype: 'f32' });
    fs.writeFileSync(path.join(plain, 'config.json'), JSON.stringify({ ...toHfConfig(tied), tie_word_embeddings: false }));
    expect(() => loadCheckpoint(plain)).toThrow(CheckpointError);
    expect(() => loadCheckpoint(plain)).toThrow(/model.safetensors: lm_head.weight: missing tensor \(config.json says tie_word_embeddings: false/);
  });

  test('LoRA: adapters train the projections; token rows of the head are the embedding\'s rows', () => {
    const m = ApertusModel.init(tied, 6);
    expect(() => LoraAdapter.init(m, { r: 2, lora_alpha: 4, lora_dropout: 0, target_modules: ['q_proj'], use_rslora: false, trainable_token_indices: { lm_head: [5] } }))
      .toThrow(/trainable_token_indices.lm_head: the model's LM head is its embedding/);
    const a = LoraAdapter.init(m, { r: 2, lora_alpha: 4, lora_dropout: 0, target_modules: ['q_proj', 'down_proj'], use_rslora: false, trainable_token_indices: { embed_tokens: [5, 40] } });
    a.attach(m);
    // A trained row changes the input embedding and the output logit of that token alike.
    a.tokens.get('model.embed_tokens')!.values.data.fill(0.5);
    const w = m.lmHead as Tensor;
    expect(Array.from(w.toFloat32().subarray(40 * 32, 41 * 32))).toEqual(new Array(32).fill(0.5));
    const dir = path.join(tmp, 'mini-lora');
    saveCheckpoint(m, dir, { dtype: 'f32' });
    const merged = loadCheckpoint(dir, { precision: 'f32' }).model;
    expect(merged.params.has('lm_head.weight')).toBe(false);
    expect(Array.from(merged.params.get('model.embed_tokens.weight')!.toFloat32().subarray(40 * 32, 41 * 32))).toEqual(new Array(32).fill(0.5));
    const l = logits(merged), r = logits(m);
    expect(Math.max(...l.map((v, i) => Math.abs(v - r[i]!)))).toBeLessThan(1e-5);
  });
});

describe('Apertus 1.5: the text tower', () => {
  const m2509 = ApertusModel.init(base, 7);
  const dir = path.join(tmp, '1p5');
  const carried = write1p5(m2509, dir);

  test('config: the decoder under text_config, RoPE from rope_parameters, the split vocabulary; keys named as text_config.<key>', () => {
    const c = parseConfig(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')));
    expect(c).toEqual({ ...base, vocab_size: 96 + EXTRA, output_vocab_size: 96 });
    expect(outputVocabSize(c)).toBe(96);
    const released = parseConfig(config1p5({
      model_type: 'apertus1p5_text', hidden_size: 4096, intermediate_size: 21504, num_hidden_layers: 32, num_attention_heads: 32, num_key_value_heads: 8,
      max_position_embeddings: 262144, qk_norm: true, hidden_act: 'xielu', vocab_size: 266752, output_vocab_size: 131072, rms_norm_eps: 1e-5,
      rope_parameters: { rope_type: 'llama3', rope_theta: 4000000, factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 },
    }));
    expect(released).toMatchObject({ vocab_size: 266752, output_vocab_size: 131072, head_dim: 128, rope_theta: 4e6, max_position_embeddings: 262144, eos_token_id: 2, tie_word_embeddings: false });
    expect(released.rope_scaling).toEqual({ rope_type: 'llama3', factor: 32, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 });
    // eos at the top level (some releases) is the decoder's when text_config has none.
    const { eos_token_id: _eos, ...noEos } = textConfigOf(base, 136);
    expect(parseConfig({ ...config1p5(noEos), eos_token_id: [2, 68, 72] }).eos_token_id).toEqual([2, 68, 72]);
    expect(() => parseConfig(config1p5({ ...textConfigOf(base, 136), output_vocab_size: 200 }), 'x/config.json')).toThrow(/x\/config.json: text_config.output_vocab_size: must be an integer in \[1, vocab_size 136\]/);
    expect(() => parseConfig(config1p5({ ...textConfigOf(base, 136), hidden_act: 'gelu' }))).toThrow(/text_config.hidden_act/);
    expect(() => parseConfig({ ...config1p5(textConfigOf(base, 136)), text_config: undefined }, 'c.json')).toThrow(ConfigError);
    expect(() => parseConfig({ ...config1p5(textConfigOf(base, 136)), text_config: undefined }, 'c.json')).toThrow(/c.json: text_config: an Apertus 1.5 config.json holds the decoder/);
  });

  test('loads the text tower: logits of text ids equal the 2509 model it was built from; logits have output_vocab_size entries', () => {
    const m = loadCheckpoint(dir, { precision: 'f32' }).model;
    expect(m.layout.architecture).toBe('Apertus1p5ForConditionalGeneration');
    expect(m.embedTokens.shape).toEqual([96 + EXTRA, 32]);
    expect(m.lmHead.shape).toEqual([96, 32]);
    expect(logits(m)).toEqual(logits(m2509));
    // Input-only ids are read (an image/audio code), never written.
    const x = Tensor.ints([1, 96 + 3, 96 + 39, 5], [1, 4]);
    expect(noGrad(() => m.forward(x)).shape).toEqual([1, 4, 96]);
    const g = generate(m, [1, 96 + 3, 96 + 39, 5], { maxTokens: 8, temperature: 0 });
    expect(g.tokens.every((t) => t < 96)).toBe(true);
    // Media tensors are not loaded into the model; they are read on demand, as stored.
    expect([...m.params.keys()].some((k) => k.includes('tokenizer'))).toBe(false);
    expect(m.layout.carried!.names).toEqual([...carried.keys()].sort());
    expect(m.layout.carried!.read('model.audio_tokenizer.feature_extractor.num_batches_tracked').data).toEqual(BigInt64Array.of(12345n));
  });

  test('saved back in the 1.5 layout: nested config, prefixed names, media tensors byte for byte; the async loader agrees', async () => {
    const m = loadCheckpoint(dir, { precision: 'f32' }).model;
    const out = path.join(tmp, '1p5-saved');
    saveCheckpoint(m, out, { dtype: 'f32' });
    const cfg = JSON.parse(fs.readFileSync(path.join(out, 'config.json'), 'utf8'));
    const orig = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    expect({ ...cfg, text_config: undefined }).toEqual({ ...orig, text_config: undefined });
    saveCheckpoint(m, path.join(tmp, '1p5-bf16'));
    expect(JSON.parse(fs.readFileSync(path.join(tmp, '1p5-bf16', 'config.json'), 'utf8')).dtype).toBe('bfloat16');
    expect(cfg.text_config).toMatchObject({ model_type: 'apertus1p5_text', vocab_size: 136, output_vocab_size: 96, rope_parameters: orig.text_config.rope_parameters });
    expect(cfg.text_config.rope_theta).toBeUndefined();
    const f = openCheckpoint(out);
    expect(f.keys().filter((k) => k.startsWith('model.layers'))).toEqual([]);
    expect(f.has('model.language_model.layers.1.mlp.act_fn.alpha_p') && f.has('lm_head.weight')).toBe(true);
    for (const [n, bytes] of carried) {
      expect(f.info(n).dtype).toBe(openCheckpoint(dir).info(n).dtype);
      expect(Buffer.from(f.readBytes(n)).equals(Buffer.from(bytes))).toBe(true);
    }
    f.close();
    const again = await loadCheckpointAsync(out, { precision: 'f32' });
    expect(again.model.layout.architecture).toBe('Apertus1p5ForConditionalGeneration');
    expect(logits(again.model)).toEqual(logits(m));
    // In memory (the browser's path) the same files come out.
    const files = hfCheckpointFiles(modelFromHfFiles(orig, await readSafetensors(new Uint8Array(fs.readFileSync(path.join(dir, 'model.safetensors'))))));
    const mem = await readSafetensors(files.get('model.safetensors') as Uint8Array);
    for (const [n, bytes] of carried) expect(Buffer.from(mem.readBytes(n)).equals(Buffer.from(bytes))).toBe(true);
  });

  test('after a save the carried tensors are read from the new checkpoint: the files it was loaded from may go', () => {
    const copy = path.join(tmp, '1p5-copy');
    fs.cpSync(dir, copy, { recursive: true });
    const m = loadCheckpoint(copy).model;
    saveCheckpoint(m, path.join(tmp, '1p5-step1'));
    fs.rmSync(copy, { recursive: true });
    saveCheckpoint(m, path.join(tmp, '1p5-step2'));
    const f = openCheckpoint(path.join(tmp, '1p5-step2'));
    for (const [n, bytes] of carried) expect(Buffer.from(f.readBytes(n)).equals(Buffer.from(bytes))).toBe(true);
    f.close();
  });

  test('fine-tuning with LoRA: the adapter is saved with the 1.5 module names PEFT gives it, and merged back on load', () => {
    const m = loadCheckpoint(dir, { precision: 'f32' }).model;
    const a = LoraAdapter.init(m, { r: 2, lora_alpha: 4, lora_dropout: 0, target_modules: ['q_proj', 'up_proj'], use_rslora: false, trainable_token_indices: { embed_tokens: [100, 130], lm_head: [7] } });
    a.attach(m);
    for (const [, t] of a.parameters()) t.data.fill(0.01);
    const out = path.join(tmp, '1p5-lora');
    saveCheckpoint(m, out, { dtype: 'f32' });
    const ad = openCheckpoint(path.join(out, 'adapter_model.safetensors'));
    expect(ad.keys()).toContain('base_model.model.model.language_model.layers.0.self_attn.q_proj.lora_A.weight');
    expect(ad.keys()).toContain('base_model.model.lm_head.token_adapter.trainable_tokens_delta');
    ad.close();
    const merged = loadCheckpoint(out, { precision: 'f32' }).model;
    const l = logits(merged), r = logits(m);
    expect(Math.max(...l.map((v, i) => Math.abs(v - r[i]!)))).toBeLessThan(1e-5);
    expect(() => LoraAdapter.init(m, { r: 2, lora_alpha: 4, lora_dropout: 0, target_modules: ['q_proj'], use_rslora: false, trainable_token_indices: { lm_head: [100] } }))
      .toThrow(AdapterError);
  });

  test('vocabulary sizes that disagree with the tensors: one-line typed errors naming the file, the tensor and the key', () => {
    const bad = path.join(tmp, '1p5-bad');
    fs.cpSync(dir, bad, { recursive: true });
    const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    const put = (text: Record<string, unknown>) => fs.writeFileSync(path.join(bad, 'config.json'), JSON.stringify({ ...cfg, text_config: { ...cfg.text_config, ...text } }));
    put({ vocab_size: 131 });
    expect(() => loadCheckpoint(bad)).toThrow(CheckpointError);
    expect(() => loadCheckpoint(bad)).toThrow(`${path.join(bad, 'model.safetensors')}: model.language_model.embed_tokens.weight: has 136 rows, config.json's text_config.vocab_size says 131`);
    put({ output_vocab_size: 95 });
    expect(() => loadCheckpoint(bad)).toThrow(/lm_head.weight: has 96 rows, config.json's text_config.output_vocab_size says 95/);
    put({ output_vocab_size: undefined });
    expect(() => loadCheckpoint(bad)).toThrow(/lm_head.weight: has 96 rows, config.json's text_config.vocab_size \(there is no output_vocab_size\) says 136/);
    const err = (() => { try { loadCheckpoint(bad); } catch (e) { return e as Error; } return null; })();
    expect(err!.message.split('\n')).toHaveLength(1);
  });
});
