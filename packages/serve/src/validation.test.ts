// Bad requests: each gets the right status and an OpenAI error body, and the server keeps serving.

import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServedModel, type ServedModel } from './load';
import { createServer, type ApertusServer } from './server';
import { json, parsePrometheus, tempDir, writeRandomCheckpoint } from './testing';

const tmp = tempDir();
const KEY = 'sk-test-0123456789';
let served: ServedModel;
let strict: ApertusServer;
let queued: ApertusServer;

beforeAll(async () => {
  served = await loadServedModel(writeRandomCheckpoint(tmp.dir, 'tiny'));
  strict = createServer({ model: served, apiKey: KEY, maxBodyBytes: 4096, contextLength: 200, maxTokens: 100 });
  queued = createServer({ model: served, maxBatch: 1, maxQueue: 1 });
  await strict.listen(0);
  await queued.listen(0);
});

afterAll(async () => {
  await strict.close();
  await queued.close();
  tmp.remove();
});

async function post(path: string, body: unknown, opts: { key?: string | null; raw?: boolean; server?: ApertusServer } = {}): Promise<{ status: number; body: { error?: { message: string; type: string; param: string | null; code: string | null } } & Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const key = opts.key === undefined ? KEY : opts.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const res = await fetch(`${(opts.server ?? strict).url}${path}`, { method: 'POST', headers, body: opts.raw ? (body as string) : JSON.stringify(body) });
  return { status: res.status, body: await json(res) };
}

const msgs = [{ role: 'user', content: 'Hi' }];

