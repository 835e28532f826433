// WebSocket endpoint `GET /v1/ws` on the HTTP server's port (ecosystem.md §2.4 proposal).
//
// Client → server (JSON text messages):
//   {"type":"generate","id":"a1","endpoint":"chat"|"completions", ...request body fields}
//   {"type":"cancel","id":"a1"}
//   {"type":"ping"}                                   (application-level, for browsers)
// Server → client:
//   {"type":"chunk","id":"a1","chunk":{...chat.completion.chunk | text_completion chunk}}
//   {"type":"done","id":"a1","finish_reason":"stop","choices":[{"index":0,"finish_reason":"stop"}],"usage":{...}}
//   {"type":"error","id":"a1"|null,"error":{"message","type","param","code"}}
//   {"type":"pong"}
// The chunk is exactly the SSE chunk, so one parser serves both transports. Any number of
// generations may run on one socket; `id` (string or number, unique among the socket's running
// generations) ties messages together. The server sends ping frames and closes sockets that miss a
// pong. Closing the socket cancels its generations.

import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { ApiError, toApiError } from './api-error';
import { endWithError, MAX_BUFFERED_BYTES } from './http-guard';
import { checkBearer, checkDepth, sameSecret } from './http-util';
import { prepareChat, prepareCompletion } from './requests';
import { openAIUsage } from './responses';
import { streamChat, streamCompletion, type Running, type StreamSink } from './run';
import type { ServerContext } from './context';

/** Control over the WebSocket endpoint (used by the server's shutdown). */
export interface WebSocketEndpoint {
  /** Refuse new connections (503). */
  stopAccepting(): void;
  /** Close every socket with code 1001 (generations were cancelled by the caller before). */
  close(): Promise<void>;
}

/** Path of the WebSocket endpoint. */
export const WS_PATH = '/v1/ws';

