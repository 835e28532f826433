import fs from 'node:fs';
import path from 'node:path';
import { writeDirAtomic } from '@apertus/atomic-file';
import { INDEX_FILE_NAME, openCheckpoint, openCheckpointAsync, SafetensorsFile, writeCheckpoint, type TensorReader } from '@apertus/safetensors';
import { checkModelType, parseConfig, type ApertusConfig } from './config';
import { parseGenerationConfig, type GenerationConfig } from './generation-config';
import { checkpointReader, configJson, generationConfigJson, modelFromWeights, modelFromWeightsAsync, weightEntries, type LoadProgress, type WeightPrecision } from './hf-format';
import { CheckpointError, ConfigError } from './errors';
import { carriedTensors, layoutOfConfig, type CheckpointLayout } from './layout';
import { mergeAdapter } from './merge-adapter';
import type { ApertusModel } from './model';
import { ADAPTER_CONFIG_FILE, loadAdapter, writeAdapterFiles } from './peft';

/** A loaded checkpoint directory. */
export interface LoadedCheckpoint {
  model: ApertusModel;
  /** generation_config.json, when present. */
  generationConfig: GenerationConfig | null;
  /** The directory it came from. */
  dir: string;
}

function readJson(file: string): unknown {
  let text: string;
  try { text = fs.readFileSync(file, 'utf8'); } catch (e) { throw new CheckpointError(`cannot read (${(e as Error).message})`, undefined, file); }
  try { return JSON.parse(text); } catch (e) { throw new ConfigError('(json)', `invalid JSON: ${(e as Error).message}`, file); }
}

/** What the JSON files of a checkpoint directory say, without its weights. */
export interface CheckpointConfig {
  /** The decoder's configuration (a 1.5 config.json's `text_config`). */
  config: ApertusConfig;
  /** generation_config.json (validated against the config), when present. */
  generationConfig: GenerationConfig | null;
  /** The layout config.json names (its carried tensors are found when the weights are opened). */
  layout: CheckpointLayout;
  /** config.json as read. */
  json: unknown;
}

/** `config.json` and (validated against it) `generation_config.json` of a checkpoint directory. */
export function readCheckpointConfig(dir: string): CheckpointConfig {
  const file = path.join(dir, 'config.json');
  const json = readJson(file);
  checkModelType(json, file);
  const config = parseConfig(json, file);
  const genFile = path.join(dir, 'generation_config.json');
  return { config, generationConfig: fs.existsSync(genFile) ? parseGenerationConfig(readJson(genFile), config, genFile) : null, layout: layoutOfConfig(json, file), json };
}

function readerFile(reader: TensorReader, dir: string): string {
  return reader instanceof SafetensorsFile ? reader.path : path.join(dir, INDEX_FILE_NAME);
}

/**
 * Load a Hugging Face Apertus checkpoint directory: `config.json`, `model.safetensors` or the
 * sharded `model.safetensors.index.json`, and `generation_config.json` if present. Tensors are read
 * one at a time from the files (never the whole file at once); every expected tensor must be
 * present with the config's shape, and no unexpected tensor may be present. A PEFT LoRA adapter
 * saved beside the weights (`adapter_config.json`, as `saveCheckpoint` writes for a model with an
 * attached adapter) is merged into them, or, with `adapter: 'attach'` (resuming LoRA training),
 * attached with trainable factors.
 */
export function loadCheckpoint(dir: string, opts: { precision?: WeightPrecision; adapter?: 'merge' | 'attach' } = {}): LoadedCheckpoint {
  const { config, generationConfig, json } = readCheckpointConfig(dir);
  const reader = openCheckpoint(dir);
  const file = readerFile(reader, dir);
  try {
    const { view, layout } = checkpointReader(json, config, reader, file);
    const model = modelFromWeights(config, view, file, opts.precision ?? 'auto');
    model.layout = withCarried(layout, reader, dir, file);
    if (!fs.existsSync(path.join(dir, ADAPTER_CONFIG_FILE))) return { model, generationConfig, dir };
    const attach = opts.adapter === 'attach';
    const { adapter } = loadAdapter(dir, config, { trainable: attach, layout });
    if (!attach) return { model: mergeAdapter(model, adapter), generationConfig, dir };
    adapter.attach(model);
    return { model, generationConfig, dir };
  } finally {
    reader.close();
  }
}

