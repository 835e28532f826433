// Checkpoints of a training run:
//
//   <root>/step-000123/          a Hugging Face model directory (config.json, model.safetensors, …)
//                                + optimizer.safetensors + optimizer.json + trainer_state.json
//   <root>/latest                "step-000123\n", replaced atomically after the directory is complete
//
// A checkpoint is written into a temporary directory, fsynced and renamed into place, and only
// then is `latest` updated (write temp + rename). A crash or a full disk at any moment leaves
// `latest` pointing at the previous complete checkpoint. Old checkpoints are pruned (keep last N).

import fs from 'node:fs';
import path from 'node:path';
import { writeDirAtomic, writeFileAtomic } from '@apertus/atomic-file';
import type { OptimizerStateDict, StateTensor } from '@apertus/ademamix';
import { loadCheckpoint, saveCheckpoint, type ApertusModel } from '@apertus/model';
import { SafetensorsFile, writeFile, type TensorEntry } from '@apertus/safetensors';
import { verifyChecksums, writeChecksums } from './checksums';
import { CheckpointReadError, CheckpointWriteError, TrainerOptionError } from './errors';
import { assertFiniteParameters } from './finite';
import { parseTrainerState, type Json, type TrainerState } from './trainer-state';

/** Name of the pointer file that holds the directory name of the newest complete checkpoint. */
export const LATEST_FILE = 'latest';
/** File names inside a training checkpoint besides the Hugging Face model files. */
export const CHECKPOINT_FILES = Object.freeze({
  optimizerTensors: 'optimizer.safetensors',
  optimizerMeta: 'optimizer.json',
  trainerState: 'trainer_state.json',
});

const STEP_DIR = /^step-(\d+)$/;

/** A complete checkpoint on disk. */
export interface CheckpointRef {
  /** Optimizer step it was taken after. */
  readonly step: number;
  /** Its directory. */
  readonly dir: string;
}

/** Options of {@link CheckpointManager}. */
export interface CheckpointManagerOptions {
  /** Checkpoints to keep (newest first; the one `latest` names is always kept). 0 keeps all. Default 3. */
  readonly keepLast?: number;
}

/**
 * Owns `<root>`: names checkpoint directories, writes them atomically, maintains the `latest`
 * pointer and prunes old checkpoints. What goes into a checkpoint is up to the caller's writer
 * (see {@link writeTrainingCheckpoint} for model + optimizer + trainer state).
 */
export class CheckpointManager {
  /** How many checkpoints are kept (0 = all). */
  readonly keepLast: number;

  /**
   * @param root - directory holding the checkpoints (created on first save)
   * @throws TrainerOptionError for an invalid `keepLast`
   */
  constructor(readonly root: string, options: CheckpointManagerOptions = {}) {
    const keep = options.keepLast ?? 3;
    if (!Number.isInteger(keep) || keep < 0) throw new TrainerOptionError('keepLast', `must be a non-negative integer, got ${keep}`);
    this.keepLast = keep;
  }

  /** Directory name of the checkpoint after `step`: `step-000123` (at least 6 digits). */
  static dirName(step: number): string {
    return `step-${String(step).padStart(6, '0')}`;
  }

  /** Full path of the checkpoint after `step`. */
  dirFor(step: number): string {
    return path.join(this.root, CheckpointManager.dirName(step));
  }

