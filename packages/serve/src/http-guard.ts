// The connection-level defences of the HTTP server, all answered with an OpenAI error body:
//
// * requests Node's parser refuses (`clientError`): an unknown method → 405, a request head over
//   MAX_HEAD_BYTES → 414 when its first line is that long, else 431, a request not received in
//   time → 408, anything else malformed → 400; the connection is then closed. Heads within the
//   limit reach the router, which answers a URL over MAX_URL_BYTES with 414 and more than
//   MAX_HEADER_COUNT fields with 431 (`requestLineError`);
// * a cap on open connections: the one over it gets 503 and is closed at once;
// * timeouts: the headers must arrive within `headersTimeoutMs` and the whole request (the body
//   included) within `requestTimeoutMs`, so a client that trickles bytes (or announces a body it
//   never sends) is dropped; idle keep-alive connections are closed after 5 s;
// * a reader that does not keep up: a response whose unsent output passes `maxBufferedBytes` is
//   dropped (see `tooSlow`), so one stalled client cannot grow the server's memory.

import type http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ApiError } from './api-error';

/** Limits of {@link guardConnections}. */
export interface ConnectionLimits {
  /** Open connections at once. */
  maxConnections: number;
  /** Time to receive a request's headers. */
  headersTimeoutMs: number;
  /** Time to receive a whole request, body included. */
  requestTimeoutMs: number;
}

/** Longest request URL (the 414 limit; longer ones are refused before routing). */
export const MAX_URL_BYTES = 8 * 1024;

/** Largest request head (request line and headers) Node's parser reads; beyond it, `parserError`. */
export const MAX_HEAD_BYTES = 64 * 1024;

/** Most header fields a request may carry (431 above). */
export const MAX_HEADER_COUNT = 100;

/** Unsent output a response may hold before its reader counts as stalled. */
export const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

const REASONS: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 408: 'Request Timeout',
  413: 'Content Too Large', 414: 'URI Too Long', 431: 'Request Header Fields Too Large', 503: 'Service Unavailable',
};

/** Write a whole error response on a raw socket (no request object: the parser refused it, or an upgrade) and close it. */
export function endWithError(socket: Duplex, error: ApiError): void {
  const body = JSON.stringify(error.toBody());
  socket.end(`HTTP/1.1 ${error.status} ${REASONS[error.status] ?? 'Error'}\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

/** The error body for a request Node's HTTP parser refused (see the file header). */
export function parserError(err: NodeJS.ErrnoException & { rawPacket?: Buffer }): ApiError {
  switch (err.code) {
    case 'HPE_INVALID_METHOD':
      return new ApiError(405, 'unknown HTTP method (use GET, POST or OPTIONS)', 'invalid_request_error', null, 'method_not_allowed');
    case 'HPE_HEADER_OVERFLOW': {
      // The chunk that overflowed starts the request and its first line is longer than any head may be, or ends in it: the URL is too long.
      const raw = err.rawPacket;
      const lineEnd = raw ? raw.indexOf('\r\n') : 0;
      const startsRequest = raw !== undefined && /^[A-Z]+ /.test(raw.subarray(0, 16).toString('latin1'));
      return lineEnd < 0 || (startsRequest && lineEnd > MAX_HEAD_BYTES / 2)
        ? new ApiError(414, `the request URL is too long (at most ${MAX_URL_BYTES} bytes)`, 'invalid_request_error', null, 'uri_too_long')
        : new ApiError(431, `the request headers are too large (at most ${MAX_HEADER_COUNT} fields, ${MAX_HEAD_BYTES / 1024} KiB in all)`, 'invalid_request_error', null, 'headers_too_large');
    }
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(408, 'the request was not received in time', 'invalid_request_error', null, 'request_timeout');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
    case 'HPE_INVALID_CHUNK_SIZE':
      return new ApiError(400, 'malformed chunked request body', 'invalid_request_error', null, 'bad_request');
    default:
      return new ApiError(400, `malformed HTTP request (${err.code ?? err.message})`, 'invalid_request_error', null, 'bad_request');
  }
}

/** The error for a request whose URL or header count is over the limits, or null. */
export function requestLineError(req: http.IncomingMessage): ApiError | null {
  if ((req.url ?? '').length > MAX_URL_BYTES) return new ApiError(414, `the request URL is too long (at most ${MAX_URL_BYTES} bytes)`, 'invalid_request_error', null, 'uri_too_long');
  if (req.rawHeaders.length / 2 > MAX_HEADER_COUNT) return new ApiError(431, `the request carries ${req.rawHeaders.length / 2} header fields (at most ${MAX_HEADER_COUNT})`, 'invalid_request_error', null, 'headers_too_large');
  return null;
}

/** True when `res` holds more unsent output than {@link MAX_BUFFERED_BYTES}: its reader has stalled. */
export function tooSlow(res: http.ServerResponse): boolean {
  return res.writableLength > MAX_BUFFERED_BYTES;
}

/** The options to create the Node server with: the timeouts, checked every quarter of the shortest (at most every second). */
export function httpServerOptions(limits: ConnectionLimits): http.ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: 5000,
    maxHeaderSize: MAX_HEAD_BYTES,
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4))),
  };
}

/**
 * Install the connection cap and the parser-error answers of the file header on `server` (made
 * with {@link httpServerOptions}); `onRefused` is told the status of every request answered at
 * this level (for the metrics and the log). Returns the test for connections refused at the cap,
 * whose requests the server must leave alone.
 */
export function guardConnections(server: http.Server, limits: ConnectionLimits, onRefused: (status: number) => void): (socket: Duplex) => boolean {
  let open = 0;
  const refused = new WeakSet<Duplex>();
  server.on('connection', (socket: Socket) => {
    if (open >= limits.maxConnections) {
      refused.add(socket);
      onRefused(503);
      socket.once('error', () => {});
      endWithError(socket, new ApiError(503, `the server has ${open} connections open, its limit (--max-connections); retry later`, 'unavailable_error', null, 'too_many_connections'));
      return;
    }
    open++;
    socket.once('close', () => open--);
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (refused.has(socket)) return;
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const e = parserError(err);
    onRefused(e.status);
    endWithError(socket, e);
  });
  return (socket) => refused.has(socket);
}
