// The HTTP server: OpenAI routes, health, metrics, tokenizer routes, the chat page, and the
// WebSocket endpoint on the same port. Node's `http` module only; `ws` for WebSockets.
//
//   GET  /                      built-in chat page
//   GET  /health                200 {"status":"ok","device":"cpu","adapter":null}, 503 with the load's progress while the model loads
//   GET  /metrics               Prometheus text
//   GET  /v1/models[/ID]        the served model
//   POST /v1/chat/completions   chat (Apertus template, tools, reasoning), SSE or JSON
//   POST /v1/completions        raw completions, SSE or JSON
//   POST /v1/responses          the Responses API over the chat template, SSE or JSON
//   POST /v1/embeddings         pooled final hidden states
//   POST /tokenize, /detokenize
//   GET  /v1/ws                 WebSocket (see ws.ts)
//
// Requests may name any model (or none): the one served answers and every response says which.

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { LoadProgress } from '@apertus/model';
import { currentDevice } from '@apertus/tensor';
import { ApiError, toApiError } from './api-error';
import type { ServerContext, ServerOptions } from './context';
import { Embedder } from './embedder';
import { embeddingsResponse, prepareEmbeddings } from './embeddings-api';
import { EngineError, ListenError } from './errors';
import { guardConnections, httpServerOptions, requestLineError, tooSlow } from './http-guard';
import { checkBearer, parseJsonBody, readBody, requireJson, sendError, sendJson, sseData, sseEvent, startSse } from './http-util';
import type { ServedModel } from './load';
import { ServerMetrics } from './metrics';
import { isLoopbackHost, OriginGuard } from './origin-guard';
import { prepareChat, prepareCompletion, prepareDetokenize, prepareTokenize, type RequestLimits } from './requests';
import { collectResponse, prepareResponse, streamResponse } from './responses-api';
import { collectChat, collectCompletion, streamChat, streamCompletion, type Running, type StreamSink } from './run';
import { Scheduler, type Timings, type Usage } from './scheduler';
import { sendServedModel, sendStaticFile } from './static-site';
import { chatPage } from './web-page';
import { attachWebSocket, type WebSocketEndpoint } from './ws';

export type { ServerContext, ServerOptions } from './context';

/** Options of {@link ApertusServer.close}. */
export interface CloseOptions {
  /** 'finish': let in-flight generations end (up to `timeoutMs`), 'cancel': stop them now. Default 'finish'. */
  mode?: 'finish' | 'cancel';
  /** How long 'finish' waits before cancelling what is left. Default 30 s. */
  timeoutMs?: number;
}

/** A running (or not yet listening) server. */
export interface ApertusServer {
  /** Start listening; resolves with the base URL, rejects with ListenError. Default host 127.0.0.1 (localhost only), port 8080. */
  listen(port?: number, host?: string): Promise<string>;
  /** Base URL (`http://127.0.0.1:8080`), '' before `listen`. */
  readonly url: string;
  /**
   * Graceful shutdown: refuse new requests (503), finish or cancel in-flight generations (cancelled
   * streams get a mid-stream `server_shutdown` error), close WebSockets (1001), stop listening.
   */
  close(options?: CloseOptions): Promise<void>;
  /** Resolves when the model is loaded; rejects when loading failed. */
  readonly ready: Promise<ServedModel>;
  /** The metrics served at /metrics. */
  readonly metrics: ServerMetrics;
  /** The scheduler, once the model is loaded. */
  readonly scheduler: Scheduler | null;
  /** The underlying Node server. */
  readonly httpServer: http.Server;
}

const GENERATE = new Set(['/v1/chat/completions', '/v1/completions', '/v1/responses']);
const POST = new Set([...GENERATE, '/v1/embeddings', '/tokenize', '/detokenize']);
const ROUTES = new Set(['/', '/favicon.ico', '/health', '/v1/health', '/metrics', '/v1/models', ...POST]);