  /** Complete checkpoints, oldest first. Temporary directories of interrupted saves are ignored. */
  list(): CheckpointRef[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.root);
    } catch {
      return [];
    }
    const out: CheckpointRef[] = [];
    for (const name of names) {
      const m = STEP_DIR.exec(name);
      if (!m) continue;
      const dir = path.join(this.root, name);
      if (fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) out.push({ step: Number(m[1]), dir });
    }
    return out.sort((a, b) => a.step - b.step);
  }

  /**
   * The newest complete checkpoint: the one `latest` names, or — when the pointer is missing or
   * names a directory that no longer exists — the highest-numbered complete directory. Null when
   * there is none. (Directories named `step-*` only ever appear by renaming a finished temporary
   * directory, so each one is complete.)
   */
  latest(): CheckpointRef | null {
    const pointer = path.join(this.root, LATEST_FILE);
    let name: string | undefined;
    try {
      name = fs.readFileSync(pointer, 'utf8').trim();
    } catch {
      name = undefined;
    }
    if (name !== undefined) {
      const m = STEP_DIR.exec(name);
      const dir = path.join(this.root, name);
      if (m && fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) return { step: Number(m[1]), dir };
    }
    const all = this.list();
    return all.length > 0 ? all[all.length - 1]! : null;
  }

  /**
   * Write the checkpoint after `step`: `write(tmpDir)` fills an empty temporary directory, which
   * is then fsynced and renamed to `step-NNNNNN`; `latest` is updated atomically afterwards and old
   * checkpoints are pruned. Returns the checkpoint's directory.
   * @throws CheckpointWriteError when anything fails (disk full included); the temporary
   *   directory is removed and `latest` still names the previous checkpoint
   */
  save(step: number, write: (tmpDir: string) => void): string {
    if (!Number.isSafeInteger(step) || step < 0) throw new TrainerOptionError('step', `must be a non-negative integer, got ${step}`);
    const final = this.dirFor(step);
    const previous = this.latest()?.dir ?? null;
    let placed = false;
    try {
      fs.mkdirSync(this.root, { recursive: true });
      this.removeStaleTemporaries();
      // A directory left at `final` by a run that went further before it was stopped is replaced.
      writeDirAtomic(final, write);
      placed = true;
      writeFileAtomic(path.join(this.root, LATEST_FILE), `${CheckpointManager.dirName(step)}\n`);
    } catch (e) {
      // The pointer could not be updated: take the new directory back out, so the run directory
      // is exactly as it was before this save.
      if (placed && final !== previous) fs.rmSync(final, { recursive: true, force: true });
      throw new CheckpointWriteError(final, previous, e);
    }
    this.prune();
    return final;
  }

  /** Delete all but the newest `keepLast` checkpoints (never the one `latest` names). */
  prune(): void {
    if (this.keepLast === 0) return;
    const latest = this.latest()?.dir;
    const all = this.list();
    for (const c of all.slice(0, Math.max(0, all.length - this.keepLast))) {
      if (c.dir !== latest) fs.rmSync(c.dir, { recursive: true, force: true });
    }
  }

  private removeStaleTemporaries(): void {
    for (const name of fs.readdirSync(this.root)) {
      if (/^\.step-\d+\.(tmp|old)-/.test(name)) fs.rmSync(path.join(this.root, name), { recursive: true, force: true });
    }
  }
}

/** What {@link writeTrainingCheckpoint} saves (`C`: the run's configuration type). */
export interface TrainingCheckpoint<C = Json> {
  /** The model; its weights are saved as a Hugging Face checkpoint. */
  readonly model: ApertusModel;
  /** Optimizer (`AdEMAMix`, `AdamW`): its moments go to `optimizer.safetensors`, the rest to `optimizer.json`. */
  readonly optimizer: { stateDict(): OptimizerStateDict };
  /** Counters, loader position, metrics. */
  readonly state: TrainerState<C>;
  /** Extra files for the model directory (tokenizer.json, tokenizer_config.json, …). */
  readonly files?: Readonly<Record<string, string | Uint8Array>>;
  /**
   * Stored weight dtype. 'f32' (default) is required for a bit-exact resume; 'bf16' gives the
   * released-checkpoint format.
   */
  readonly dtype?: 'f32' | 'bf16';
}

/**
 * Fill `dir` with a training checkpoint: the Hugging Face model files (loadable by
 * `@apertus/model`'s `loadCheckpoint` and by `transformers`), the optimizer moments and metadata,
 * `trainer_state.json`, and last the checksum manifest `checksums.sha256` over all of them.
 */
