// Hostile HTTP at the connection level, over raw sockets: every request gets an OpenAI error body
// with the right 4xx (or 503) and the server keeps serving; nothing holds a socket open for long.

import net from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServedModel, type ServedModel } from './load';
import { createServer, type ApertusServer } from './server';
import { json, tempDir, writeRandomCheckpoint } from './testing';

const tmp = tempDir();
let served: ServedModel;
let server: ApertusServer;
let port: number;

beforeAll(async () => {
  served = await loadServedModel(writeRandomCheckpoint(tmp.dir, 'tiny'));
  server = createServer({ model: served, maxBodyBytes: 1 << 20, maxConnections: 4, headersTimeoutMs: 400, requestTimeoutMs: 800 });
  port = Number(new URL(await server.listen(0)).port);
});

afterAll(async () => {
  await server.close();
  tmp.remove();
});

interface Reply {
  status: number;
  headers: string;
  body: { error: { message: string; type: string; code: string | null } };
  /** Milliseconds from the first byte sent to the end of the answer. */
  ms: number;
}

/**
 * Open a socket, send `parts` (strings written `gapMs` apart), and read what comes back until the
 * server closes the connection (or `waitMs` passes: then the test fails, the socket was held).
 */
function exchange(parts: (string | Buffer)[], o: { gapMs?: number; waitMs?: number; keepWriting?: boolean } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const started = performance.now();
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${o.waitMs ?? 5000} ms (got ${Buffer.concat(chunks).length} bytes)`));
    }, o.waitMs ?? 5000);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => {}); // the server may reset a socket whose body it refused
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      try {
        resolve({ status, headers: head.toLowerCase(), body: JSON.parse(body), ms: performance.now() - started });
      } catch {
        reject(new Error(`not an HTTP answer with a JSON body: ${JSON.stringify(text.slice(0, 300))}`));
      }
    });
    socket.on('connect', async () => {
      for (const p of parts) {
        if (socket.destroyed) return;
        socket.write(p);
        if (o.gapMs) await new Promise((r) => setTimeout(r, o.gapMs));
      }
    });
  });
}

const post = (headers: string) => `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${headers}\r\n`;

describe('the connection-level limits', () => {
  test('a Content-Length over the limit is 413 at once, before any body byte is read', async () => {
    const r = await exchange([post('Content-Length: 1000000000000\r\n'), '{"a":']);
    expect([r.status, r.body.error.code, r.body.error.type]).toEqual([413, 'request_too_large', 'invalid_request_error']);
    expect(r.headers).toContain('connection: close');
  });

  test('a chunked body is refused as soon as it passes the limit, without waiting for its end', async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const parts: (string | Buffer)[] = [post('Transfer-Encoding: chunked\r\n')];
    for (let i = 0; i < 20; i++) parts.push(`${chunk.length.toString(16)}\r\n`, chunk, '\r\n'); // 1.25 MiB, never terminated
    const r = await exchange(parts);
    expect([r.status, r.body.error.code]).toEqual([413, 'request_too_large']);
  });

  test('a body announced but never sent, and a chunk of 2^48 bytes, end in a 408 after the request timeout', async () => {
    const a = await exchange([post('Content-Length: 100\r\n'), '{"model":']);
    expect([a.status, a.body.error.code]).toEqual([408, 'request_timeout']);
    const b = await exchange([post('Transfer-Encoding: chunked\r\n'), 'FFFFFFFFFFFF\r\n', '{"x":1}']);
    expect([b.status, b.body.error.code]).toEqual([408, 'request_timeout']);
  });

  test('headers trickled a byte at a time are dropped after the headers timeout', async () => {
    const line = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ';
    const r = await exchange([...line, ...'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'], { gapMs: 50 });
    expect([r.status, r.body.error.code]).toEqual([408, 'request_timeout']);
  });

  test('an unknown method, a 60 KB URL, 5,000 headers and garbage get JSON 405, 414, 431 and 400', async () => {
    const foo = await exchange(['FOO / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n']);
    expect([foo.status, foo.body.error.code]).toEqual([405, 'method_not_allowed']);
    const url = await exchange([`GET /v1/models?q=${'a'.repeat(60_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`]);
    expect([url.status, url.body.error.code]).toEqual([414, 'uri_too_long']);
    const huge = await exchange([`GET /v1/models?q=${'a'.repeat(200_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`]);
    expect([huge.status, huge.body.error.code]).toEqual([414, 'uri_too_long']);
    const mid = await exchange([`GET /v1/models?q=${'a'.repeat(9000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`]);
    expect([mid.status, mid.body.error.code]).toEqual([414, 'uri_too_long']);
    const many = Array.from({ length: 5000 }, (_, i) => `X-Header-${i}: value\r\n`).join('');
    const headers = await exchange([`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n${many}\r\n`]);
    expect([headers.status, headers.body.error.code]).toEqual([431, 'headers_too_large']);
    const some = Array.from({ length: 150 }, (_, i) => `X-H${i}: v\r\n`).join('');
    const counted = await exchange([`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n${some}\r\n`]);
    expect([counted.status, counted.body.error.code]).toEqual([431, 'headers_too_large']);
    const few = Array.from({ length: 5000 }, (_, i) => `X${i}: v\r\n`).join('');
    const short = await exchange([`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n${few}\r\n`]);
    expect([short.status, short.body.error.code]).toEqual([431, 'headers_too_large']);
    const junk = await exchange(['GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n']);
    expect([junk.status, junk.body.error.code]).toEqual([400, 'bad_request']);
  });

  test('connections over the cap get 503 and are closed; the server serves again when they are gone', async () => {
    const held = await Promise.all(Array.from({ length: 4 }, () => new Promise<net.Socket>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s));
      s.on('error', () => {});
    })));
    const r = await exchange(['GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n']);
    expect([r.status, r.body.error.code]).toEqual([503, 'too_many_connections']);
    for (const s of held) s.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });

  test('after all of it the server still answers, and counted what it refused', async () => {
    expect((await json(fetch(`${server.url}/v1/models`))).data[0].id).toBe('tiny');
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    for (const s of ['400', '405', '408', '414', '503']) expect(metrics).toContain(`apertus_requests_total{route="connection",status="${s}"}`);
    for (const s of ['413', '414', '431']) expect(metrics).toMatch(new RegExp(`apertus_requests_total\\{route="[^"]+",status="${s}"\\}`));
  });
});
