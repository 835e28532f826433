// The rest of the OpenAI surface, each with the official `openai` client: embeddings (against
// transformers' hidden states), the Responses API (whole and streamed), logit_bias, JSON Schema
// beyond the basic subset (validated with ajv), llama-server's timings, and hostile inputs that
// used to be 500s (a 360 KB prompt, schemas 1,000 levels deep).

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { peerPython } from '@apertus/peers';
import { KVCache, loadCheckpoint, step, type ApertusModel } from '@apertus/model';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServedModel, type ServedModel } from './load';
import { createServer, type ApertusServer } from './server';
import { json, tempDir, writeRandomCheckpoint } from './testing';

const tmp = tempDir();
const MODEL = 'tiny-random';
let dir: string;
let served: ServedModel;
let server: ApertusServer;
let lastServer: ApertusServer;
let client: OpenAI;
let ref: ApertusModel;
const log: string[] = [];
const ajv = new Ajv({ strict: false });

beforeAll(async () => {
  dir = writeRandomCheckpoint(tmp.dir, MODEL);
  ref = loadCheckpoint(dir).model;
  served = await loadServedModel(dir);
  server = createServer({ model: served, maxBatch: 8, log: (l) => log.push(l) });
  lastServer = createServer({ model: served, embeddingPooling: 'last' });
  client = new OpenAI({ baseURL: `${await server.listen(0)}/v1`, apiKey: 'unused', maxRetries: 0 });
  await lastServer.listen(0);
});

afterAll(async () => {
  await server.close();
  await lastServer.close();
  tmp.remove();
});

const messages = [{ role: 'user' as const, content: 'Tell me about Bern.' }];

/** Greedy next token of `ids` under the reference model, with `bias` added to the logits. */
function greedy(ids: number[], bias: Record<number, number> = {}): number {
  const logits = step(ref, [{ cache: new KVCache(ref.config, ids.length), tokens: ids }]);
  let best = -1;
  for (let i = 0; i < logits.length; i++) if (best < 0 || logits[i]! + (bias[i] ?? 0) > logits[best]! + (bias[best] ?? 0)) best = i;
  return best;
}

