// Browser-facing protections: JSON-only POST bodies (415), Origin checks, DNS-rebinding
// protection on loopback (HTTP and WebSocket upgrade), and CORS with preflights.

import http from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { runServeCli } from './cli';
import { CliError } from '@apertus/cli';
import { loadServedModel, type ServedModel } from './load';
import { isLoopbackHost } from './origin-guard';
import { createServer, type ApertusServer } from './server';
import { tempDir, writeRandomCheckpoint } from './testing';

const tmp = tempDir();
let served: ServedModel;
let local: ApertusServer;
let cors: ApertusServer;
let open: ApertusServer;
let port: { local: number; cors: number; open: number };

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A request with exactly the given headers (fetch would not let a test set Host). */
function raw(server: ApertusServer, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Raw> {
  const u = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers: { ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const chatBody = JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2, temperature: 0 });
const json = { 'content-type': 'application/json' };

/** Outcome of a WebSocket upgrade: 'open' or the refusal's HTTP status. */
function upgrade(server: ApertusServer, headers: Record<string, string>): Promise<'open' | number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/v1/ws`, { headers });
    ws.once('open', () => {
      ws.close();
      resolve('open');
    });
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
    });
    ws.once('error', () => {});
  });
}

beforeAll(async () => {
  served = await loadServedModel(writeRandomCheckpoint(tmp.dir, 'tiny'));
  local = createServer({ model: served, allowedHosts: ['proxy.internal'] });
  cors = createServer({ model: served, corsOrigins: ['https://app.example:3000'] });
  open = createServer({ model: served });
  await local.listen(0, '127.0.0.1');
  await cors.listen(0, '127.0.0.1');
  await open.listen(0, '0.0.0.0');
  port = { local: Number(new URL(local.url).port), cors: Number(new URL(cors.url).port), open: Number(new URL(open.url).port) };
  // `0.0.0.0` is not connectable everywhere; requests go to 127.0.0.1 on its port.
  Object.defineProperty(open, 'url', { value: `http://127.0.0.1:${port.open}` });
});

afterAll(async () => {
  await Promise.all([local.close(), cors.close(), open.close()]);
  tmp.remove();
});

describe('JSON bodies', () => {
  test.each([
    ['text/plain', 415],
    ['text/plain;charset=UTF-8', 415],
    ['application/x-www-form-urlencoded', 415],
    ['multipart/form-data; boundary=x', 415],
    ['', 415],
    ['application/json', 200],
    ['application/json; charset=utf-8', 200],
    ['Application/JSON', 200],
  ])('Content-Type %j → %i', async (type, status) => {
    const r = await raw(local, 'POST', '/v1/chat/completions', type ? { 'content-type': type } : {}, chatBody);
    expect(r.status).toBe(status);
    if (status === 415) expect(JSON.parse(r.body).error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_media_type' });
  });

  test('a refused text/plain POST runs no generation', async () => {
    const before = local.metrics.generationTokens.get();
    for (const path of ['/v1/chat/completions', '/v1/completions', '/tokenize', '/detokenize']) {
      expect((await raw(local, 'POST', path, { 'content-type': 'text/plain' }, chatBody)).status).toBe(415);
    }
    expect(local.metrics.generationTokens.get()).toBe(before);
  });
});

describe('Origin and Host checks', () => {
  test('same-origin browser requests and requests without Origin pass', async () => {
    const self = `http://127.0.0.1:${port.local}`;
    expect((await raw(local, 'POST', '/v1/chat/completions', { ...json, origin: self }, chatBody)).status).toBe(200);
    expect((await raw(local, 'POST', '/v1/chat/completions', { ...json, origin: `http://localhost:${port.local}`, host: `localhost:${port.local}` }, chatBody)).status).toBe(200);
    expect((await raw(local, 'GET', '/v1/models', {})).status).toBe(200);
  });

  test('a foreign Origin is refused with 403 and no CORS headers', async () => {
    for (const origin of ['https://evil.example', `http://127.0.0.1:${port.local + 1}`, 'null']) {
      const r = await raw(local, 'POST', '/v1/chat/completions', { ...json, origin }, chatBody);
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body).error.code).toBe('origin_not_allowed');
      expect(r.headers['access-control-allow-origin']).toBeUndefined();
    }
  });

  test('DNS rebinding: a non-loopback Host is refused while bound to loopback, on every route', async () => {
    for (const [method, path] of [['GET', '/'], ['GET', '/health'], ['GET', '/v1/models'], ['POST', '/v1/chat/completions']] as const) {
      const host = `evil.example:${port.local}`;
      const r = await raw(local, method, path, { ...json, host, origin: `http://${host}` }, method === 'POST' ? chatBody : undefined);
      expect([path, r.status]).toEqual([path, 403]);
      expect(JSON.parse(r.body).error.code).toBe('host_not_allowed');
    }
    for (const host of [`localhost:${port.local}`, `127.0.0.1:${port.local}`, `[::1]:${port.local}`, `app.localhost:${port.local}`, `proxy.internal:${port.local}`]) {
      expect([host, (await raw(local, 'GET', '/v1/models', { host })).status]).toEqual([host, 200]);
    }
  });

  test('bound to all interfaces, any Host is served but a foreign Origin still is not', async () => {
    expect((await raw(open, 'GET', '/v1/models', { host: `my-box.lan:${port.open}` })).status).toBe(200);
    expect((await raw(open, 'POST', '/v1/chat/completions', { ...json, host: `my-box.lan:${port.open}`, origin: `http://my-box.lan:${port.open}` }, chatBody)).status).toBe(200);
    expect((await raw(open, 'POST', '/v1/chat/completions', { ...json, host: `my-box.lan:${port.open}`, origin: 'https://evil.example' }, chatBody)).status).toBe(403);
  });

  test('WebSocket upgrades get the same checks', async () => {
    expect(await upgrade(local, {})).toBe('open');
    expect(await upgrade(local, { origin: `http://127.0.0.1:${port.local}` })).toBe('open');
    expect(await upgrade(local, { origin: 'https://evil.example' })).toBe(403);
    expect(await upgrade(local, { host: `evil.example:${port.local}`, origin: `http://evil.example:${port.local}` })).toBe(403);
    expect(await upgrade(cors, { origin: 'https://app.example:3000' })).toBe('open');
    expect(await upgrade(cors, { origin: 'https://app.example' })).toBe(403);
  });

  test('loopback names', () => {
    for (const h of ['localhost', 'a.localhost', '127.0.0.1', '127.1.2.3', '::1']) expect([h, isLoopbackHost(h)]).toEqual([h, true]);
    for (const h of ['0.0.0.0', '128.0.0.1', 'localhost.evil.example', 'evil.example', '::', '10.0.0.1']) expect([h, isLoopbackHost(h)]).toEqual([h, false]);
  });
});