/**
 * {@link loadCheckpoint} with asynchronous file I/O, one tensor at a time, so a server that is
 * already listening keeps answering while a large checkpoint loads (`onProgress` is told after each tensor). LoRA adapters (one saved
 * beside the weights, then each of `adapters`) are merged into the weights.
 */
export async function loadCheckpointAsync(dir: string, opts: { precision?: WeightPrecision; adapters?: readonly string[]; onProgress?: (p: LoadProgress) => void } = {}): Promise<LoadedCheckpoint> {
  const { config, generationConfig, json } = readCheckpointConfig(dir);
  const reader = await openCheckpointAsync(dir);
  const file = readerFile(reader, dir);
  try {
    const { view, layout } = checkpointReader(json, config, reader, file);
    let model = await modelFromWeightsAsync(config, view, file, opts.precision ?? 'auto', opts.onProgress);
    model.layout = withCarried(layout, reader, dir, file);
    const adapters = [...(fs.existsSync(path.join(dir, ADAPTER_CONFIG_FILE)) ? [dir] : []), ...(opts.adapters ?? [])];
    for (const a of adapters) model = mergeAdapter(model, loadAdapter(a, config, { layout }).adapter);
    return { model, generationConfig, dir };
  } finally {
    reader.close();
  }
}

/** `layout` with the carried tensors `reader` holds, read later from the files of `dir` (reopened for each). */
function withCarried(layout: CheckpointLayout, reader: TensorReader, dir: string, file: string): CheckpointLayout {
  return { ...layout, carried: carriedTensors(reader, layout, () => openCheckpoint(dir), file, true) };
}

/** Options of `saveCheckpoint`. */
export interface SaveOptions {
  /** Stored dtype of every tensor. Default 'bf16' (as released Apertus checkpoints). */
  dtype?: 'bf16' | 'f32';
  /** Shard size limit (bytes or '5GB'); default 5GB as transformers. */
  maxShardSize?: number | string;
  /** generation_config.json contents; default bos/eos/pad from the config. */
  generationConfig?: GenerationConfig;
  /** Extra files to write next to the weights (tokenizer.json, tokenizer_config.json, …): name → contents. */
  files?: Record<string, string | Uint8Array>;
  /** `base_model_name_or_path` of the adapter files written when the model has an attached adapter. */
  baseModel?: string | null;
}

/**
 * Save a model as a Hugging Face checkpoint directory in its layout (`model.layout`: loadable by
 * `AutoModelForCausalLM` for 2509 and Mini; a 1.5 model as the 1.5 checkpoint it came from, its
 * image and audio tokenizers copied from the files it was loaded from): config.json,
 * generation_config.json, model.safetensors (or shards + index) with `__metadata__.format = "pt"`,
 * plus any extra files; with an attached LoRA adapter, also the adapter in PEFT layout
 * (adapter_config.json, adapter_model.safetensors). The directory is written under a temporary name
 * and renamed into place, so a crash never leaves a half-written checkpoint. A model with carried
 * tensors reads them from `dir` afterwards.
 */
export function saveCheckpoint(model: ApertusModel, dir: string, opts: SaveOptions = {}): void {
  const dtype = opts.dtype ?? 'bf16';
  const c: ApertusConfig = model.config;
  writeDirAtomic(dir, (tmp) => {
    fs.writeFileSync(path.join(tmp, 'config.json'), configJson(c, dtype, model.layout));
    fs.writeFileSync(path.join(tmp, 'generation_config.json'), generationConfigJson(c, opts.generationConfig));
    const entries = weightEntries(model, dtype);
    writeCheckpoint(tmp, entries, { maxShardSize: opts.maxShardSize ?? '5GB', metadata: { format: 'pt' } });
    if (model.adapter) writeAdapterFiles(model.adapter, tmp, opts.baseModel ?? null, model.layout);
    for (const [name, contents] of Object.entries(opts.files ?? {})) fs.writeFileSync(path.join(tmp, name), contents);
  });
  // The carried tensors are now also in `dir`: read them from there next time, so the files the
  // model was loaded from may go (a training run prunes its old checkpoints).
  if (model.layout.carried) {
    const reader = openCheckpoint(dir);
    try {
      model.layout = withCarried(model.layout, reader, dir, readerFile(reader, dir));
    } finally {
      reader.close();
    }
  }
}