describe('/v1/embeddings', () => {
  // Needs the Python peers (`npm test` installs them); without them this test fails, it never skips.
  test('mean-pooled, unit-length final hidden states, as transformers computes them; base64 and float agree', async () => {
    const inputs = ['Hello world', 'The capital of Switzerland is Bern.'];
    const r = await client.embeddings.create({ model: 'text-embedding-3-small', input: inputs });
    expect(r.model).toBe(MODEL);
    const ids = inputs.map((s) => served.tokenizer.encodeIds(s));
    expect(r.usage).toEqual({ prompt_tokens: ids[0]!.length + ids[1]!.length, total_tokens: ids[0]!.length + ids[1]!.length });
    fs.writeFileSync(path.join(tmp.dir, 'ids.json'), JSON.stringify(ids));
    const want = JSON.parse(execFileSync(peerPython(), [path.join(import.meta.dirname, '../test/hidden_states.py'), dir, path.join(tmp.dir, 'ids.json')], { encoding: 'utf8' })) as { mean: number[]; last: number[] }[];
    const asFloat = await client.embeddings.create({ model: MODEL, input: inputs, encoding_format: 'float' });
    const last = await json(fetch(`${lastServer.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: ids }) }));
    r.data.forEach((d, i) => {
      expect(d.index).toBe(i);
      expect(d.embedding).toHaveLength(ref.config.hidden_size);
      expect(asFloat.data[i]!.embedding).toEqual(Array.from(Float32Array.from(d.embedding)));
      // Both sides compute in float32 over 2 layers of width 32: the unit vectors agree to 1e-5.
      d.embedding.forEach((x, k) => expect(Math.abs(x - want[i]!.mean[k]!)).toBeLessThan(1e-5));
      (last.data[i].embedding as number[]).forEach((x, k) => expect(Math.abs(x - want[i]!.last[k]!)).toBeLessThan(1e-5));
    });
  });

  test('bad inputs are 400s naming the field', async () => {
    await expect(client.embeddings.create({ model: MODEL, input: '' })).rejects.toMatchObject({ status: 400, param: 'input' });
    await expect(client.embeddings.create({ model: MODEL, input: [[1, 2.5]] })).rejects.toMatchObject({ status: 400, param: 'input[0]' });
    await expect(client.embeddings.create({ model: MODEL, input: 'x', dimensions: 8 })).rejects.toMatchObject({ status: 400, param: 'dimensions', code: 'unsupported_parameter' });
    await expect(client.embeddings.create({ model: MODEL, input: 'Bern '.repeat(600) })).rejects.toMatchObject({ status: 400, param: 'input', code: 'context_length_exceeded' });
  });
});

describe('/v1/responses', () => {
  test('non-streamed: the chat answer as a response object with one output_text, usage and instructions as the system prompt', async () => {
    const chat = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'system', content: 'Be brief.' }, ...messages], max_tokens: 8, temperature: 0 });
    const r = await client.responses.create({ model: 'gpt-4.1', instructions: 'Be brief.', input: 'Tell me about Bern.', max_output_tokens: 8, temperature: 0 });
    expect(r).toMatchObject({ object: 'response', model: MODEL, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, instructions: 'Be brief.', max_output_tokens: 8 });
    expect(r.output_text).toBe(chat.choices[0]!.message.content);
    expect(r.output).toHaveLength(1);
    expect(r.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: r.output_text, annotations: [] }] });
    expect(r.usage).toMatchObject({ input_tokens: chat.usage!.prompt_tokens, output_tokens: 8, total_tokens: chat.usage!.prompt_tokens + 8 });
    // The same conversation as input items.
    const items = await client.responses.create({ model: MODEL, input: [{ role: 'developer', content: 'Be brief.' }, { role: 'user', content: [{ type: 'input_text', text: 'Tell me about Bern.' }] }], max_output_tokens: 8, temperature: 0 });
    expect(items.output_text).toBe(r.output_text);
  });

  test('streamed: the API event sequence, numbered, whose deltas make the final text', async () => {
    const stream = await client.responses.create({ model: MODEL, input: 'Tell me about Bern.', max_output_tokens: 10, temperature: 0, stream: true });
    const events: { type: string; sequence_number: number; delta?: string; response?: { output_text?: string; status: string } }[] = [];
    for await (const e of stream) events.push(e as (typeof events)[number]);
    const types = [...new Set(events.map((e) => e.type))];
    expect(types).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete']);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
    const whole = await client.responses.create({ model: MODEL, input: 'Tell me about Bern.', max_output_tokens: 10, temperature: 0 });
    expect(text).toBe(whole.output_text);
    // The SDK's own accumulation of the events gives the same response.
    const helper = client.responses.stream({ model: MODEL, input: 'Tell me about Bern.', max_output_tokens: 10, temperature: 0 });
    expect((await helper.finalResponse()).output_text).toBe(whole.output_text);
  });

  test('function tools, tool_choice and text.format json_schema', async () => {
    const tools = [{ type: 'function' as const, name: 'get_weather', description: 'Weather of a city.', strict: true, parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'], additionalProperties: false } }];
    const r = await client.responses.create({ model: MODEL, input: 'Weather in Bern?', tools, tool_choice: 'required', max_output_tokens: 60, temperature: 1 });
    const calls = r.output.filter((o) => o.type === 'function_call');
    expect(calls.length).toBeGreaterThan(0);
    for (const c of calls) {
      if (c.type !== 'function_call') throw new Error('not a call');
      expect(c.name).toBe('get_weather');
      expect(c.call_id).toMatch(/^call_/);
      expect(ajv.validate(tools[0]!.parameters, JSON.parse(c.arguments))).toBe(true);
    }
    // The call and its output go back as input items.
    const c = calls[0]!;
    if (c.type !== 'function_call') throw new Error('not a call');
    const next = await client.responses.create({ model: MODEL, input: [{ role: 'user', content: 'Weather in Bern?' }, c, { type: 'function_call_output', call_id: c.call_id, output: '{"temp": 20}' }], tools, max_output_tokens: 4 });
    expect(next.status).toBe('incomplete');
    const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 1, maximum: 5 } }, required: ['n'], additionalProperties: false };
    const f = await client.responses.create({ model: MODEL, input: 'Pick a number.', text: { format: { type: 'json_schema', name: 'pick', schema, strict: true } }, max_output_tokens: 20, temperature: 1 });
    expect(ajv.validate(schema, JSON.parse(f.output_text))).toBe(true);
    await expect(client.responses.create({ model: MODEL, input: 'x', previous_response_id: 'resp_1' })).rejects.toMatchObject({ status: 400, param: 'previous_response_id' });
    await expect(client.responses.create({ model: MODEL, input: 'x', max_output_tokens: 0 })).rejects.toMatchObject({ status: 400, param: 'max_output_tokens' });
    await expect(client.responses.create({ model: MODEL, input: 'x', tools: [{ type: 'web_search' }] })).rejects.toMatchObject({ status: 400, param: 'tools[0].type' });
  });
});

describe('sampling controls', () => {
  test('logit_bias: -100 bans the greedy token, +100 forces another, as the biased reference logits say', async () => {
    const ids = served.chat.encode(messages);
    const top = greedy(ids);
    const banned = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 1, temperature: 0, logit_bias: { [top]: -100 }, logprobs: true });
    const second = greedy(ids, { [top]: -100 });
    expect(second).not.toBe(top);
    expect(banned.choices[0]!.message.content).toBe(served.tokenizer.decode([second]));
    const pick = 1200;
    const forced = await client.completions.create({ model: MODEL, prompt: ids, max_tokens: 1, temperature: 1, seed: 3, logit_bias: { [pick]: 100 } });
    expect(forced.choices[0]!.text).toBe(served.tokenizer.decode([pick]));
  });

  test('JSON Schema with minimum/maximum, pattern, anyOf, $ref and enums of any type: every answer validates (ajv), integers in range', async () => {
    const schema = {
      $defs: { city: { type: 'string', pattern: '^[A-Z][a-z]{2,8}$' } },
      type: 'object',
      properties: {
        age: { type: 'integer', minimum: 18, maximum: 99 },
        score: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
        code: { type: 'string', pattern: '^[A-Z]{2}-\\d{3}$' },
        home: { $ref: '#/$defs/city' },
        contact: { anyOf: [{ type: 'string', minLength: 3, maxLength: 8 }, { type: 'null' }, { type: 'object', properties: { phone: { type: 'string', pattern: '^\\+41\\d{2}$' } }, required: ['phone'] }] },
        tag: { enum: [{ k: 1 }, ['x'], 'plain', 7] },
      },
      required: ['age', 'score', 'code', 'home', 'contact', 'tag'],
      additionalProperties: false,
    };
    const validate = ajv.compile(schema);
    for (const seed of [1, 2, 3, 4, 5]) {
      const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 160, temperature: 1, seed, response_format: { type: 'json_schema', json_schema: { name: 'card', schema, strict: true } } });
      const v = JSON.parse(r.choices[0]!.message.content!) as { age: number };
      expect(validate(v), `${r.choices[0]!.message.content} ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(Number.isInteger(v.age) && v.age >= 18 && v.age <= 99).toBe(true);
    }
    // An unbounded integer stays a safe integer (the noise model once wrote 3e41).
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 40, temperature: 1, seed, response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'object', properties: { age: { type: 'integer' } }, required: ['age'] } } } });
      expect(Number.isSafeInteger((JSON.parse(r.choices[0]!.message.content!) as { age: number }).age)).toBe(true);
    }
  });
});