function newId(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString('hex')}`;
}

function routeOf(path: string): string {
  return ROUTES.has(path) ? path : path.startsWith('/v1/models/') ? '/v1/models/:id' : path.startsWith('/studio') ? '/studio' : 'other';
}

/** The request log's account of a generation: `prompt 132 (120 cached), 48 tokens, 31.2 tok/s`. */
function generationNote(usage: Usage, t: Timings): string {
  return `prompt ${usage.promptTokens}${usage.cachedTokens > 0 ? ` (${usage.cachedTokens} cached)` : ''} ${t.prompt_ms.toFixed(0)}ms, ${usage.completionTokens} tokens ${t.predicted_ms.toFixed(0)}ms, ${t.predicted_per_second.toFixed(1)} tok/s`;
}

/** The model to load: a value, a promise, or a function given the progress callback. */
function startLoading(model: ServerOptions['model'], onProgress: (p: LoadProgress) => void): Promise<ServedModel> {
  try {
    return Promise.resolve(typeof model === 'function' ? model(onProgress) : model);
  } catch (e) {
    return Promise.reject(e);
  }
}

/**
 * Create the server (not listening yet). The model may still be loading: until `options.model`
 * resolves, /health and every API route answer 503 `model_loading` (/health with the progress).
 */
export function createServer(options: ServerOptions): ApertusServer {
  const metrics = new ServerMetrics();
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  let loaded: { served: ServedModel; scheduler: Scheduler; limits: RequestLimits; embedder: Embedder } | null = null;
  let loadError: Error | null = null;
  let progress: LoadProgress | null = null;
  let closing = false;
  let closePromise: Promise<void> | null = null;
  let url = '';
  const inflight = new Set<ServerResponse>();
  const notes = new WeakMap<ServerResponse, string>();
  const log = options.log ?? (() => {});
  const guard = new OriginGuard({ corsOrigins: options.corsOrigins ?? [], allowedHosts: options.allowedHosts ?? [] });

  const ready = startLoading(options.model, (p) => {
    progress = p;
    metrics.loadProgress.set(p.totalBytes > 0 ? p.loadedBytes / p.totalBytes : 0);
  }).then(
    (served) => {
      const prefixCacheBytes = options.prefixCacheBytes ?? undefined;
      const scheduler = new Scheduler(served, {
        maxBatch: options.maxBatch, maxQueue: options.maxQueue, prefillChunk: options.prefillChunk, contextLength: options.contextLength, metrics,
        ...(options.kvCacheType !== undefined ? { kvCacheType: options.kvCacheType } : {}),
        ...(prefixCacheBytes !== undefined ? { prefixCacheBytes } : {}),
      });
      const limits: RequestLimits = { served, contextLength: scheduler.contextLength, maxTokens: Math.min(options.maxTokens ?? scheduler.contextLength, scheduler.contextLength), maxN: scheduler.maxBatch };
      loaded = { served, scheduler, limits, embedder: new Embedder(served.model, { chunk: options.prefillChunk ?? 512 }) };
      metrics.modelLoaded.set(1);
      metrics.loadProgress.set(1);
      const cache = scheduler.prefixCache ? `${(scheduler.prefixCache.maxBytes / 2 ** 20).toFixed(0)} MiB` : 'off';
      log(`model '${served.name}' loaded (context ${scheduler.contextLength}, batch ${scheduler.maxBatch}, queue ${scheduler.maxQueue}, prefix cache ${cache})`);
      return served;
    },
    (e: unknown) => {
      loadError = e instanceof Error ? e : new Error(String(e));
      log(`model failed to load: ${loadError.message}`);
      throw loadError;
    },
  );
  ready.catch(() => {});

  const ctx: ServerContext = {
    options,
    metrics,
    guard,
    get closing() {
      return closing;
    },
    state() {
      if (closing) throw new ApiError(503, 'the server is shutting down', 'unavailable_error', null, 'server_shutdown');
      if (loadError) throw new ApiError(503, `the model failed to load: ${loadError.message}`, 'unavailable_error', null, 'model_load_failed');
      if (!loaded) {
        const p = progress as LoadProgress | null;
        const done = p && p.totalBytes > 0 ? ` (${((100 * p.loadedBytes) / p.totalBytes).toFixed(0)} % of ${(p.totalBytes / 2 ** 20).toFixed(0)} MiB)` : '';
        throw new ApiError(503, `Loading model${done}`, 'unavailable_error', null, 'model_loading');
      }
      return loaded;
    },
  };

  const authorized = (req: IncomingMessage): boolean => !options.apiKey || checkBearer(req.headers.authorization, options.apiKey);

  /** The chat page, with a per-response nonce for its script and style. */
  function sendChatPage(res: ServerResponse): void {
    const nonce = randomBytes(16).toString('base64');
    const html = chatPage(nonce, loaded?.served.name ?? null);
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'content-length': Buffer.byteLength(html),
      'content-security-policy': `default-src 'self'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; frame-ancestors 'none'`,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    });
    res.end(html);
  }

  /** /health: 200 once loaded; 503 with the load's progress before. */
  function sendHealth(res: ServerResponse): void {
    try {
      ctx.state();
    } catch (e) {
      const err = toApiError(e);
      const p = progress as LoadProgress | null;
      const extra = err.code === 'model_loading' ? { status: 'loading', progress: p && p.totalBytes > 0 ? p.loadedBytes / p.totalBytes : 0, loaded_bytes: p?.loadedBytes ?? 0, total_bytes: p?.totalBytes ?? null } : {};
      sendJson(res, err.status, { ...err.toBody(), ...extra }, { 'retry-after': '1' });
      return;
    }
    const { device, adapter } = currentDevice();
    sendJson(res, 200, { status: 'ok', device, adapter });
  }

  /** A generation route (chat, completions, responses), streamed or whole. */
  function generate(res: ServerResponse, path: string, body: unknown): Promise<void> | void {
    const { scheduler, limits } = ctx.state();
    const kind = path === '/v1/chat/completions' ? 'chat' : path === '/v1/completions' ? 'completions' : 'responses';
    const note = (usage: Usage, t: Timings) => notes.set(res, generationNote(usage, t));
    let ended = false;
    let running: Running;
    const cancelOnClose = () => res.on('close', () => {
      if (!ended) running.cancel();
    });
    if (kind === 'responses') {
      const prep = prepareResponse(body, limits);
      const meta = { id: newId('resp'), created: Math.floor(Date.now() / 1000), model: limits.served.name };
      if (prep.stream) {
        running = streamResponse(scheduler, prep, meta, {
          event: (e) => {
            if (!ended && tooSlow(res)) {
              ended = true;
              running.cancel();
              res.destroy();
            } else if (!ended) sseEvent(res, e.type, e);
          },
          end: (usage, t) => {
            ended = true;
            if (usage && t) note(usage, t);
            res.end();
          },
        }, () => startSse(res, { 'x-request-id': meta.id }));
        cancelOnClose();
        return;
      }
      const collected = collectResponse(scheduler, prep, meta);
      running = collected;
      cancelOnClose();
      return collected.result.then(({ response, usage, timings }) => {
        ended = true;
        note(usage, timings);
        sendJson(res, 200, response, { 'x-request-id': meta.id });
      }, (e: unknown) => {
        ended = true;
        throw e;
      });
    }
    const chat = kind === 'chat';
    const prep = chat ? prepareChat(body, limits) : prepareCompletion(body, limits);
    const meta = { id: newId(chat ? 'chatcmpl' : 'cmpl'), created: Math.floor(Date.now() / 1000), model: prep.model, includeUsage: prep.includeUsage };
    if (prep.stream) {
      const sink: StreamSink<unknown> = {
        chunk: (c) => {
          if (ended) return;
          if (tooSlow(res)) {
            ended = true;
            running.cancel();
            res.destroy();
            return;
          }
          sseData(res, c);
        },
        done: (usage, _reasons, t) => {
          note(usage, t);
          ended = true;
          sseData(res, '[DONE]');
          res.end();
        },
        error: (e) => {
          ended = true;
          sseData(res, e.toBody());
          sseData(res, '[DONE]');
          res.end();
        },
      };
      const headers = () => startSse(res, { 'x-request-id': meta.id });
      running = chat ? streamChat(scheduler, prep as ReturnType<typeof prepareChat>, meta, sink, headers) : streamCompletion(scheduler, prep as ReturnType<typeof prepareCompletion>, meta, sink, headers);
      cancelOnClose();
      return;
    }
    const collected = chat ? collectChat(scheduler, prep as ReturnType<typeof prepareChat>, meta) : collectCompletion(scheduler, prep as ReturnType<typeof prepareCompletion>, meta);
    running = collected;
    cancelOnClose();
    return (collected.result as Promise<{ usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } }; timings?: Timings }>).then((result) => {
      ended = true;
      if (result.timings) note({ promptTokens: result.usage.prompt_tokens, cachedTokens: result.usage.prompt_tokens_details.cached_tokens, completionTokens: result.usage.completion_tokens }, result.timings);
      sendJson(res, 200, result, { 'x-request-id': meta.id });
    }, (e: unknown) => {
      ended = true;
      throw e;
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const method = req.method ?? 'GET';
    const needsAuth = path.startsWith('/v1/') || path === '/tokenize' || path === '/detokenize';
    if (needsAuth && path !== '/v1/health' && !authorized(req)) {
      throw new ApiError(401, options.apiKey && req.headers.authorization ? 'Incorrect API key provided.' : 'Missing API key: send Authorization: Bearer <key>.', 'authentication_error', null, 'invalid_api_key');
    }
    const expect = (m: string) => {
      if (method !== m) throw new ApiError(405, `${method} is not allowed on ${path} (use ${m})`, 'invalid_request_error', null, 'method_not_allowed');
    };
    if (options.studioDir && (path === '/studio' || path.startsWith('/studio/'))) {
      expect('GET');
      if (path.startsWith('/studio/served')) {
        // The model's weights: behind the API key when there is one.
        if (!authorized(req)) throw new ApiError(401, 'Missing or incorrect API key.', 'authentication_error', null, 'invalid_api_key');
        if (sendServedModel(res, ctx.state().served, '/studio', path)) return;
      }
      sendStaticFile(res, options.studioDir, '/studio', path);
      return;
    }
    if (path === '/' && options.webPage !== false) {
      expect('GET');
      sendChatPage(res);
      return;
    }
    if (path === '/favicon.ico') {
      res.writeHead(204, { 'cache-control': 'max-age=86400' });
      res.end();
      return;
    }
    if (path === '/health' || path === '/v1/health') {
      expect('GET');
      sendHealth(res);
      return;
    }
    if (path === '/metrics') {
      expect('GET');
      const text = metrics.render();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    if (path === '/v1/models' || path.startsWith('/v1/models/')) {
      expect('GET');
      const { served, limits } = ctx.state();
      const card = { id: served.name, object: 'model', created: served.created, owned_by: 'apertus', max_model_len: limits.contextLength };
      if (path === '/v1/models') sendJson(res, 200, { object: 'list', data: [card] });
      else {
        let id: string;
        try {
          id = decodeURIComponent(path.slice('/v1/models/'.length));
        } catch {
          throw new ApiError(400, `malformed model id in ${path}`, 'invalid_request_error', 'model', 'bad_path');
        }
        if (id !== served.name) throw new ApiError(404, `The model '${id}' does not exist. This server serves '${served.name}'.`, 'not_found_error', 'model', 'model_not_found');
        sendJson(res, 200, card);
      }
      return;
    }
    if (!POST.has(path)) throw new ApiError(404, `no route ${method} ${path}`, 'not_found_error', null, 'not_found');
    expect('POST');
    requireJson(req);
    const body = parseJsonBody(await readBody(req, maxBody));
    const { served, limits, embedder } = ctx.state();
    if (path === '/tokenize') {
      const tokens = prepareTokenize(body, served);
      sendJson(res, 200, { tokens, count: tokens.length, max_model_len: limits.contextLength });
      return;
    }
    if (path === '/detokenize') {
      sendJson(res, 200, { prompt: prepareDetokenize(body, served) });
      return;
    }
    if (path === '/v1/embeddings') {
      const prep = prepareEmbeddings(body, limits);
      const started = performance.now();
      const vectors = await embedder.embed(prep.inputs, options.embeddingPooling ?? 'mean');
      const tokens = prep.inputs.reduce((n, x) => n + x.length, 0);
      notes.set(res, `${prep.inputs.length} inputs, ${tokens} tokens, ${((tokens * 1000) / (performance.now() - started)).toFixed(1)} tok/s`);
      sendJson(res, 200, embeddingsResponse(vectors, prep, served.name));
      return;
    }
    await generate(res, path, body);
  }

  const httpServer = http.createServer(httpServerOptions(limits()), (req, res) => {
    if (refusedAtCap(req.socket)) {
      res.destroy();
      return;
    }
    const started = performance.now();
    const path = (req.url ?? '/').split('?')[0]!;
    const route = routeOf(path);
    inflight.add(res);
    res.on('close', () => {
      inflight.delete(res);
      metrics.requests.inc({ route, status: String(res.statusCode) });
      const note = notes.get(res);
      log(`${req.method} ${path.length > 200 ? `${path.slice(0, 200)}…` : path} ${res.statusCode} ${(performance.now() - started).toFixed(1)}ms${note ? ` ${note}` : ''}`);
    });
    // A URL or header count over the limits: answered before anything reads them, and the connection closed.
    const lineError = requestLineError(req);
    if (lineError) {
      sendError(res, lineError, { connection: 'close' });
      return;
    }
    const refused = guard.check(req.headers);
    if (refused) {
      req.resume();
      sendError(res, refused);
      return;
    }
    for (const [k, v] of Object.entries(guard.corsHeaders(req.headers))) res.setHeader(k, v);
    if (req.method === 'OPTIONS') {
      req.resume();
      if (req.headers['access-control-request-method'] === undefined) {
        res.writeHead(204, { allow: 'GET, POST, OPTIONS' }).end();
        return;
      }
      const headers = guard.preflight(req.headers);
      if (headers) res.writeHead(204, headers).end();
      else sendError(res, new ApiError(403, `Origin '${req.headers.origin ?? ''}' is not allowed to call this server cross-origin (see --cors-origin)`, 'invalid_request_error', null, 'origin_not_allowed'));
      return;
    }
    if (closing) {
      req.resume();
      sendError(res, new ApiError(503, 'the server is shutting down', 'unavailable_error', null, 'server_shutdown'), { connection: 'close' });
      return;
    }
    handle(req, res, path).catch((e: unknown) => {
      const err = toApiError(e);
      if (res.headersSent) {
        if (!res.writableEnded) {
          sseData(res, err.toBody());
          sseData(res, '[DONE]');
          res.end();
        }
        return;
      }
      // A body that is not read (refused before or while reading it) is not drained: the connection closes after the answer.
      const unread = !req.complete;
      if (!unread) req.resume();
      sendError(res, err, unread ? { connection: 'close' } : {});
    });
  });
  const refusedAtCap = guardConnections(httpServer, limits(), (status) => metrics.requests.inc({ route: 'connection', status: String(status) }));

  function limits() {
    return { maxConnections: options.maxConnections ?? 256, headersTimeoutMs: options.headersTimeoutMs ?? 10_000, requestTimeoutMs: options.requestTimeoutMs ?? 30_000 };
  }

  const ws: WebSocketEndpoint = attachWebSocket(httpServer, ctx, { maxPayload: maxBody, pingIntervalMs: options.wsPingIntervalMs ?? 30_000 });

  return {
    get url() {
      return url;
    },
    ready,
    metrics,
    get scheduler() {
      return loaded?.scheduler ?? null;
    },
    httpServer,
    listen(port = 8080, host = '127.0.0.1') {
      return new Promise((resolve, reject) => {
        const onError = (e: NodeJS.ErrnoException) => {
          const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
          const why: Record<string, string> = {
            EADDRINUSE: 'the port is in use (another server is running there; pick another --port)',
            EACCES: 'permission denied (ports below 1024 need privileges; pick another --port)',
            EADDRNOTAVAIL: 'this machine has no such address (check --host)',
            ENOTFOUND: 'the host name does not resolve (check --host)',
          };
          reject(new ListenError(address, e.code ?? null, why[e.code ?? ''] ?? e.message, { cause: e }));
        };
        httpServer.once('error', onError);
        httpServer.listen(port, host, () => {
          httpServer.off('error', onError);
          const a = httpServer.address() as AddressInfo;
          const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
          guard.loopback = isLoopbackHost(a.address);
          url = `http://${h}:${a.port}`;
          log(`listening on ${url}`);
          resolve(url);
        });
      });
    },
    close(opts: CloseOptions = {}) {
      if (closePromise) return closePromise;
      closing = true;
      closePromise = (async () => {
        const stopped = new Promise<void>((r) => (httpServer.listening ? httpServer.close(() => r()) : r()));
        httpServer.closeIdleConnections();
        ws.stopAccepting();
        const shutdown = new EngineError('shutdown', 'the server is shutting down');
        const current = loaded as { scheduler: Scheduler; embedder: Embedder } | null;
        if (current) {
          if ((opts.mode ?? 'finish') === 'finish') {
            let timer: NodeJS.Timeout | undefined;
            await Promise.race([Promise.all([current.scheduler.idle(), current.embedder.idle()]), new Promise<void>((r) => (timer = setTimeout(r, opts.timeoutMs ?? 30_000)))]);
            clearTimeout(timer);
          }
          current.scheduler.cancelAll(shutdown);
          current.embedder.cancelAll(shutdown);
        }
        // Let the responses that just ended reach their clients, then drop what is left.
        const deadline = Date.now() + 1000;
        while (inflight.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        await ws.close();
        httpServer.closeAllConnections();
        await stopped;
        log('server closed');
      })();
      return closePromise;
    },
  };
}
