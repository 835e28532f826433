// Typed errors of the evaluation app: a bad option names its flag, and the CLI exits with status 2
// (inputs that cannot be used are @apertus/trainer's InputError, status 1).

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
