import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deserialize } from '@apertus/safetensors';
import { noGrad, Tensor } from '@apertus/tensor';
import { afterAll, describe, expect, test } from 'vitest';
import { loadCheckpoint, saveCheckpoint } from './checkpoint';
import { presetConfig } from './config';
import { CheckpointError } from './errors';
import { hfCheckpointFiles, modelFromHfFiles } from './hf-format';
import { ApertusModel } from './model';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-hf-files-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const config = presetConfig('tiny', { vocab_size: 64, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, initializer_range: 0.2 });
const ids = Tensor.ints([1, 5, 9, 33, 2, 17, 40, 8], [1, 8]);
const logitsOf = (m: ApertusModel) => Array.from(noGrad(() => m.forward(ids)).data);

describe('checkpoints in memory (what a browser fetches and downloads)', () => {
  test('hfCheckpointFiles gives the bytes saveCheckpoint writes, and modelFromHfFiles loads them as loadCheckpoint does', () => {
    const model = ApertusModel.init(config, 11);
    for (const dtype of ['bf16', 'f32'] as const) {
      const dir = path.join(tmp, dtype);
      saveCheckpoint(model, dir, { dtype, files: { 'tokenizer.json': '{"x":1}' } });
      const files = hfCheckpointFiles(model, { dtype, files: { 'tokenizer.json': '{"x":1}' } });
      expect([...files.keys()].sort()).toEqual(fs.readdirSync(dir).sort());
      for (const [name, contents] of files) {
        const onDisk = fs.readFileSync(path.join(dir, name));
        expect(Buffer.from(typeof contents === 'string' ? Buffer.from(contents) : contents).equals(onDisk), name).toBe(true);
      }
      const precision = dtype === 'f32' ? 'f32' : 'auto';
      const inMemory = modelFromHfFiles(JSON.parse(files.get('config.json') as string), deserialize(files.get('model.safetensors') as Uint8Array), precision);
      expect(logitsOf(inMemory)).toEqual(logitsOf(loadCheckpoint(dir, { precision }).model));
      if (dtype === 'f32') expect(logitsOf(inMemory)).toEqual(logitsOf(model));
    }
  });

  test('a checkpoint whose weights do not fit the config is refused with CheckpointError naming the tensor', () => {
    const files = hfCheckpointFiles(ApertusModel.init(config, 1));
    const other = { ...JSON.parse(files.get('config.json') as string), hidden_size: 64, head_dim: 16 };
    const weights = deserialize(files.get('model.safetensors') as Uint8Array);
    expect(() => modelFromHfFiles(other, weights)).toThrow(CheckpointError);
    expect(() => modelFromHfFiles(other, weights)).toThrow(/model\.embed_tokens\.weight|shape/);
  });
});
