// Typed errors of the SFT app. Each names the flag, config field, file or checkpoint it is about;
// the CLI prints the message and exits with a non-zero status (2 for bad settings, 1 otherwise).

/** Base class of every error raised by the SFT app itself. */
export class SftError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A configuration value is invalid. `field` is the config-file key (`lr`); `source` says where the
 * value came from (`--lr`, a config file, or `default`).
 */
export class SftConfigError extends SftError {
  /**
   * @param field - config key, e.g. `microBatchSize`
   * @param message - what is wrong
   * @param source - flag name or config file the value came from
   */
  constructor(readonly field: string, message: string, readonly source?: string) {
    super(`${source && source !== 'default' ? `${source}: ` : ''}${field}: ${message}`);
  }
}

/** The base model or the training data cannot be used (missing, unreadable, empty, incompatible). */
export class SftInputError extends SftError {
  /**
   * @param path - file, folder or model directory concerned
   * @param message - what is wrong and what to do about it (prefixed with `path` unless it names it already)
   */
  constructor(readonly path: string, message: string, options?: { cause?: unknown }) {
    super(message.includes(path) ? message : `${path}: ${message}`, options);
  }
}

/** `--resume` cannot continue the run in the output directory (changed settings or data). */
export class SftResumeError extends SftError {
  /**
   * @param dir - the checkpoint being resumed
   * @param message - what differs
   */
  constructor(readonly dir: string, message: string) {
    super(`cannot resume from ${dir}: ${message}`);
  }
}