describe('request validation', () => {
  test('malformed and empty JSON bodies are 400 invalid_json', async () => {
    for (const raw of ['{"model": "tiny", "messages": [', 'not json', '']) {
      const r = await post('/v1/chat/completions', raw, { raw: true });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json', param: null });
    }
    const arr = await post('/v1/chat/completions', [1, 2]);
    expect(arr.status).toBe(400);
    expect(arr.body.error!.param).toBe('(body)');
  });

  test('wrong types and out-of-range values name the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ temperature: 'hot' }, 'temperature'],
      [{ temperature: 3 }, 'temperature'],
      [{ top_p: 0 }, 'top_p'],
      [{ top_k: 1.5 }, 'top_k'],
      [{ min_p: -0.1 }, 'min_p'],
      [{ presence_penalty: 2.5 }, 'presence_penalty'],
      [{ seed: 'x' }, 'seed'],
      [{ max_tokens: 0 }, 'max_tokens'],
      [{ max_completion_tokens: 101 }, 'max_completion_tokens'],
      [{ n: 1.5 }, 'n'],
      [{ n: 99 }, 'n'],
      [{ stop: [1] }, 'stop[0]'],
      [{ stop: 5 }, 'stop'],
      [{ stream: 'yes' }, 'stream'],
      [{ stream_options: { include_usage: true } }, 'stream_options'],
      [{ messages: 'hi' }, 'messages'],
      [{ messages: [] }, 'messages'],
      [{ messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role'],
      [{ messages: [{ role: 'user', content: 5 }] }, 'messages[0].content'],
      [{ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'messages[0].content[0].type'],
      [{ messages: [{ role: 'user', content: 'a' }, { role: 'system', content: 'b' }] }, 'messages[1].role'],
      [{ messages: [{ role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'f', arguments: {} } }] }] }, 'messages[0].tool_calls[0].function.arguments'],
      [{ tools: [{ type: 'function', function: { name: 'bad name!' } }] }, 'tools[0].function.name'],
      [{ tool_choice: 'required' }, 'tool_choice'],
      [{ logprobs: 'yes' }, 'logprobs'],
      [{ top_logprobs: 3 }, 'top_logprobs'],
      [{ logit_bias: { abc: 10 } }, 'logit_bias.abc'],
      [{ logit_bias: { '5': 101 } }, 'logit_bias.5'],
      [{ logit_bias: { '99999': 1 } }, 'logit_bias.99999'],
      [{ logit_bias: [1] }, 'logit_bias'],
      [{ response_format: { type: 'xml' } }, 'response_format.type'],
      [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', format: 'email' } } } }, 'response_format.json_schema.schema.format'],
      [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: '(?=a)' } } } }, 'response_format.json_schema.schema.pattern'],
      [{ tool_choice: { type: 'function', function: { name: 'f' } } }, 'tool_choice.function.name'],
      [{ model: 42 }, 'model'],
    ];
    for (const [patch, param] of cases) {
      const r = await post('/v1/chat/completions', { model: 'tiny', messages: msgs, ...patch });
      expect({ patch, status: r.status, param: r.body.error?.param, type: r.body.error?.type }).toEqual({ patch, status: 400, param, type: 'invalid_request_error' });
      expect(r.body.error!.message.length).toBeGreaterThan(0);
    }
    const client = new OpenAI({ baseURL: `${strict.url}/v1`, apiKey: KEY, maxRetries: 0 });
    await expect(client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], temperature: 5 })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], temperature: 5 })).rejects.toMatchObject({ status: 400, param: 'temperature', type: 'invalid_request_error' });
    const c = await post('/v1/completions', { model: 'tiny', prompt: [1, 2, 999999] });
    expect([c.status, c.body.error!.param]).toEqual([400, 'prompt']);
    // A fractional token id is named as such, not as a vocabulary miss.
    const frac = await post('/v1/completions', { model: 'tiny', prompt: [1, 1.5] });
    expect([frac.status, frac.body.error!.param, frac.body.error!.message]).toEqual([400, 'prompt', 'token 1 of prompt 0 is 1.5, not an integer token id']);
    // JSON numbers beyond float64 parse as Infinity: the message says the value is too large.
    const huge = await post('/v1/chat/completions', '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1e999}', { raw: true });
    expect([huge.status, huge.body.error!.param]).toEqual([400, 'max_tokens']);
    expect(huge.body.error!.message).toMatch(/^'max_tokens' is too large \(above 1\.8e308\)/);
    const tiny = await post('/v1/chat/completions', '{"messages": [{"role": "user", "content": "Hi"}], "temperature": -1e999}', { raw: true });
    expect(tiny.body.error!.message).toMatch(/^'temperature' is too small/);
    // An image part says why it is refused.
    const img = await post('/v1/chat/completions', { messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } }] }] });
    expect([img.status, img.body.error!.param, img.body.error!.code]).toEqual([400, 'messages[0].content[1].type', 'unsupported_content']);
    expect(img.body.error!.message).toMatch(/reads text only/);
    const s = await post('/v1/completions', { model: 'tiny', prompt: 'x', suffix: 'y' });
    expect([s.status, s.body.error!.code]).toEqual([400, 'unsupported_parameter']);
  });

  test('a request naming any model, or none, is served by the served model, which the response names', async () => {
    const other = await post('/v1/chat/completions', { model: 'gpt-5', messages: msgs, max_tokens: 2 });
    expect([other.status, other.body.model]).toEqual([200, 'tiny']);
    const client = new OpenAI({ baseURL: `${strict.url}/v1`, apiKey: KEY, maxRetries: 0 });
    expect((await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 })).model).toBe('tiny');
    const missing = await post('/v1/completions', { prompt: 'x', max_tokens: 2 });
    expect([missing.status, missing.body.model]).toEqual([200, 'tiny']);
    const stream = await client.completions.create({ model: 'llama3', prompt: 'x', max_tokens: 2, stream: true });
    for await (const chunk of stream) expect(chunk.model).toBe('tiny');
    // The catalogue itself is exact: only the served model exists there.
    await expect(client.models.retrieve('gpt-5')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect((await client.models.retrieve('tiny')).id).toBe('tiny');
  });

  test('an oversized body is 413 request_too_large', async () => {
    const r = await post('/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'x'.repeat(10_000) }] });
    expect(r.status).toBe(413);
    expect(r.body.error).toMatchObject({ type: 'invalid_request_error', code: 'request_too_large' });
  });

  test('a prompt or max_tokens beyond the context is 400 context_length_exceeded', async () => {
    const long = await post('/v1/completions', { model: 'tiny', prompt: 'The quick brown fox jumps over the lazy dog. '.repeat(30) });
    expect([long.status, long.body.error!.code, long.body.error!.param]).toEqual([400, 'context_length_exceeded', 'prompt']);
    const unit = 'The quick brown fox jumps over the lazy dog. ';
    const per = ((await post('/tokenize', { prompt: unit, add_special_tokens: false })).body as { count: number }).count;
    const prompt = unit.repeat(Math.ceil(120 / per));
    const tooMany = await post('/v1/completions', { model: 'tiny', prompt, max_tokens: 100 });
    expect([tooMany.status, tooMany.body.error!.code, tooMany.body.error!.param]).toEqual([400, 'context_length_exceeded', 'max_tokens']);
  });

  test('a missing or wrong API key is 401 (AuthenticationError); health and metrics stay open', async () => {
    for (const key of [null, 'wrong', `${KEY}x`]) {
      const r = await post('/v1/chat/completions', { model: 'tiny', messages: msgs }, { key });
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    }
    expect((await fetch(`${strict.url}/v1/models`)).status).toBe(401);
    const bad = new OpenAI({ baseURL: `${strict.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await expect(bad.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    expect((await fetch(`${strict.url}/health`)).status).toBe(200);
    expect((await fetch(`${strict.url}/metrics`)).status).toBe(200);
  });

  test('unknown routes are 404 and wrong methods 405, with error bodies', async () => {
    const r = await fetch(`${strict.url}/v1/nothing`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: '{}' });
    expect(r.status).toBe(404);
    expect((await json(r)).error.type).toBe('not_found_error');
    const g = await fetch(`${strict.url}/v1/chat/completions`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(g.status).toBe(405);
    expect((await json(g)).error.code).toBe('method_not_allowed');
  });

  test('after all of that the server still serves, and counted every status', async () => {
    const r = await post('/v1/chat/completions', { model: 'tiny', messages: msgs, max_tokens: 3 });
    expect(r.status).toBe(200);
    expect((r.body as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(3);
    const m = parsePrometheus(await (await fetch(`${strict.url}/metrics`)).text());
    expect(m.get('apertus_requests_total{route="/v1/chat/completions",status="413"}')).toBe(1);
    expect(m.get('apertus_requests_total{route="/v1/chat/completions",status="404"}')).toBeUndefined();
    expect(m.get('apertus_requests_total{route="/v1/chat/completions",status="200"}')).toBe(3);
  });
});

describe('queue limit and cancellation', () => {
  test('a full queue answers 429; a client disconnect frees its slot at once', async () => {
    const client = new OpenAI({ baseURL: `${queued.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const scheduler = queued.scheduler!;
    // A occupies the only batch slot with a long stream.
    const abort = new AbortController();
    const a = await client.completions.create({ model: 'tiny', prompt: 'Hello', max_tokens: 400, temperature: 0, stream: true }, { signal: abort.signal });
    const it = a[Symbol.asyncIterator]();
    await it.next();
    expect(scheduler.running).toBe(1);
    // B waits in the queue (limit 1).
    const b = client.completions.create({ model: 'tiny', prompt: 'Bern', max_tokens: 5, temperature: 0 });
    while (scheduler.queued < 1) await new Promise((r) => setTimeout(r, 2));
    // C finds the queue full.
    const c = client.completions.create({ model: 'tiny', prompt: 'Zurich', max_tokens: 5 });
    await expect(c).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    await expect(c).rejects.toMatchObject({ status: 429, code: 'queue_full', type: 'rate_limit_error' });
    // Dropping A lets B run.
    abort.abort();
    const rb = await b;
    expect(rb.choices[0]!.text.length).toBeGreaterThan(0);
    expect(rb.usage!.completion_tokens).toBe(5);
    const m = parsePrometheus(await (await fetch(`${queued.url}/metrics`)).text());
    expect(m.get('apertus_sequences_finished_total{finish_reason="cancelled"}')).toBe(1);
    expect(m.get('apertus_requests_rejected_total')).toBe(1);
    // A stopped long before its 400 tokens: the slot was freed when the client left.
    expect(m.get('apertus_generation_tokens_total')!).toBeLessThan(400);
    expect(scheduler.running + scheduler.queued).toBe(0);
  });
});
