// Typed errors of @apertus/serve that know nothing of HTTP: the engine's (EngineError) and the
// command lines' (CliError); loading (ModelLoadError) and prompts (PromptError) are the model
// loader's, re-exported here. The HTTP transport maps them to statuses and OpenAI error bodies in
// api-error.ts.

export { ModelLoadError, PromptError } from '@apertus/pretrained';

/** Base class of every error thrown by @apertus/serve. */
export class ServeError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** What went wrong in the engine, for transports to map (HTTP: 400, 400, 429, 500, 500, 503). */
export type EngineErrorCode = 'invalid_request' | 'context_length_exceeded' | 'queue_full' | 'model_error' | 'decode_error' | 'shutdown';

/**
 * A generation request the engine refuses or cannot finish: invalid values (`field` names them in
 * OpenAI / generation_config spelling: `max_tokens`, `top_p`, `prompt`…), a prompt that does not
 * fit the context, a full queue, a failed model step or decode, or shutdown.
 */
export class EngineError extends ServeError {
  constructor(
    /** The kind of failure. */
    readonly code: EngineErrorCode,
    message: string,
    /** The request field at fault, or null. */
    readonly field: string | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Bad command-line arguments of `apertus-serve`, `apertus-chat` or `apertus-generate`. */
export class CliError extends ServeError {
  constructor(
    /** The option at fault (`--port`). */
    readonly option: string,
    message: string,
  ) {
    super(`${option}: ${message}`);
  }
}

