// The WebSocket endpoint: many generations per socket, cancel, errors, ping/pong, auth.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { loadServedModel, type ServedModel } from './load';
import { createServer, type ApertusServer } from './server';
import { json, parsePrometheus, tempDir, writeRandomCheckpoint } from './testing';

const tmp = tempDir();
let served: ServedModel;
let server: ApertusServer;
let wsUrl: string;

type Msg = { type: string; id?: unknown; chunk?: { choices: { index: number; delta?: { content?: string }; text?: string; finish_reason: string | null }[] }; error?: { code: string | null; param: string | null; type: string }; finish_reason?: string; usage?: { completion_tokens: number; prompt_tokens: number } };

/** A connected socket with a message log and a wait helper. */
async function connect(url = wsUrl, opts: WebSocket.ClientOptions = {}): Promise<{ ws: WebSocket; log: Msg[]; until: (pred: (m: Msg) => boolean) => Promise<Msg> }> {
  const ws = new WebSocket(url, opts);
  const log: Msg[] = [];
  const waiters: { pred: (m: Msg) => boolean; resolve: (m: Msg) => void }[] = [];
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString()) as Msg;
    log.push(m);
    for (const w of [...waiters]) if (w.pred(m)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(m);
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const until = (pred: (m: Msg) => boolean) => {
    const hit = log.find(pred);
    return hit ? Promise.resolve(hit) : new Promise<Msg>((resolve) => waiters.push({ pred, resolve }));
  };
  return { ws, log, until };
}

function textOf(log: Msg[], id: string): string {
  return log.filter((m) => m.type === 'chunk' && m.id === id).map((m) => m.chunk!.choices[0]?.delta?.content ?? m.chunk!.choices[0]?.text ?? '').join('');
}

beforeAll(async () => {
  served = await loadServedModel(writeRandomCheckpoint(tmp.dir, 'tiny'));
  server = createServer({ model: served, maxBatch: 4 });
  const url = await server.listen(0);
  wsUrl = `${url.replace('http', 'ws')}/v1/ws`;
});

afterAll(async () => {
  await server.close();
  tmp.remove();
});

async function httpChat(body: Record<string, unknown>): Promise<{ choices: { message: { content: string } }[]; usage: { completion_tokens: number } }> {
  const r = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', ...body }) });
  return json(r);
}

