// The models to evaluate: a Hugging Face model directory, found from whatever the user points at
// (the model directory itself, a checkpoints folder with its `latest` pointer, or a run directory
// of apertus-pretrain / apertus-sft / apertus-align), with its tokenizer.

import fs from 'node:fs';
import path from 'node:path';
import { loadCheckpoint, type ApertusModel } from '@apertus/model';
import { TokenizerError, loadTokenizerFromDirectory, type Tokenizer } from '@apertus/tokenizer';
import { CheckpointManager } from '@apertus/trainer';
import { EvalInputError } from './errors';

const isFile = (p: string): boolean => fs.statSync(p, { throwIfNoEntry: false })?.isFile() === true;

/** True when `dir` holds a Hugging Face model: `config.json` and `model.safetensors` (or its shard index). */
export function isModelDir(dir: string): boolean {
  return isFile(path.join(dir, 'config.json')) && (isFile(path.join(dir, 'model.safetensors')) || isFile(path.join(dir, 'model.safetensors.index.json')));
}

/**
 * The Hugging Face model directory that `location` designates: `location` itself when it is a
 * model directory; else its `model/` subdirectory (a finished run); else the checkpoint its
 * `latest` pointer names (a checkpoints folder), or that of its `checkpoints/` subdirectory (a run
 * still in progress). A model directory holds `config.json` and `model.safetensors` (or its index).
 * @throws EvalInputError when none of these exists
 */
export function resolveModelDir(location: string): string {
  if (isModelDir(location)) return location;
  if (isModelDir(path.join(location, 'model'))) return path.join(location, 'model');
  for (const root of [location, path.join(location, 'checkpoints')]) {
    const latest = new CheckpointManager(root).latest();
    if (latest !== null && isModelDir(latest.dir)) return latest.dir;
  }
  if (!fs.existsSync(location)) throw new EvalInputError(location, 'model not found (check the --model path)');
  throw new EvalInputError(location, 'no model here: expected a Hugging Face model directory (config.json + model.safetensors), a checkpoints folder with "latest", or a run directory with model/ or checkpoints/');
}

/**
 * Load a model directory for evaluation (bf16 matrices stay bf16, everything else float32).
 * @throws EvalInputError naming the directory when the files are missing, malformed or inconsistent
 */
export function loadModel(dir: string): ApertusModel {
  try {
    return loadCheckpoint(dir).model;
  } catch (e) {
    throw new EvalInputError(dir, `cannot load the model: ${(e as Error).message}`, { cause: e });
  }
}

/** The tokenizer of a model directory. */
export function loadModelTokenizer(dir: string): Tokenizer {
  if (!isFile(path.join(dir, 'tokenizer.json'))) throw new EvalInputError(dir, 'no tokenizer.json in the model directory');
  let tokenizer: Tokenizer;
  try {
    tokenizer = loadTokenizerFromDirectory(dir);
  } catch (e) {
    if (e instanceof TokenizerError) throw new EvalInputError(dir, `cannot load the tokenizer: ${e.message}`, { cause: e });
    throw e;
  }
  return tokenizer;
}
