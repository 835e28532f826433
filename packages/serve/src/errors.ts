// Typed errors of @apertus/serve that know nothing of HTTP: the engine's (EngineError, PromptError),
// loading (ModelLoadError) and listening (ListenError). The HTTP transport maps them to statuses and
// OpenAI error bodies in api-error.ts; bad command lines are @apertus/cli's CliError.

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

/** A checkpoint directory that cannot be served (missing tokenizer, unreadable weights…). */
export class ModelLoadError extends ServeError {
  /** The field of the file at fault (`eos_token_id`, `chat_template`), or null. */
  readonly field: string | null;
  constructor(
    /** The directory or file at fault. */
    readonly path: string,
    message: string,
    options?: { cause?: unknown; field?: string },
  ) {
    super(`${path}: ${options?.field !== undefined ? `${options.field}: ` : ''}${message}`, options);
    this.field = options?.field ?? null;
  }
}

/** A conversation that cannot be turned into a prompt (the template refused it, or unsafe text). */
export class PromptError extends ServeError {
  constructor(
    /** The request field at fault (`messages[2].content`, `tools[0]`, `chat_template`). */
    readonly field: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The server cannot listen on its address (port in use, no permission, unknown host). */
export class ListenError extends ServeError {
  constructor(
    /** `host:port` it tried. */
    readonly address: string,
    /** The system error code (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`, `ENOTFOUND`…), or null. */
    readonly code: string | null,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot listen on ${address}: ${message}`, options);
  }
}
