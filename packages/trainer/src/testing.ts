// @apertus/trainer/testing — fixtures for the tests of the training apps: a very small Apertus
// model directory (2 layers × hidden 32, random weights) with a byte-level BPE tokenizer trained on
// four UDHR declarations, saved in Hugging Face format like apertus-pretrain's output, so a test can
// fine-tune, align or evaluate it in seconds.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readUdhr } from '@apertus/data';
import { ApertusModel, presetConfig, saveCheckpoint } from '@apertus/model';
import { Tokenizer, trainApertusBpe } from '@apertus/tokenizer';

/** A saved tiny model and its tokenizer. */
export interface TinyModel {
  /** The model directory (config.json, model.safetensors, tokenizer files). */
  readonly dir: string;
  /** The model as saved (float32). */
  readonly model: ApertusModel;
  /** Its tokenizer. */
  readonly tokenizer: Tokenizer;
}

/** Train the tokenizer and save a random tiny model under `root/name`. */
export async function makeTinyModel(root: string, name = 'base', seed = 5): Promise<TinyModel> {
  const texts: string[] = [];
  for await (const d of readUdhr({ languages: ['deu_1996', 'roh_rumgr', 'ita', 'eng'] })) texts.push(d.text);
  const trained = trainApertusBpe(texts, { vocabSize: 1400 });
  const tokenizer = Tokenizer.fromJSON(trained.tokenizerJson, trained.tokenizerConfig);
  const config = presetConfig('tiny', {
    vocab_size: tokenizer.vocabSize,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 8,
    max_position_embeddings: 1024,
    rope_scaling: null,
    bos_token_id: 1,
    eos_token_id: 2,
    pad_token_id: 3,
  });
  const model = ApertusModel.init(config, seed);
  const dir = path.join(root, name);
  saveCheckpoint(model, dir, { dtype: 'f32', files: { 'tokenizer.json': JSON.stringify(trained.tokenizerJson), 'tokenizer_config.json': JSON.stringify(trained.tokenizerConfig) } });
  return { dir, model, tokenizer };
}

/** A fresh temporary directory. */
export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
