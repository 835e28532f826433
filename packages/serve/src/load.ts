// Loading a checkpoint directory for serving: weights, generation_config.json and the tokenizer.
//
// The weights are read with async file I/O, one tensor at a time, so a server that is already
// listening keeps answering (`GET /health` → 503) while an 8B checkpoint loads. The checks are those
// of `loadCheckpoint` from @apertus/model (which reads synchronously): every expected tensor present
// with the config's shape, nothing unexpected; matrices stay bf16 as stored, vectors become f32.

import fs from 'node:fs';
import path from 'node:path';
import {
  ApertusModel,
  CheckpointError,
  ConfigError,
  parameterShapes,
  parseConfig,
  type GenerationConfig,
} from '@apertus/model';
import { INDEX_FILE_NAME, openCheckpointAsync, SafetensorsFile, type Tensor as StTensor } from '@apertus/safetensors';
import { bf16ArrayToF32, f16ArrayToF32, Tensor } from '@apertus/tensor';
import { loadGguf } from '@apertus/gguf';
import { loadTokenizerFromDirectory, type Tokenizer } from '@apertus/tokenizer';
import { ModelLoadError } from './errors';

/** A model ready to be served: weights, tokenizer, and the name clients use in `model`. */
export interface ServedModel {
  /** The network. */
  model: ApertusModel;
  /** Its tokenizer (chat template tokens included). */
  tokenizer: Tokenizer;
  /** generation_config.json, when the checkpoint has one (eos ids, default temperature/top_p). */
  generationConfig: GenerationConfig | null;
  /** Model id reported by `/v1/models` and expected in requests. */
  name: string;
  /** Unix seconds when it was loaded (`created` in `/v1/models`). */
  created: number;
}

/** Options of {@link loadServedModel}. */
export interface LoadServedModelOptions {
  /** Model id; default the directory's base name. */
  name?: string;
  /** 'auto' keeps bf16 matrices as stored (half the memory); 'f32' converts everything. Default 'auto'. */
  precision?: 'auto' | 'f32';
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new CheckpointError(`cannot read (${(e as Error).message})`, undefined, file);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ConfigError('(json)', `invalid JSON: ${(e as Error).message}`, file);
  }
}

function toTensor(st: StTensor, name: string, precision: 'auto' | 'f32', file: string): Tensor {
  const keepBf16 = precision === 'auto' && st.shape.length === 2;
  switch (st.dtype) {
    case 'BF16':
      return keepBf16 ? new Tensor(st.data, st.shape, 'bf16') : new Tensor(bf16ArrayToF32(st.data), st.shape, 'f32');
    case 'F16':
      return new Tensor(f16ArrayToF32(st.data), st.shape, 'f32');
    case 'F32':
      return new Tensor(st.data, st.shape, 'f32');
    default:
      throw new CheckpointError(`dtype ${st.dtype} is not supported (BF16, F16, F32)`, name, file);
  }
}

/**
 * Load a Hugging Face Apertus checkpoint directory for serving: `config.json`, the safetensors
 * weights (single file or sharded), `generation_config.json` if present, and `tokenizer.json`
 * (+ `tokenizer_config.json`). Works for the released Apertus-8B-Instruct directory and for
 * checkpoints written by `saveCheckpoint`. Throws ModelLoadError (no tokenizer), or the typed
 * errors of @apertus/model, @apertus/safetensors and @apertus/tokenizer naming the file at fault.
 */
export async function loadServedModel(dir: string, options: LoadServedModelOptions = {}): Promise<ServedModel> {
  if (dir.endsWith('.gguf')) return loadServedGguf(dir, options);
  if (!fs.existsSync(path.join(dir, 'tokenizer.json'))) throw new ModelLoadError(dir, 'no tokenizer.json in the checkpoint directory');
  const tokenizer = loadTokenizerFromDirectory(dir);
  const configFile = path.join(dir, 'config.json');
  const config = parseConfig(readJson(configFile), configFile);
  const genFile = path.join(dir, 'generation_config.json');
  const generationConfig = fs.existsSync(genFile) ? (readJson(genFile) as GenerationConfig) : null;
  const reader = await openCheckpointAsync(dir);
  const file = reader instanceof SafetensorsFile ? reader.path : path.join(dir, INDEX_FILE_NAME);
  const precision = options.precision ?? 'auto';
  try {
    const expected = parameterShapes(config);
    const unexpected = reader.keys().filter((k) => !expected.has(k));
    if (unexpected.length > 0) {
      throw new CheckpointError(`unexpected tensors for an Apertus config: ${unexpected.slice(0, 5).join(', ')}${unexpected.length > 5 ? ', …' : ''}`, undefined, file);
    }
    const params = new Map<string, Tensor>();
    for (const [name, shape] of expected) {
      if (!reader.has(name)) throw new CheckpointError('missing tensor', name, file);
      const info = reader.info(name);
      if (info.shape.length !== shape.length || info.shape.some((d, i) => d !== shape[i])) {
        throw new CheckpointError(`shape [${info.shape}] does not match config.json (expected [${shape}])`, name, file);
      }
      const t = toTensor(await reader.readAsync(name), name, precision, file);
      t.name = name;
      params.set(name, t);
    }
    return {
      model: new ApertusModel(config, params),
      tokenizer,
      generationConfig,
      name: options.name ?? path.basename(path.resolve(dir)),
      created: Math.floor(Date.now() / 1000),
    };
  } finally {
    reader.close();
  }
}

/**
 * A GGUF file (llama.cpp's format; see @apertus/gguf): weights, tokenizer and bos/eos ids all come
 * from the file; quantized matrices stay quantized. `precision` does not apply.
 */
function loadServedGguf(file: string, options: LoadServedModelOptions): ServedModel {
  const { model, tokenizer, generationConfig } = loadGguf(file);
  if (!tokenizer) throw new ModelLoadError(file, 'the GGUF file has no tokenizer');
  return { model, tokenizer, generationConfig, name: options.name ?? path.basename(file, '.gguf'), created: Math.floor(Date.now() / 1000) };
}
