// Typed errors of @apertus/serve, and the OpenAI error body every failure is answered with:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature", "code": null}}

/** The `type` of an OpenAI-shaped error (ecosystem.md §2.3; `unavailable_error` as llama.cpp while loading). */
export type ApiErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error'
  | 'unavailable_error';

/** The JSON body of every error response (and of mid-stream SSE / WebSocket errors). */
export interface OpenAIErrorBody {
  error: {
    /** Human-readable explanation. */
    message: string;
    /** Error class, see {@link ApiErrorType}. */
    type: ApiErrorType;
    /** Request field at fault (`messages[2].content`, `temperature`…), or null. */
    param: string | null;
    /** Machine-readable code (`model_not_found`, `context_length_exceeded`…), or null. */
    code: string | null;
  };
}

/** Base class of every error thrown by @apertus/serve. */
export class ServeError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A request that must be answered with an HTTP error status and an OpenAI error body. Thrown by
 * request validation, authentication, the queue (429) and the scheduler (mid-stream failures).
 */
export class ApiError extends ServeError {
  constructor(
    /** HTTP status (400, 401, 404, 413, 429, 500, 503…). */
    readonly status: number,
    message: string,
    /** OpenAI error type. */
    readonly type: ApiErrorType = 'invalid_request_error',
    /** The request field at fault. */
    readonly param: string | null = null,
    /** Machine-readable code. */
    readonly code: string | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** The OpenAI error body. */
  toBody(): OpenAIErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
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

/** Any thrown value as an {@link ApiError} (unknown failures become 500 `server_error`). */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const message = e instanceof Error ? e.message : String(e);
  return new ApiError(500, message, 'server_error', null, null, { cause: e });
}
