// The HTTP server: OpenAI routes, health, metrics, tokenizer routes, the chat page, and the
// WebSocket endpoint on the same port. Node's `http` module only; `ws` for WebSockets.
//
//   GET  /                      built-in chat page
//   GET  /health                200 {"status":"ok","device":"cpu","adapter":null}, 503 while the model loads
//   GET  /metrics               Prometheus text
//   GET  /v1/models[/ID]        the served model
//   POST /v1/chat/completions   chat (Apertus template, tools, reasoning), SSE or JSON
//   POST /v1/completions        raw completions, SSE or JSON
//   POST /tokenize, /detokenize
//   GET  /v1/ws                 WebSocket (see ws.ts)

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { currentDevice } from '@apertus/tensor';
import { ApiError, toApiError } from './api-error';
import { EngineError } from './errors';
import { checkBearer, parseJsonBody, readBody, requireJson, sendError, sendJson, sseData, startSse } from './http-util';
import type { ServedModel } from './load';
import { ServerMetrics } from './metrics';
import { isLoopbackHost, OriginGuard } from './origin-guard';
import { prepareChat, prepareCompletion, prepareDetokenize, prepareTokenize, type RequestLimits } from './requests';
import { collectChat, collectCompletion, streamChat, streamCompletion, type Running, type StreamSink } from './run';
import { Scheduler } from './scheduler';
import { sendStaticFile } from './static-site';
import { chatPage } from './web-page';
import { attachWebSocket, type WebSocketEndpoint } from './ws';
import type { ServerContext, ServerOptions } from './context';

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
  /** Start listening; resolves with the base URL. Default host 127.0.0.1 (localhost only), port 8080. */
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

const ROUTES = new Set(['/', '/favicon.ico', '/health', '/v1/health', '/metrics', '/v1/models', '/v1/chat/completions', '/v1/completions', '/tokenize', '/detokenize']);

