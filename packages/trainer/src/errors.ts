// Typed errors of @apertus/trainer. Every error names what it is about (an option, a step, a
// checkpoint directory) so a training app can print it as it is.

/** Base class of every error thrown by @apertus/trainer. */
export class TrainerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An option passed to a trainer function is invalid; `field` names it. */
export class TrainerOptionError extends TrainerError {
  /**
   * @param field - the option concerned (e.g. `clip`, `keepLast`)
   * @param message - what is wrong with it
   */
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`);
  }
}

/** The loss (or the gradient norm) became NaN or infinite; the optimizer step was not applied. */
export class NonFiniteLossError extends TrainerError {
  /**
   * @param step - the optimizer step (1-based) that produced the value
   * @param quantity - `loss` or `gradNorm`
   * @param value - the offending value
   * @param tensor - for `gradNorm`, the first parameter whose gradient is non-finite
   */
  constructor(readonly step: number, readonly quantity: 'loss' | 'gradNorm', readonly value: number, readonly tensor: string | null = null) {
    super(`step ${step}: ${quantity} is ${value}${tensor !== null ? ` (gradient of ${tensor})` : ''}; the update was skipped and the parameters are unchanged (lower the learning rate or enable clipping)`);
  }
}

/**
 * Writing a checkpoint failed. The partial temporary directory was removed and the previous
 * checkpoint (and the `latest` pointer) are untouched.
 */
export class CheckpointWriteError extends TrainerError {
  /** True when the cause was `ENOSPC` (disk full) or `EDQUOT` (quota exceeded). */
  readonly diskFull: boolean;

  /**
   * @param dir - the checkpoint directory that was being written
   * @param previous - the checkpoint `latest` still points at (null when there is none)
   * @param cause - the underlying error
   */
  constructor(readonly dir: string, readonly previous: string | null, cause: unknown) {
    const full = isDiskFull(cause);
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(
      `cannot write checkpoint ${dir}: ${full ? 'disk full (no space left on device)' : detail}; ` +
        (previous === null ? 'no earlier checkpoint exists' : `the previous checkpoint ${previous} is intact`),
      { cause },
    );
    this.diskFull = full;
  }
}

/** Writing an output file (metrics log, loss curve) failed; `diskFull` tells a full disk apart. */
export class OutputWriteError extends TrainerError {
  /** True when the cause was `ENOSPC` (disk full) or `EDQUOT` (quota exceeded). */
  readonly diskFull: boolean;

  /**
   * @param file - the file being written
   * @param cause - the underlying error
   */
  constructor(readonly file: string, cause: unknown) {
    const full = isDiskFull(cause);
    super(`cannot write ${file}: ${full ? 'disk full (no space left on device)' : cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.diskFull = full;
  }
}

/** A checkpoint directory is missing, incomplete or holds invalid files; `file` and `field` say where. */
export class CheckpointReadError extends TrainerError {
  /**
   * @param file - file or directory concerned
   * @param message - what is wrong
   * @param field - JSON field concerned, when there is one
   */
  constructor(readonly file: string, message: string, readonly field?: string, options?: { cause?: unknown }) {
    super(`${file}${field !== undefined ? ` (${field})` : ''}: ${message}`, options);
  }
}

/** True when `e` or one of its causes is a "no space left" / "quota exceeded" error. */
export function isDiskFull(e: unknown): boolean {
  for (let cur: unknown = e, depth = 0; cur !== null && cur !== undefined && depth < 8; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') return true;
    if (cur instanceof Error && /\bENOSPC\b|no space left on device/i.test(cur.message)) return true;
    cur = (cur as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * A run setting is invalid. `field` is the config key (`lr`); `source` says where the value came
 * from (`--lr`, a config file, a checkpoint's `trainer_state.json`, or `default`).
 */
export class ConfigError extends TrainerError {
  /**
   * @param field - config key, e.g. `microBatchSize`
   * @param message - what is wrong
   * @param source - flag name or config file the value came from
   */
  constructor(readonly field: string, message: string, readonly source?: string) {
    super(`${source && source !== 'default' ? `${source}: ` : ''}${field}: ${message}`);
  }
}

/** An input of a run (model directory, data file, prompts, reward) cannot be used; `path` names it. */
export class InputError extends TrainerError {
  /**
   * @param path - file, folder or model directory concerned
   * @param message - what is wrong and what to do about it (prefixed with `path` unless it names it already)
   */
  constructor(readonly path: string, message: string, options?: { cause?: unknown }) {
    super(message.includes(path) ? message : `${path}: ${message}`, options);
  }
}

/** `--resume` cannot continue the run in the output directory (changed settings or data); nothing was written. */
export class ResumeError extends TrainerError {
  /**
   * @param dir - the checkpoint being resumed
   * @param message - what differs
   */
  constructor(readonly dir: string, message: string) {
    super(`cannot resume from ${dir}: ${message}`);
  }
}

/** Another live process owns the run directory (its lock file names the process). */
export class RunLockedError extends TrainerError {
  /**
   * @param file - the lock file
   * @param owner - pid and host of the process holding it
   */
  constructor(readonly file: string, readonly owner: { readonly pid: number; readonly host: string }) {
    super(`${file}: the run directory is in use by process ${owner.pid} on ${owner.host}; wait for it to finish, or choose another --out (delete the lock file only if that process is gone)`);
  }
}

/** A run was stopped by a signal before training started (nothing to checkpoint yet). */
export class InterruptedError extends TrainerError {}

/** A weight became NaN or infinite after an update, or a checkpoint holds one. */
export class NonFiniteWeightError extends TrainerError {
  /**
   * @param step - the optimizer step after which (or the checkpoint step at which) it was found
   * @param tensor - the parameter's name
   * @param value - the first non-finite value
   */
  constructor(readonly step: number, readonly tensor: string, readonly value: number) {
    super(`step ${step}: parameter ${tensor} holds ${value}`);
  }
}
