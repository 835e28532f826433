// Small HTTP helpers: body reading with a size limit, JSON and error responses, SSE framing,
// bearer-token checks.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from './api-error';
import { MAX_REQUEST_DEPTH, tooDeep } from './json-depth';

/**
 * Read the request body, at most `limit` bytes: a larger `Content-Length` is refused before a byte
 * of the body is read, and a chunked body as soon as it passes the limit (413 either way; the
 * caller answers with `connection: close`, so the rest is never read).
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = (what: string) => new ApiError(413, `the request body ${what} exceeds the limit of ${limit} bytes`, 'invalid_request_error', null, 'request_too_large');
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(tooLarge(`of ${declared} bytes`));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.off('data', onData);
        req.pause();
        reject(tooLarge(`(${size} bytes so far)`));
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks, size)));
    req.on('error', (e) => reject(new ApiError(400, `cannot read the request body: ${e.message}`, 'invalid_request_error', null, null, { cause: e })));
  });
}

/**
 * Require a JSON `Content-Type` (`application/json` or `application/*+json`) on a POST: answered
 * 415 otherwise, so a web page cannot drive the API with a `text/plain` or form POST (which
 * browsers send cross-origin without a CORS preflight). The body is drained.
 */
export function requireJson(req: IncomingMessage): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type)) return;
  req.resume();
  throw new ApiError(415, `the request body must be JSON sent with 'Content-Type: application/json', got ${type ? `'${type}'` : 'no Content-Type'}`, 'invalid_request_error', null, 'unsupported_media_type');
}

/** Parse a JSON body; a syntax error is a 400 with code `invalid_json`, a body nested too deep a 400 `too_deep`. */
export function parseJsonBody(buf: Buffer): unknown {
  const text = buf.toString('utf8');
  if (text.trim().length === 0) throw new ApiError(400, 'the request body is empty; expected a JSON object', 'invalid_request_error', null, 'invalid_json');
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (e) {
    throw new ApiError(400, `the request body is not valid JSON: ${(e as Error).message}`, 'invalid_request_error', null, 'invalid_json');
  }
  checkDepth(value);
  return value;
}

/** Refuse a parsed body nested deeper than MAX_REQUEST_DEPTH (400 `too_deep`, `param` the path where it passes the limit). */
export function checkDepth(value: unknown): void {
  const at = tooDeep(value, MAX_REQUEST_DEPTH);
  if (at !== null) throw new ApiError(400, `the request nests arrays and objects more than ${MAX_REQUEST_DEPTH} levels deep (at ${at})`, 'invalid_request_error', at, 'too_deep');
}

/** Send a JSON response. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Send an OpenAI error body with the error's status. */
export function sendError(res: ServerResponse, e: ApiError, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const extra: Record<string, string> = { ...headers };
  if (e.status === 401) extra['www-authenticate'] = 'Bearer';
  if (e.status === 429 || e.status === 503) extra['retry-after'] = '1';
  sendJson(res, e.status, e.toBody(), extra);
}

/** Start an SSE response. */
export function startSse(res: ServerResponse, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no', ...headers });
  res.flushHeaders();
}

/** One named SSE event (`event: type`, then its JSON `data:`), as the Responses API streams. */
export function sseEvent(res: ServerResponse, type: string, data: unknown): void {
  res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** One SSE `data:` event. */
export function sseData(res: ServerResponse, data: unknown): void {
  res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
}

/** Constant-time check of `Authorization: Bearer KEY` (or a raw key) against the expected key. */
export function checkBearer(header: string | undefined | null, expected: string): boolean {
  if (!header) return false;
  const m = /^Bearer\s+(.+)$/i.exec(header.trim());
  const given = m ? m[1]!.trim() : '';
  return sameSecret(given, expected);
}

/** Constant-time string comparison (via SHA-256, so lengths do not leak). */
export function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length > 0;
}