/** Attach the WebSocket endpoint to `server` (handles its 'upgrade' events). */
export function attachWebSocket(server: Server, ctx: ServerContext, opts: { maxPayload: number; pingIntervalMs: number }): WebSocketEndpoint {
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxPayload });
  let accepting = true;
  const alive = new WeakMap<WebSocket, boolean>();

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      return endWithError(socket, new ApiError(400, 'malformed request URL', 'invalid_request_error', null, 'bad_request'));
    }
    if (url.pathname !== WS_PATH) return endWithError(socket, new ApiError(404, `no WebSocket endpoint at ${url.pathname} (use ${WS_PATH})`, 'not_found_error', null, 'not_found'));
    const refused = ctx.guard.check(req.headers);
    if (refused) {
      ctx.metrics.requests.inc({ route: WS_PATH, status: '403' });
      return endWithError(socket, refused);
    }
    if (!accepting || ctx.closing) return endWithError(socket, new ApiError(503, 'the server is shutting down', 'unavailable_error', null, 'server_shutdown'));
    const key = ctx.options.apiKey;
    if (key) {
      const q = url.searchParams.get('api_key');
      if (!checkBearer(req.headers.authorization, key) && !(q !== null && sameSecret(q, key))) {
        ctx.metrics.requests.inc({ route: WS_PATH, status: '401' });
        return endWithError(socket, new ApiError(401, 'Incorrect or missing API key.', 'authentication_error', null, 'invalid_api_key'));
      }
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      ctx.metrics.requests.inc({ route: WS_PATH, status: '101' });
      connection(ws);
    });
  });

  // Liveness: every interval, sockets that did not answer the previous ping are dropped, then
  // the rest are pinged. The check runs after the event loop's I/O phase (setImmediate), so pongs
  // that already arrived are counted; a round in which the timer itself fired late (the loop was
  // busy with a long model step) is skipped, so a busy server never blames its clients.
  let lastTick = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    const late = now - lastTick - opts.pingIntervalMs;
    lastTick = now;
    if (late > opts.pingIntervalMs / 2) return;
    setImmediate(() => {
      for (const ws of wss.clients) {
        if (alive.get(ws) === false) {
          ws.terminate();
          continue;
        }
        alive.set(ws, false);
        ws.ping();
      }
    });
  }, opts.pingIntervalMs);
  timer.unref();

  function connection(ws: WebSocket): void {
    const running = new Map<string, Running>();
    alive.set(ws, true);
    ws.on('pong', () => alive.set(ws, true));
    const send = (msg: unknown) => {
      if (ws.readyState !== ws.OPEN) return;
      // A reader that stopped reading: drop it rather than buffer its output without end.
      if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
        ws.terminate();
        return;
      }
      ws.send(JSON.stringify(msg));
    };
    const sendError = (id: unknown, e: ApiError) => send({ type: 'error', id: id ?? null, error: e.toBody().error });

    ws.on('message', (data, isBinary) => {
      alive.set(ws, true);
      let msg: unknown;
      try {
        if (isBinary) throw new Error('binary messages are not supported');
        msg = JSON.parse(data.toString());
      } catch (e) {
        sendError(null, new ApiError(400, `the message is not valid JSON: ${(e as Error).message}`, 'invalid_request_error', null, 'invalid_json'));
        return;
      }
      try {
        checkDepth(msg);
      } catch (e) {
        const id = msg !== null && typeof msg === 'object' && !Array.isArray(msg) ? (msg as Record<string, unknown>).id : null;
        sendError(typeof id === 'string' || typeof id === 'number' ? id : null, toApiError(e));
        return;
      }
      if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) {
        sendError(null, new ApiError(400, 'a message must be a JSON object with a "type"', 'invalid_request_error', 'type'));
        return;
      }
      const m = msg as Record<string, unknown>;
      const id = m.id;
      const key = typeof id === 'string' || typeof id === 'number' ? String(id) : null;
      switch (m.type) {
        case 'ping':
          send({ type: 'pong' });
          return;
        case 'cancel': {
          const r = key === null ? undefined : running.get(key);
          if (!r) {
            sendError(id, new ApiError(400, `no running generation with id ${JSON.stringify(id)}`, 'invalid_request_error', 'id', 'unknown_id'));
            return;
          }
          r.cancel();
          return;
        }
        case 'generate':
          generate(m, id, key);
          return;
        default:
          sendError(id, new ApiError(400, `unknown message type ${JSON.stringify(m.type)} (generate, cancel, ping)`, 'invalid_request_error', 'type'));
      }
    });

    function generate(m: Record<string, unknown>, id: unknown, key: string | null): void {
      const status = (s: number) => ctx.metrics.requests.inc({ route: `${WS_PATH}:generate`, status: String(s) });
      if (key === null || key.length === 0) {
        status(400);
        sendError(null, new ApiError(400, "'id' must be a non-empty string or a number", 'invalid_request_error', 'id'));
        return;
      }
      if (running.has(key)) {
        status(400);
        sendError(id, new ApiError(400, `a generation with id ${JSON.stringify(id)} is already running on this socket`, 'invalid_request_error', 'id', 'duplicate_id'));
        return;
      }
      try {
        const { scheduler, limits, served } = ctx.state();
        const { type: _t, id: _i, endpoint, ...rest } = m;
        const body = { model: served.name, ...rest, stream: true };
        if (endpoint !== undefined && endpoint !== 'chat' && endpoint !== 'completions') {
          throw new ApiError(400, "'endpoint' must be \"chat\" or \"completions\"", 'invalid_request_error', 'endpoint');
        }
        const chat = endpoint !== 'completions';
        const sink: StreamSink<unknown> = {
          chunk: (c) => send({ type: 'chunk', id, chunk: c }),
          done: (usage, reasons, timings) => {
            running.delete(key);
            send({ type: 'done', id, finish_reason: reasons[0] ?? 'stop', choices: reasons.map((r, index) => ({ index, finish_reason: r })), usage: openAIUsage(usage), timings });
          },
          error: (e) => {
            running.delete(key);
            sendError(id, e);
          },
        };
        const meta = (p: { includeUsage: boolean; model: string }) => ({ id: `${chat ? 'chatcmpl' : 'cmpl'}-ws-${key}`, created: Math.floor(Date.now() / 1000), model: p.model, includeUsage: p.includeUsage });
        if (chat) {
          const prep = prepareChat(body, limits);
          running.set(key, streamChat(scheduler, prep, meta(prep), sink));
        } else {
          const prep = prepareCompletion(body, limits);
          running.set(key, streamCompletion(scheduler, prep, meta(prep), sink));
        }
        status(200);
      } catch (e) {
        const err = toApiError(e);
        status(err.status);
        running.delete(key);
        sendError(id, err);
      }
    }

    ws.on('close', () => {
      for (const r of running.values()) r.cancel();
      running.clear();
    });
    ws.on('error', () => {
      // 'close' follows; nothing else to do.
    });
  }

  return {
    stopAccepting() {
      accepting = false;
    },
    close() {
      clearInterval(timer);
      const sockets = [...wss.clients];
      return new Promise<void>((resolve) => {
        if (sockets.length === 0) {
          wss.close(() => resolve());
          return;
        }
        let left = sockets.length;
        const t = setTimeout(() => {
          for (const s of sockets) s.terminate();
        }, 1000);
        for (const s of sockets) {
          s.once('close', () => {
            if (--left === 0) {
              clearTimeout(t);
              wss.close(() => resolve());
            }
          });
          s.close(1001, 'server shutting down');
        }
      });
    },
  };
}
