// Which Hugging Face model directory a path designates: the directory itself, a finished run's
// `model/`, or the checkpoint a checkpoints folder's `latest` pointer names (also through a run
// directory's `checkpoints/`). Training apps, the server and the chat apps resolve `--model` here.

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

/**
 * The name of the model at `location`, as servers and apps report it: the directory's (or a
 * `.gguf` file's) base name, except that a run's `model/` and a checkpoint under `checkpoints/`
 * are named after their run (`runs/udhr-tiny/model` → `udhr-tiny`).
 */
export function checkpointName(location: string): string {
  const abs = path.resolve(location);
  const base = path.basename(abs);
  if (base.endsWith('.gguf')) return base.slice(0, -'.gguf'.length);
  const parent = path.dirname(abs);
  if (base === 'model') return path.basename(parent);
  if (path.basename(parent) === 'checkpoints') return path.basename(path.dirname(parent));
  return base;
}