export function writeTrainingCheckpoint<C>(dir: string, c: TrainingCheckpoint<C>): void {
  saveCheckpoint(c.model, dir, { dtype: c.dtype ?? 'f32', ...(c.files ? { files: { ...c.files } } : {}) });
  const sd = c.optimizer.stateDict();
  const entries: [string, TensorEntry][] = Object.entries(sd.tensors).map(([name, t]) => [name, { dtype: t.dtype, shape: [...t.shape], data: t.data }]);
  writeFile(path.join(dir, CHECKPOINT_FILES.optimizerTensors), entries, { format: 'apertus-optimizer' });
  writeFileAtomic(path.join(dir, CHECKPOINT_FILES.optimizerMeta), `${JSON.stringify(sd.meta, null, 1)}\n`);
  writeFileAtomic(path.join(dir, CHECKPOINT_FILES.trainerState), `${JSON.stringify(c.state)}\n`);
  writeChecksums(dir);
}

/** A training checkpoint read back by {@link readTrainingCheckpoint}. */
export interface LoadedTrainingCheckpoint {
  /** The model with float32 weights that require gradients. */
  readonly model: ApertusModel;
  /** Pass to `optimizer.loadStateDict`. */
  readonly optimizerState: OptimizerStateDict;
  /** Counters, loader position, metrics. */
  readonly state: TrainerState;
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (cause) {
    throw new CheckpointReadError(file, 'cannot read file', undefined, { cause });
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new CheckpointReadError(file, `invalid JSON (${(cause as Error).message})`, undefined, { cause });
  }
}

/** Read the optimizer state (`optimizer.safetensors` + `optimizer.json`) of a checkpoint directory. */
export function readOptimizerState(dir: string): OptimizerStateDict {
  const metaFile = path.join(dir, CHECKPOINT_FILES.optimizerMeta);
  const meta = readJson(metaFile) as OptimizerStateDict['meta'];
  const file = path.join(dir, CHECKPOINT_FILES.optimizerTensors);
  let st: SafetensorsFile;
  try {
    st = SafetensorsFile.open(file);
  } catch (cause) {
    throw new CheckpointReadError(file, `cannot open (${(cause as Error).message})`, undefined, { cause });
  }
  try {
    const tensors: Record<string, StateTensor> = {};
    for (const name of st.keys()) {
      const t = st.read(name);
      if (t.dtype !== 'F32' && t.dtype !== 'F64') throw new CheckpointReadError(file, `dtype ${t.dtype} is not an optimizer state dtype (F32, F64)`, name);
      tensors[name] = { dtype: t.dtype, shape: [...t.shape], data: t.data };
    }
    return { tensors, meta };
  } finally {
    st.close();
  }
}

/** Read and validate `trainer_state.json` of a checkpoint directory. */
export function readTrainerState(dir: string): TrainerState {
  const file = path.join(dir, CHECKPOINT_FILES.trainerState);
  return parseTrainerState(readJson(file), file);
}

/**
 * Read a checkpoint written by {@link writeTrainingCheckpoint}: every file is first checked
 * against `checksums.sha256`, then the float32 model (gradients on; a LoRA run's frozen base with
 * its adapter attached again), optimizer state and trainer state are read, and the weights are
 * checked to be finite.
 * @throws CheckpointReadError naming the missing, truncated or damaged file; NonFiniteWeightError
 *   naming a parameter that holds a NaN or ±∞
 */
export function readTrainingCheckpoint(dir: string): LoadedTrainingCheckpoint {
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new CheckpointReadError(dir, 'checkpoint directory not found');
  verifyChecksums(dir);
  const state = readTrainerState(dir);
  const optimizerState = readOptimizerState(dir);
  let model: ApertusModel;
  try {
    model = loadCheckpoint(dir, { precision: 'f32', adapter: 'attach' }).model;
  } catch (cause) {
    throw new CheckpointReadError(dir, `cannot load the model (${(cause as Error).message})`, undefined, { cause });
  }
  assertFiniteParameters(model.parameters(), state.step);
  return { model, optimizerState, state };
}
