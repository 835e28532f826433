// The models to evaluate: a Hugging Face model directory, found from whatever the user points at
// (the model directory itself, a checkpoints folder with its `latest` pointer, or a run directory
// of apertus-pretrain / apertus-sft / apertus-align), with its tokenizer.

import fs from 'node:fs';
import path from 'node:path';
import { loadCheckpoint, type ApertusModel } from '@apertus/model';
import { TokenizerError, loadTokenizerFromDirectory, type Tokenizer } from '@apertus/tokenizer';
import { findModelDir, missingModelReason } from '@apertus/trainer';
import { EvalInputError } from './errors';

/**
 * The Hugging Face model directory that `location` designates: `location` itself when it is a
 * model directory; else its `model/` subdirectory (a finished run); else the checkpoint its
 * `latest` pointer names (a checkpoints folder), or that of its `checkpoints/` subdirectory (a run
 * still in progress). A model directory holds `config.json` and `model.safetensors` (or its index).
 * @throws EvalInputError when none of these exists (see `findModelDir` of @apertus/trainer)
 */
export function resolveModelDir(location: string): string {
  const dir = findModelDir(location);
  if (dir === null) throw new EvalInputError(location, missingModelReason(location, 'check the --model path'));
  return dir;
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
  if (!fs.statSync(path.join(dir, 'tokenizer.json'), { throwIfNoEntry: false })?.isFile()) throw new EvalInputError(dir, 'no tokenizer.json in the model directory');
  let tokenizer: Tokenizer;
  try {
    tokenizer = loadTokenizerFromDirectory(dir);
  } catch (e) {
    if (e instanceof TokenizerError) throw new EvalInputError(dir, `cannot load the tokenizer: ${e.message}`, { cause: e });
    throw e;
  }
  return tokenizer;
}