describe('timings and request logs', () => {
  test('llama-server timings on responses and the last stream chunk; the log line has token counts and tokens/s', async () => {
    const r = (await client.chat.completions.create({ model: MODEL, messages, max_tokens: 5, temperature: 0 })) as OpenAI.ChatCompletion & { timings: Record<string, number> };
    const t = r.timings;
    expect(Object.keys(t).sort()).toEqual(['cache_n', 'predicted_ms', 'predicted_n', 'predicted_per_second', 'prompt_ms', 'prompt_n', 'prompt_per_second']);
    expect(t.prompt_n + t.cache_n).toBe(r.usage!.prompt_tokens);
    expect(t.cache_n).toBe(r.usage!.prompt_tokens_details!.cached_tokens);
    expect(t.predicted_n).toBe(5);
    expect(t.prompt_per_second).toBeCloseTo((t.prompt_n * 1000) / t.prompt_ms, 6);
    expect(t.predicted_per_second).toBeCloseTo((4 * 1000) / t.predicted_ms, 6);
    const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 5, temperature: 0, stream: true });
    const chunks: (OpenAI.ChatCompletionChunk & { timings?: Record<string, number> })[] = [];
    for await (const c of stream) chunks.push(c);
    const withTimings = chunks.filter((c) => c.timings);
    expect(withTimings).toHaveLength(1);
    expect(withTimings[0]!.choices[0]!.finish_reason).toBe('length');
    expect(withTimings[0]!.timings!.predicted_n).toBe(5);
    const completion = (await client.completions.create({ model: MODEL, prompt: 'Bern', max_tokens: 3 })) as OpenAI.Completion & { timings: Record<string, number> };
    expect(completion.timings.predicted_n).toBe(3);
    expect(log.some((l) => /^POST \/v1\/chat\/completions 200 [\d.]+ms prompt \d+( \(\d+ cached\))? \d+ms, 5 tokens \d+ms, [\d.]+ tok\/s$/.test(l))).toBe(true);
  });
});