describe('WebSocket protocol', () => {
  test('two concurrent generations on one socket stream the same text as HTTP', async () => {
    const { ws, log, until } = await connect();
    const a = { messages: [{ role: 'user', content: 'Hello!' }], temperature: 0, max_tokens: 12 };
    const b = { messages: [{ role: 'user', content: 'Tell me about Bern.' }], temperature: 0, max_tokens: 7 };
    ws.send(JSON.stringify({ type: 'generate', id: 'a', ...a }));
    ws.send(JSON.stringify({ type: 'generate', id: 2, ...b }));
    const [da, db] = await Promise.all([until((m) => m.type === 'done' && m.id === 'a'), until((m) => m.type === 'done' && m.id === 2)]);
    const [ha, hb] = await Promise.all([httpChat(a), httpChat(b)]);
    expect(textOf(log, 'a')).toBe(ha.choices[0]!.message.content);
    expect(log.filter((m) => m.type === 'chunk' && m.id === 2).map((m) => m.chunk!.choices[0]?.delta?.content ?? '').join('')).toBe(hb.choices[0]!.message.content);
    expect(da).toMatchObject({ finish_reason: 'length', usage: { completion_tokens: 12 } });
    expect(db).toMatchObject({ finish_reason: 'length', usage: { completion_tokens: 7 } });
    // The chunk is the SSE chunk schema.
    const first = log.find((m) => m.type === 'chunk' && m.id === 'a')!.chunk as unknown as { object: string; choices: { delta: { role: string } }[] };
    expect(first.object).toBe('chat.completion.chunk');
    expect(first.choices[0]!.delta.role).toBe('assistant');
    // Chunks of the two generations interleave: they shared decode steps.
    const order = log.filter((m) => m.type === 'chunk').map((m) => m.id);
    const lastA = order.lastIndexOf('a');
    expect(order.slice(0, lastA).includes(2)).toBe(true);
    ws.close();
  });

  test('completions endpoint, and the role-less text chunks', async () => {
    const { ws, log, until } = await connect();
    ws.send(JSON.stringify({ type: 'generate', id: 'c', endpoint: 'completions', prompt: 'Once upon a time', max_tokens: 5, temperature: 0 }));
    const done = await until((m) => m.type === 'done' && m.id === 'c');
    const http = await json(fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt: 'Once upon a time', max_tokens: 5, temperature: 0 }) }));
    expect(textOf(log, 'c')).toBe(http.choices[0].text);
    expect(done.usage).toEqual(http.usage);
    ws.close();
  });

  test('structured output and logprobs work over the socket too (same engine)', async () => {
    const { ws, log, until } = await connect();
    const schema = { type: 'object', properties: { city: { type: 'string' }, temp: { type: 'integer' } }, required: ['city', 'temp'], additionalProperties: false };
    ws.send(JSON.stringify({ type: 'generate', id: 'j', messages: [{ role: 'user', content: 'Weather?' }], max_tokens: 30, temperature: 1, seed: 5, logprobs: true, response_format: { type: 'json_schema', json_schema: { name: 'w', schema } } }));
    const done = await until((m) => m.type === 'done' && m.id === 'j');
    const value = JSON.parse(textOf(log, 'j')) as Record<string, unknown>;
    expect(Object.keys(value).sort()).toEqual(['city', 'temp']);
    expect(typeof value.city).toBe('string');
    expect(Number.isInteger(value.temp)).toBe(true);
    const lps = log.filter((m) => m.type === 'chunk' && m.id === 'j').flatMap((m) => (m.chunk as unknown as { choices: { logprobs: { content: unknown[] } | null }[] }).choices[0]?.logprobs?.content ?? []);
    expect(lps).toHaveLength(done.usage!.completion_tokens - 1); // every token but the stop token
    ws.close();
  });

  test('cancel stops one generation at once; the other continues', async () => {
    const { ws, log, until } = await connect();
    ws.send(JSON.stringify({ type: 'generate', id: 'long', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 300 }));
    ws.send(JSON.stringify({ type: 'generate', id: 'short', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 20 }));
    await until((m) => m.type === 'chunk' && m.id === 'long' && (m.chunk!.choices[0]?.delta?.content ?? '').length > 0);
    ws.send(JSON.stringify({ type: 'cancel', id: 'long' }));
    const done = await until((m) => m.type === 'done' && m.id === 'long');
    expect(done.finish_reason).toBe('cancelled');
    expect(done.usage!.completion_tokens).toBeLessThan(300);
    const short = await until((m) => m.type === 'done' && m.id === 'short');
    expect(short).toMatchObject({ finish_reason: 'length', usage: { completion_tokens: 20 } });
    expect(log.filter((m) => m.id === 'long' && m.type === 'error')).toEqual([]);
    ws.close();
  });

  test('bad messages get error messages with the id, and the socket stays usable', async () => {
    const { ws, until, log } = await connect();
    ws.send('{nope');
    expect((await until((m) => m.type === 'error' && m.error!.code === 'invalid_json')).id).toBeNull();
    ws.send(JSON.stringify({ type: 'dance', id: 'd' }));
    expect((await until((m) => m.type === 'error' && m.id === 'd')).error!.param).toBe('type');
    ws.send(JSON.stringify({ type: 'generate', id: 't', messages: [{ role: 'user', content: 'Hi' }], temperature: 'hot' }));
    expect((await until((m) => m.type === 'error' && m.id === 't')).error).toMatchObject({ param: 'temperature', type: 'invalid_request_error' });
    ws.send(JSON.stringify({ type: 'generate', id: 'm', model: 7, messages: [{ role: 'user', content: 'Hi' }] }));
    expect((await until((m) => m.type === 'error' && m.id === 'm')).error!.param).toBe('model');
    // A schema nested deeper than a request may be: a 400 naming where, not a stack overflow.
    let deep: unknown = { type: 'string' };
    for (let i = 0; i < 3000; i++) deep = { type: 'array', items: deep };
    const body = JSON.stringify({ type: 'generate', id: 'deep', messages: [{ role: 'user', content: 'Hi' }], response_format: { type: 'json_schema', json_schema: { name: 'x', schema: deep } } });
    ws.send(body);
    expect((await until((m) => m.type === 'error' && m.id === 'deep' && m.error!.code === 'too_deep')).error!.param).toMatch(/^response_format\.json_schema\.schema(\.items)+$/);
    ws.send(JSON.stringify({ type: 'cancel', id: 'ghost' }));
    expect((await until((m) => m.type === 'error' && m.id === 'ghost')).error!.code).toBe('unknown_id');
    ws.send(JSON.stringify({ type: 'generate', id: 'dup', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 200 }));
    ws.send(JSON.stringify({ type: 'generate', id: 'dup', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }));
    expect((await until((m) => m.type === 'error' && m.id === 'dup')).error!.code).toBe('duplicate_id');
    ws.send(JSON.stringify({ type: 'cancel', id: 'dup' }));
    await until((m) => m.type === 'done' && m.id === 'dup');
    ws.send(JSON.stringify({ type: 'ping' }));
    await until((m) => m.type === 'pong');
    expect(log.filter((m) => m.type === 'done').length).toBe(1);
    ws.close();
  });

  test('closing the socket cancels its generations', async () => {
    const { ws, until } = await connect();
    ws.send(JSON.stringify({ type: 'generate', id: 'x', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 300 }));
    await until((m) => m.type === 'chunk' && m.id === 'x');
    expect(server.scheduler!.running).toBe(1);
    const tokens = async () => parsePrometheus(await (await fetch(`${server.url}/metrics`)).text()).get('apertus_generation_tokens_total') ?? 0;
    const before = await tokens();
    ws.close();
    // Wait for the scheduler to drain (bounded, not a fixed deadline a loaded machine can miss), then
    // check the generation was cut short rather than run to its 300 tokens.
    await Promise.race([server.scheduler!.idle(), new Promise((r) => setTimeout(r, 30_000))]);
    expect(server.scheduler!.running).toBe(0);
    expect((await tokens()) - before).toBeLessThan(300);
  });

  test('ping frames keep live sockets open and drop sockets that stop answering', async () => {
    const pinging = createServer({ model: served, wsPingIntervalMs: 40 });
    const url = (await pinging.listen(0)).replace('http', 'ws') + '/v1/ws';
    const live = await connect(url);
    const dead = await connect(url, { autoPong: false });
    const closed = new Promise<number>((r) => dead.ws.once('close', (code) => r(code)));
    let pings = 0;
    live.ws.on('ping', () => pings++);
    const code = await closed;
    expect(code).toBe(1006); // terminated without a close frame
    expect(pings).toBeGreaterThan(0);
    expect(live.ws.readyState).toBe(WebSocket.OPEN);
    live.ws.close();
    await pinging.close();
  });

  test('with an API key, the upgrade needs it (header or api_key query)', async () => {
    const locked = createServer({ model: served, apiKey: 'k-123' });
    const url = (await locked.listen(0)).replace('http', 'ws') + '/v1/ws';
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(url);
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('error', () => {});
    });
    expect(status).toBe(401);
    const a = await connect(url, { headers: { authorization: 'Bearer k-123' } });
    const b = await connect(`${url}?api_key=k-123`);
    a.ws.close();
    b.ws.close();
    await locked.close();
  });
});
