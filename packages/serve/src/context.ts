// What the HTTP routes and the WebSocket endpoint share: the server's options and the context a
// request handler reads (metrics, the Origin/Host guard, the loaded model). Its own file, so the
// transports import it without importing each other.

import type { ServedModel } from './load';
import type { ServerMetrics } from './metrics';
import type { OriginGuard } from './origin-guard';
import type { RequestLimits } from './requests';
import type { Scheduler } from './scheduler';

/** Options of `createServer`. */
export interface ServerOptions {
  /** The model to serve, or a promise of it (the server answers 503 on /health until it resolves). */
  model: ServedModel | Promise<ServedModel>;
  /** Require `Authorization: Bearer KEY` on /v1/*, /tokenize, /detokenize and the WebSocket. */
  apiKey?: string | null;
  /** Requests waiting for a batch slot before 429. Default 64. */
  maxQueue?: number;
  /** Sequences decoded together. Default 8. */
  maxBatch?: number;
  /** Prompt tokens prefilled per step. Default 512. */
  prefillChunk?: number;
  /** Memory cap in bytes of the prefix cache (KV of earlier prompts and replies reused by later requests); off when absent. */
  prefixCacheBytes?: number;
  /** Request body limit in bytes (HTTP bodies and WebSocket messages). Default 1 MiB. */
  maxBodyBytes?: number;
  /** Largest max_tokens a request may ask for, and the default. Default: the context length. */
  maxTokens?: number;
  /** Context limit (prompt + output). Default: the model's max_position_embeddings. */
  contextLength?: number;
  /** Interval of WebSocket ping frames; a socket that misses one pong is closed. Default 30 s. */
  wsPingIntervalMs?: number;
  /** Serve the chat page at `/`. Default true. */
  webPage?: boolean;
  /** Serve this directory (the built studio app, `apps/studio/dist`) under `/studio`, cross-origin isolated. Default none. */
  studioDir?: string | null;
  /** Origins allowed to call the API from a browser (CORS); `*` for any. Default none (same origin only). */
  corsOrigins?: readonly string[];
  /** Host names accepted besides loopback ones while bound to a loopback address (DNS-rebinding protection). */
  allowedHosts?: readonly string[];
  /** Called with one line per finished HTTP request and lifecycle event. */
  log?: (line: string) => void;
}

/** Everything a request handler needs; shared with the WebSocket endpoint. */
export interface ServerContext {
  /** The options the server was created with. */
  readonly options: ServerOptions;
  /** The server's metrics. */
  readonly metrics: ServerMetrics;
  /** Origin / Host checks (HTTP and WebSocket). */
  readonly guard: OriginGuard;
  /** Model, scheduler and limits; throws ApiError 503 while loading, after a failed load, or when closing. */
  state(): { served: ServedModel; scheduler: Scheduler; limits: RequestLimits };
  /** True once close() was called. */
  readonly closing: boolean;
}
