// What the HTTP routes and the WebSocket endpoint share: the server's options and the context a
// request handler reads (metrics, the Origin/Host guard, the loaded model). Its own file, so the
// transports import it without importing each other.

import type { LoadProgress } from '@apertus/model';
import type { Embedder } from './embedder';
import type { ServedModel } from './load';
import type { ServerMetrics } from './metrics';
import type { OriginGuard } from './origin-guard';
import type { RequestLimits } from './requests';
import type { Scheduler } from './scheduler';

/** Options of `createServer`. */
export interface ServerOptions {
  /**
   * The model to serve, a promise of it, or a function that starts loading it and reports progress
   * (the server answers 503 on /health, with the progress, until it resolves).
   */
  model: ServedModel | Promise<ServedModel> | ((onProgress: (p: LoadProgress) => void) => Promise<ServedModel>);
  /** Require `Authorization: Bearer KEY` on /v1/*, /tokenize, /detokenize and the WebSocket. */
  apiKey?: string | null;
  /** Requests waiting for a batch slot before 429. Default 64. */
  maxQueue?: number;
  /** Sequences decoded together. Default 8. */
  maxBatch?: number;
  /** Prompt tokens prefilled per step. Default 512. */
  prefillChunk?: number;
  /** Element type of the KV cache: 'f32' (default) or 'f16' (half the memory; cpu device). */
  kvCacheType?: 'f32' | 'f16';
  /**
   * Memory cap in bytes of the prefix cache (KV of earlier prompts and replies reused by later
   * requests), or 'auto' (the weights' size, at most an eighth of the machine's memory); off when absent or null.
   */
  prefixCacheBytes?: number | 'auto' | null;
  /** Request body limit in bytes (HTTP bodies and WebSocket messages). Default 1 MiB. */
  maxBodyBytes?: number;
  /** Open connections at once; the next one is answered 503 and closed. Default 256. */
  maxConnections?: number;
  /** Time for a request's headers to arrive. Default 10 s. */
  headersTimeoutMs?: number;
  /** Time for a whole request (headers and body) to arrive. Default 30 s. */
  requestTimeoutMs?: number;
  /** `/v1/embeddings`: mean of the final hidden states over the input's tokens, or the last token's. Default 'mean'. */
  embeddingPooling?: 'mean' | 'last';
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
  state(): { served: ServedModel; scheduler: Scheduler; limits: RequestLimits; embedder: Embedder };
  /** True once close() was called. */
  readonly closing: boolean;
}
