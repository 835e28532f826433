// Typed errors of the evaluation app. Each names the flag, file or model directory it is about;
// the CLI prints the message and exits with a non-zero status (2 for bad options, 1 otherwise).

/** Base class of every error raised by the evaluation app itself. */
export class EvalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An option is invalid. `option` is the flag (`--max-tokens`) or option name. */
export class EvalOptionError extends EvalError {
  /**
   * @param option - flag or option name
   * @param message - what is wrong
   */
  constructor(readonly option: string, message: string) {
    super(`${option}: ${message}`);
  }
}

/** A model or an input file cannot be used (missing, unreadable, empty, incompatible). */
export class EvalInputError extends EvalError {
  /**
   * @param path - file or directory concerned
   * @param message - what is wrong (prefixed with `path` unless it names it already)
   */
  constructor(readonly path: string, message: string, options?: { cause?: unknown }) {
    super(message.includes(path) ? message : `${path}: ${message}`, options);
  }
}