describe('CORS', () => {
  const preflight = (server: ApertusServer, origin: string) =>
    raw(server, 'OPTIONS', '/v1/chat/completions', { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,x-stainless-os' });

  test('no CORS by default: a preflight is refused, so the browser never sends the POST', async () => {
    const r = await preflight(local, 'https://app.example:3000');
    expect(r.status).toBe(403);
    expect(r.headers['access-control-allow-origin']).toBeUndefined();
  });

  test('a listed origin gets a preflight answer and CORS headers on the response', async () => {
    const r = await preflight(cors, 'https://app.example:3000');
    expect(r.status).toBe(204);
    expect(r.headers['access-control-allow-origin']).toBe('https://app.example:3000');
    expect(r.headers['access-control-allow-methods']).toBe('GET, POST, OPTIONS');
    expect(r.headers['access-control-allow-headers']).toBe('authorization,content-type,x-stainless-os');
    expect(r.headers['access-control-max-age']).toBe('600');
    expect(r.headers.vary).toMatch(/Origin/);
    const post = await raw(cors, 'POST', '/v1/chat/completions', { ...json, origin: 'https://app.example:3000' }, chatBody);
    expect(post.status).toBe(200);
    expect(post.headers['access-control-allow-origin']).toBe('https://app.example:3000');
    expect(post.headers['access-control-expose-headers']).toBe('x-request-id');
    // Errors carry the header too, so the page can read them.
    const bad = await raw(cors, 'POST', '/v1/chat/completions', { ...json, origin: 'https://app.example:3000' }, '{"model": "tiny"}');
    expect(bad.status).toBe(400);
    expect(bad.headers['access-control-allow-origin']).toBe('https://app.example:3000');
  });

  test('other origins, and the listed host on another scheme or port, are refused', async () => {
    for (const origin of ['https://app.example', 'http://app.example:3000', 'https://evil.example']) {
      expect([origin, (await preflight(cors, origin)).status]).toEqual([origin, 403]);
    }
  });

  test('OPTIONS without a preflight request answers the allowed methods', async () => {
    const r = await raw(local, 'OPTIONS', '/v1/models', {});
    expect(r.status).toBe(204);
    expect(r.headers.allow).toBe('GET, POST, OPTIONS');
  });

  test('--cors-origin takes origins only', async () => {
    await expect(runServeCli(['--model', 'x', '--cors-origin', 'https://app.example/path'], { out: () => {}, err: () => {} })).rejects.toThrow(CliError);
    await expect(runServeCli(['--model', 'x', '--cors-origin', 'app.example'], { out: () => {}, err: () => {} })).rejects.toThrow(/--cors-origin/);
  });
});