describe('hostile inputs that used to be 500s', () => {
  test('a 360 KB chat prompt (over 170k tokens) is 400 context_length_exceeded on every route', async () => {
    const content = 'a '.repeat(180_000);
    expect(Buffer.byteLength(JSON.stringify({ messages: [{ role: 'user', content }] }))).toBeLessThan(1 << 20);
    const tokens = served.tokenizer.encodeIds(content, { addSpecialTokens: false }).length;
    expect(tokens).toBeGreaterThan(170_000);
    await expect(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }] })).rejects.toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'messages' });
    await expect(client.responses.create({ model: MODEL, input: content })).rejects.toMatchObject({ status: 400, code: 'context_length_exceeded' });
    const counted = await json(fetch(`${server.url}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content }] }) }));
    expect(counted.count).toBeGreaterThan(tokens);
  });

  test('schemas nested 1,000 levels deep in response_format or tool parameters are 400s naming where', async () => {
    const nest = (d: number): Record<string, unknown> => {
      let s: Record<string, unknown> = { type: 'string' };
      for (let i = 0; i < d; i++) s = { type: 'array', items: s };
      return s;
    };
    const rf = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: nest(1000) } } }) });
    expect(rf.status).toBe(400);
    expect((await json(rf)).error).toMatchObject({ code: 'too_deep', param: expect.stringMatching(/^response_format\.json_schema\.schema(\.items)+$/) });
    const tools = [{ type: 'function' as const, function: { name: 'f', parameters: { type: 'object', properties: { a: nest(1000) } } } }];
    await expect(client.chat.completions.create({ model: MODEL, messages, tools })).rejects.toMatchObject({ status: 400, code: 'too_deep' });
    // Within the request depth, beyond the schema depth: the schema compiler refuses it.
    await expect(client.chat.completions.create({ model: MODEL, messages, tools, tool_choice: 'required' })).rejects.toMatchObject({ status: 400 });
    const shallower = [{ type: 'function' as const, function: { name: 'f', parameters: nest(80) } }];
    await expect(client.chat.completions.create({ model: MODEL, messages, tools: shallower, tool_choice: 'required' })).rejects.toMatchObject({ status: 400, code: 'unsupported_parameter', param: expect.stringMatching(/^tools\[0\]\.function\.parameters(\.items)+$/) });
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });
});
