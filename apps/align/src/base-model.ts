// The model a run starts from: a Hugging Face model directory, found from whatever the user
// points at (the model directory itself, a checkpoints folder with its `latest` pointer, or a
// run directory of apertus-pretrain / apertus-sft), with its tokenizer files.

import fs from 'node:fs';
import path from 'node:path';
import { loadCheckpoint, type ApertusModel } from '@apertus/model';
import { APERTUS_STOP_IDS, TokenizerError, loadTokenizerFromDirectory, type Tokenizer } from '@apertus/tokenizer';
import { findModelDir, missingModelReason, readTokenizerFiles } from '@apertus/trainer';
import { AlignInputError } from './errors';

/**
 * The Hugging Face model directory that `location` designates: `location` itself when it is a
 * model directory; else its `model/` subdirectory (a finished run); else the checkpoint its
 * `latest` pointer names (a checkpoints folder), or that of its `checkpoints/` subdirectory (a run
 * still in progress). A model directory holds `config.json` and `model.safetensors` (or its index).
 * @throws AlignInputError when none of these exists (see `findModelDir` of @apertus/trainer)
 */
export function resolveModelDir(location: string): string {
  const dir = findModelDir(location);
  if (dir === null) throw new AlignInputError(location, missingModelReason(location, 'run apertus-sft first, or pass --model <dir>'));
  return dir;
}

/**
 * Load the float32 weights of a model directory (gradients on, for training).
 * @throws AlignInputError naming the directory when the files are missing, malformed or inconsistent
 */
export function loadModel(dir: string): ApertusModel {
  try {
    return loadCheckpoint(dir, { precision: 'f32' }).model;
  } catch (e) {
    throw new AlignInputError(dir, `cannot load the model: ${(e as Error).message}`, { cause: e });
  }
}

/** The tokenizer of a model directory and its files (to copy into checkpoints). */
export function loadModelTokenizer(dir: string): { tokenizer: Tokenizer; files: Record<string, string> } {
  if (!fs.statSync(path.join(dir, 'tokenizer.json'), { throwIfNoEntry: false })?.isFile()) throw new AlignInputError(dir, 'no tokenizer.json in the model directory');
  let tokenizer: Tokenizer;
  try {
    tokenizer = loadTokenizerFromDirectory(dir);
  } catch (e) {
    if (e instanceof TokenizerError) throw new AlignInputError(dir, `cannot load the tokenizer: ${e.message}`, { cause: e });
    throw e;
  }
  return { tokenizer, files: readTokenizerFiles(dir) };
}

/**
 * `generation_config.json` of a chat model: generation stops at `<|assistant_end|>` (the Apertus
 * SFT models' EOS, id 68) as well as `</s>` and `<|tools_suffix|>`.
 */
export function chatGenerationConfig(bos: number, pad: number): string {
  const eos = [68, ...APERTUS_STOP_IDS.filter((id) => id !== 68)];
  return `${JSON.stringify({ _from_model_config: false, bos_token_id: bos, eos_token_id: eos, pad_token_id: pad }, null, 2)}\n`;
}
