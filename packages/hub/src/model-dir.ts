// Which Hugging Face model directory a path designates: the directory itself, a finished run's
// `model/`, or the checkpoint a checkpoints folder's `latest` pointer names (also through a run
// directory's `checkpoints/`); and the name the model goes by: the run's for a run's model or
// checkpoint (`udhr-tiny` for runs/udhr-tiny, runs/udhr-tiny/model or a checkpoint of
// runs/udhr-tiny/checkpoints), else the directory's.

import fs from 'node:fs';
import path from 'node:path';

/** Name of the pointer file a checkpoints folder keeps (its content: the newest checkpoint's directory name). */
export const LATEST_POINTER = 'latest';

const isFile = (p: string): boolean => fs.statSync(p, { throwIfNoEntry: false })?.isFile() === true;

/** True when `dir` holds a Hugging Face model: `config.json` and `model.safetensors` (or its shard index). */
export function isModelDir(dir: string): boolean {
  return isFile(path.join(dir, 'config.json')) && (isFile(path.join(dir, 'model.safetensors')) || isFile(path.join(dir, 'model.safetensors.index.json')));
}

/** The checkpoint directory `root/latest` names, or null (no pointer, or a name that is not a plain directory name). */
function latestCheckpoint(root: string): string | null {
  const pointer = path.join(root, LATEST_POINTER);
  if (!isFile(pointer)) return null;
  const name = fs.readFileSync(pointer, 'utf8').trim();
  return name !== '' && name === path.basename(name) && name !== '..' ? path.join(root, name) : null;
}

/**
 * The Hugging Face model directory that `location` designates: `location` itself when it is a
 * model directory; else its `model/` subdirectory (a finished run); else the checkpoint its
 * `latest` pointer names (a checkpoints folder), or that of its `checkpoints/` subdirectory (a run
 * still in progress). Null when none of these holds a model.
 */
export function findModelDir(location: string): string | null {
  if (isModelDir(location)) return location;
  if (isModelDir(path.join(location, 'model'))) return path.join(location, 'model');
  for (const root of [location, path.join(location, 'checkpoints')]) {
    const latest = latestCheckpoint(root);
    if (latest !== null && isModelDir(latest)) return latest;
  }
  return null;
}

/** Why {@link findModelDir} found nothing at `location` (an existing path), for an error message. */
export function noModelReason(location: string): string {
  return fs.existsSync(location)
    ? 'no model here: expected a Hugging Face model directory (config.json + model.safetensors), a run directory with model/ or checkpoints/, a checkpoints folder with "latest", or a .gguf file'
    : 'no such file or directory';
}

/** The name of the model in directory `dir` (see the file header). */
export function checkpointName(dir: string): string {
  const abs = path.resolve(dir);
  const parent = path.dirname(abs);
  if (path.basename(abs) === 'model' && parent !== abs) return path.basename(parent);
  if (path.basename(parent) === 'checkpoints') return path.basename(path.dirname(parent));
  return path.basename(abs);
}
