// The model a run starts from (or an evaluation reads): a Hugging Face model directory, reached
// from whatever the user points at (the model directory itself, a finished run's `model/`, a
// checkpoints folder with its `latest` pointer, or a run directory still in progress), its
// weights, its tokenizer and the tokenizer files carried into every checkpoint.

import fs from 'node:fs';
import path from 'node:path';
import { findModelDir, loadCheckpoint, type ApertusModel } from '@apertus/model';
import { APERTUS_STOP_IDS, TokenizerError, loadTokenizerFromDirectory, type Tokenizer } from '@apertus/tokenizer';
import { InputError } from './errors';

/** Tokenizer files carried from a base model into every checkpoint (when present). */
export const TOKENIZER_FILES: readonly string[] = Object.freeze(['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja']);

const isFile = (p: string): boolean => fs.statSync(p, { throwIfNoEntry: false })?.isFile() === true;

export { findModelDir, isModelDir } from '@apertus/model';

/** Why `findModelDir(location)` found nothing, for the app's error message. */
export function missingModelReason(location: string, notFoundHint: string): string {
  if (!fs.existsSync(location)) return `model not found (${notFoundHint})`;
  return 'no model here: expected a Hugging Face model directory (config.json + model.safetensors), a checkpoints folder with "latest", or a run directory with model/ or checkpoints/';
}

/** The contents of the tokenizer files present in a model directory (see {@link TOKENIZER_FILES}). */
export function readTokenizerFiles(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of TOKENIZER_FILES) {
    const p = path.join(dir, name);
    if (isFile(p)) files[name] = fs.readFileSync(p, 'utf8');
  }
  return files;
}

/**
 * The model directory `location` designates (see {@link findModelDir}).
 * @param hint - what to do when nothing is there (`run apertus-pretrain first, or pass --model <dir>`)
 * @throws InputError naming `location` when it holds no model
 */
export function resolveModelDir(location: string, hint: string): string {
  const dir = findModelDir(location);
  if (dir === null) throw new InputError(location, missingModelReason(location, hint));
  return dir;
}

/**
 * Load the weights of a model directory: `f32` (default) for training (gradients on), `stored`
 * keeps bf16 matrices bf16 (evaluation, generation).
 * @throws InputError naming the directory when the files are missing, malformed or inconsistent
 */
export function loadModel(dir: string, precision: 'f32' | 'stored' = 'f32'): ApertusModel {
  try {
    return loadCheckpoint(dir, precision === 'f32' ? { precision: 'f32' } : {}).model;
  } catch (e) {
    throw new InputError(dir, `cannot load the model: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * The tokenizer of a model directory and its files (to copy into checkpoints).
 * @throws InputError naming the directory when `tokenizer.json` is missing or invalid
 */
export function loadModelTokenizer(dir: string): { tokenizer: Tokenizer; files: Record<string, string> } {
  if (!isFile(path.join(dir, 'tokenizer.json'))) throw new InputError(dir, 'no tokenizer.json in the model directory');
  try {
    return { tokenizer: loadTokenizerFromDirectory(dir), files: readTokenizerFiles(dir) };
  } catch (e) {
    if (e instanceof TokenizerError) throw new InputError(dir, `cannot load the tokenizer: ${e.message}`, { cause: e });
    throw e;
  }
}

/**
 * `generation_config.json` of a chat model: generation stops at `<|assistant_end|>` (the Apertus
 * SFT models' EOS, id 68) as well as `</s>` and `<|tools_suffix|>`.
 */
export function chatGenerationConfig(bos: number, pad: number): string {
  const eos = [68, ...APERTUS_STOP_IDS.filter((id) => id !== 68)];
  return `${JSON.stringify({ _from_model_config: false, bos_token_id: bos, eos_token_id: eos, pad_token_id: pad }, null, 2)}\n`;
}