function newId(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString('hex')}`;
}

/**
 * Create the server (not listening yet). The model may still be loading: until `options.model`
 * resolves, /health and every API route answer 503 `model_loading`.
 */
export function createServer(options: ServerOptions): ApertusServer {
  const metrics = new ServerMetrics();
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  let loaded: { served: ServedModel; scheduler: Scheduler; limits: RequestLimits } | null = null;
  let loadError: Error | null = null;
  let closing = false;
  let closePromise: Promise<void> | null = null;
  let url = '';
  const inflight = new Set<ServerResponse>();
  const log = options.log ?? (() => {});
  const guard = new OriginGuard({ corsOrigins: options.corsOrigins ?? [], allowedHosts: options.allowedHosts ?? [] });

  const ready = Promise.resolve(options.model).then(
    (served) => {
      const scheduler = new Scheduler(served, {
        maxBatch: options.maxBatch, maxQueue: options.maxQueue, prefillChunk: options.prefillChunk, contextLength: options.contextLength, metrics,
        ...(options.prefixCacheBytes !== undefined ? { prefixCacheBytes: options.prefixCacheBytes } : {}),
      });
      const limits: RequestLimits = { served, contextLength: scheduler.contextLength, maxTokens: Math.min(options.maxTokens ?? scheduler.contextLength, scheduler.contextLength), maxN: scheduler.maxBatch };
      loaded = { served, scheduler, limits };
      metrics.modelLoaded.set(1);
      log(`model '${served.name}' loaded (context ${scheduler.contextLength}, batch ${scheduler.maxBatch}, queue ${scheduler.maxQueue}, prefix cache ${scheduler.prefixCache ? `${options.prefixCacheBytes! / 2 ** 20} MiB` : 'off'})`);
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
      if (!loaded) throw new ApiError(503, 'Loading model', 'unavailable_error', null, 'model_loading');
      return loaded;
    },
  };

  const authorized = (req: IncomingMessage): boolean => !options.apiKey || checkBearer(req.headers.authorization, options.apiKey);

  async function handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const method = req.method ?? 'GET';
    const needsAuth = path.startsWith('/v1/') || path === '/tokenize' || path === '/detokenize';
    if (needsAuth && path !== '/v1/health' && !authorized(req)) {
      req.resume();
      throw new ApiError(401, options.apiKey && req.headers.authorization ? 'Incorrect API key provided.' : 'Missing API key: send Authorization: Bearer <key>.', 'authentication_error', null, 'invalid_api_key');
    }
    const expect = (m: string) => {
      if (method !== m) {
        req.resume();
        throw new ApiError(405, `${method} is not allowed on ${path} (use ${m})`, 'invalid_request_error', null, 'method_not_allowed');
      }
    };
    if (options.studioDir && (path === '/studio' || path.startsWith('/studio/'))) {
      expect('GET');
      sendStaticFile(res, options.studioDir, '/studio', path);
      return;
    }
    if (path === '/' && options.webPage !== false) {
      expect('GET');
      const nonce = randomBytes(16).toString('base64');
      const html = chatPage(nonce);
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-length': Buffer.byteLength(html),
        'content-security-policy': `default-src 'self'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; frame-ancestors 'none'`,
        'x-content-type-options': 'nosniff',
      });
      res.end(html);
      return;
    }
    if (path === '/favicon.ico') {
      res.writeHead(204, { 'cache-control': 'max-age=86400' });
      res.end();
      return;
    }
    if (path === '/health' || path === '/v1/health') {
      expect('GET');
      ctx.state();
      const { device, adapter } = currentDevice();
      sendJson(res, 200, { status: 'ok', device, adapter });
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
        const id = decodeURIComponent(path.slice('/v1/models/'.length));
        if (id !== served.name) throw new ApiError(404, `The model '${id}' does not exist.`, 'not_found_error', 'model', 'model_not_found');
        sendJson(res, 200, card);
      }
      return;
    }
    const post = ['/v1/chat/completions', '/v1/completions', '/tokenize', '/detokenize'];
    if (!post.includes(path)) {
      req.resume();
      throw new ApiError(404, `no route ${method} ${path}`, 'not_found_error', null, 'not_found');
    }
    expect('POST');
    requireJson(req);
    const body = parseJsonBody(await readBody(req, maxBody));
    const { served, scheduler, limits } = ctx.state();
    if (path === '/tokenize') {
      const tokens = prepareTokenize(body, served);
      sendJson(res, 200, { tokens, count: tokens.length, max_model_len: limits.contextLength });
      return;
    }
    if (path === '/detokenize') {
      sendJson(res, 200, { prompt: prepareDetokenize(body, served) });
      return;
    }
    const chat = path === '/v1/chat/completions';
    const prep = chat ? prepareChat(body, limits) : prepareCompletion(body, limits);
    const meta = { id: newId(chat ? 'chatcmpl' : 'cmpl'), created: Math.floor(Date.now() / 1000), model: prep.model, includeUsage: prep.includeUsage };
    let running: Running;
    if (prep.stream) {
      let ended = false;
      const sink: StreamSink<unknown> = {
        chunk: (c) => sseData(res, c),
        done: () => {
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
      res.on('close', () => {
        if (!ended) running.cancel();
      });
      return;
    }
    const collected = chat ? collectChat(scheduler, prep as ReturnType<typeof prepareChat>, meta) : collectCompletion(scheduler, prep as ReturnType<typeof prepareCompletion>, meta);
    let ended = false;
    res.on('close', () => {
      if (!ended) collected.cancel();
    });
    try {
      const result = await collected.result;
      ended = true;
      sendJson(res, 200, result, { 'x-request-id': meta.id });
    } finally {
      ended = true;
    }
  }

  const httpServer = http.createServer((req, res) => {
    const started = performance.now();
    const path = (req.url ?? '/').split('?')[0]!;
    const route = ROUTES.has(path) ? path : path.startsWith('/v1/models/') ? '/v1/models/:id' : path.startsWith('/studio') ? '/studio' : 'other';
    inflight.add(res);
    res.on('close', () => {
      inflight.delete(res);
      metrics.requests.inc({ route, status: String(res.statusCode) });
      log(`${req.method} ${path} ${res.statusCode} ${(performance.now() - started).toFixed(1)}ms`);
    });
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
      } else sendError(res, err);
    });
  });
  httpServer.on('clientError', (err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy(err);
  });

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
        const onError = (e: Error) => reject(e);
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
        const scheduler = loaded?.scheduler;
        if (scheduler) {
          if ((opts.mode ?? 'finish') === 'finish') {
            let timer: NodeJS.Timeout | undefined;
            await Promise.race([scheduler.idle(), new Promise<void>((r) => (timer = setTimeout(r, opts.timeoutMs ?? 30_000)))]);
            clearTimeout(timer);
          }
          scheduler.cancelAll(shutdown);
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
