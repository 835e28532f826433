// The HTTP face of errors: OpenAI error bodies with statuses, and the mapping of the engine's
// typed errors onto them. Every failure is answered with
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature", "code": null}}

import { EngineError, PromptError, ServeError } from './errors';

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

const ENGINE_STATUS: Record<EngineError['code'], [number, ApiErrorType, string | null]> = {
  invalid_request: [400, 'invalid_request_error', null],
  context_length_exceeded: [400, 'invalid_request_error', 'context_length_exceeded'],
  queue_full: [429, 'rate_limit_error', 'queue_full'],
  model_error: [500, 'server_error', 'model_error'],
  decode_error: [500, 'server_error', 'decode_error'],
  shutdown: [503, 'unavailable_error', 'server_shutdown'],
};

/**
 * Any thrown value as an {@link ApiError}: engine errors by their code (400 / 429 / 500 / 503),
 * prompt errors as 400 naming the field, unknown failures as 500 `server_error`.
 */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof EngineError) {
    const [status, type, code] = ENGINE_STATUS[e.code];
    return new ApiError(status, e.message, type, e.field, code, { cause: e });
  }
  if (e instanceof PromptError) return new ApiError(400, e.message, 'invalid_request_error', e.field, null, { cause: e });
  const message = e instanceof Error ? e.message : String(e);
  return new ApiError(500, message, 'server_error', null, null, { cause: e });
}
