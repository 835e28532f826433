// Finding the model a run starts from: a Hugging Face model directory, reached from whatever the
// user points at (the model directory itself, a finished run's `model/`, a checkpoints folder with
// its `latest` pointer, or a run directory still in progress), and its tokenizer files.

import fs from 'node:fs';
import path from 'node:path';
import { CheckpointManager } from './checkpoint';

/** Tokenizer files carried from a base model into every checkpoint (when present). */
export const TOKENIZER_FILES: readonly string[] = Object.freeze(['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja']);

const isFile = (p: string): boolean => fs.statSync(p, { throwIfNoEntry: false })?.isFile() === true;

/** True when `dir` holds a Hugging Face model: `config.json` and `model.safetensors` (or its shard index). */
export function isModelDir(dir: string): boolean {
  return isFile(path.join(dir, 'config.json')) && (isFile(path.join(dir, 'model.safetensors')) || isFile(path.join(dir, 'model.safetensors.index.json')));
}

/**
 * The Hugging Face model directory that `location` designates: `location` itself when it is a
 * model directory; else its `model/` subdirectory (a finished run); else the checkpoint its
 * `latest` pointer names (a checkpoints folder), or that of its `checkpoints/` subdirectory (a run
 * still in progress). Null when none of these exists.
 */
export function findModelDir(location: string): string | null {
  if (isModelDir(location)) return location;
  if (isModelDir(path.join(location, 'model'))) return path.join(location, 'model');
  for (const root of [location, path.join(location, 'checkpoints')]) {
    const latest = new CheckpointManager(root).latest();
    if (latest !== null && isModelDir(latest.dir)) return latest.dir;
  }
  return null;
}

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
