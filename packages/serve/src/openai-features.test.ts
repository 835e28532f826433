// logprobs / top_logprobs, response_format json_object / json_schema and tool_choice
// required / named, with the official `openai` client against a random-weight model: its output
// is noise, so every valid JSON answer comes from constrained decoding. Log-probabilities are
// checked against a float64 log-softmax of the reference model's logits (loadCheckpoint + step).

import { KVCache, loadCheckpoint, step, type ApertusModel } from '@apertus/model';
import type { Tokenizer } from '@apertus/tokenizer';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServedModel, type ServedModel } from './load';
import { createServer, type ApertusServer } from './server';
import { tempDir, writeRandomCheckpoint } from './testing';

const tmp = tempDir();
const MODEL = 'tiny-random';
let served: ServedModel;
let server: ApertusServer;
let client: OpenAI;
let ref: ApertusModel;
let tok: Tokenizer;
const ajv = new Ajv({ strict: false });

beforeAll(async () => {
  const dir = writeRandomCheckpoint(tmp.dir, MODEL);
  ref = loadCheckpoint(dir).model;
  served = await loadServedModel(dir);
  tok = served.tokenizer;
  server = createServer({ model: served, maxBatch: 8 });
  const url = await server.listen(0);
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
  tmp.remove();
});

/** Float64 log-softmax of the reference model's next-token logits after `ids`. */
function logSoftmax(ids: number[]): Float64Array {
  const logits = step(ref, [{ cache: new KVCache(ref.config, ids.length), tokens: ids }]);
  const V = ref.config.vocab_size;
  const row = Float64Array.from(logits.subarray(logits.length - V));
  const m = Math.max(...row);
  const lse = m + Math.log(row.reduce((s, x) => s + Math.exp(x - m), 0));
  return row.map((x) => x - lse);
}

const messages = [{ role: 'user' as const, content: 'Tell me about Bern.' }];

describe('logprobs', () => {
  test('chat: each token and its top alternatives carry the log-softmax of the model logits', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 3 });
    const content = r.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(6);
    const ids = served.chat.encode(messages);
    for (const entry of content) {
      const ls = logSoftmax(ids);
      const order = [...ls.keys()].sort((a, b) => ls[b]! - ls[a]! || a - b);
      const chosen = order[0]!; // greedy
      expect(entry.token).toBe(tok.decode([chosen]));
      expect(entry.logprob).toBeCloseTo(ls[chosen]!, 4);
      expect(entry.top_logprobs.map((t) => t.token)).toEqual(order.slice(0, 3).map((t) => tok.decode([t])));
      entry.top_logprobs.forEach((t, k) => expect(t.logprob).toBeCloseTo(ls[order[k]!]!, 4));
      ids.push(chosen);
    }
    // `bytes` are the tokens' raw bytes: together they are the UTF-8 of the answer (token strings
    // alone may hold half a character each).
    expect(Buffer.from(content.flatMap((c) => c.bytes ?? [])).toString('utf8')).toBe(r.choices[0]!.message.content);
  });

  test('chat streaming carries the same entries as the whole response; without logprobs they are null', async () => {
    const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 2 });
    const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 2, stream: true });
    const streamed = [];
    for await (const c of stream) streamed.push(...(c.choices[0]?.logprobs?.content ?? []));
    expect(streamed).toEqual(whole.choices[0]!.logprobs!.content);
    const plain = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2, temperature: 0 });
    expect(plain.choices[0]!.logprobs).toBeNull();
  });

  test('sampled tokens (temperature 1) get the logprob of the model, not of the sampling distribution', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 4, temperature: 1, seed: 7, logprobs: true });
    const ids = served.chat.encode(messages);
    for (const entry of r.choices[0]!.logprobs!.content!) {
      const ls = logSoftmax(ids);
      const id = [...ls.keys()].find((t) => tok.decode([t]) === entry.token && Math.abs(ls[t]! - entry.logprob) < 1e-4);
      expect(id).toBeDefined();
      expect(entry.top_logprobs).toEqual([]);
      ids.push(id!);
    }
  });

  test('completions: tokens, token_logprobs, top_logprobs and text_offset', async () => {
    const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 5, temperature: 0, logprobs: 2 });
    const lp = r.choices[0]!.logprobs!;
    const ids = tok.encodeIds('Once upon a time');
    expect(lp.tokens).toHaveLength(5);
    let offset = 0;
    lp.tokens!.forEach((t, i) => {
      const ls = logSoftmax(ids);
      const order = [...ls.keys()].sort((a, b) => ls[b]! - ls[a]! || a - b);
      expect(t).toBe(tok.decode([order[0]!]));
      expect(lp.token_logprobs![i]).toBeCloseTo(ls[order[0]!]!, 4);
      expect(Object.keys(lp.top_logprobs![i]!)).toEqual(order.slice(0, 2).map((x) => tok.decode([x])));
      expect(lp.text_offset![i]).toBe(offset);
      offset += t.length;
      ids.push(order[0]!);
    });
    if (!lp.tokens!.join('').includes('\ufffd')) expect(lp.tokens!.join('')).toBe(r.choices[0]!.text);
  });

  test('bad values are 400s naming the field', async () => {
    await expect(client.chat.completions.create({ model: MODEL, messages, top_logprobs: 2 })).rejects.toMatchObject({ status: 400, param: 'top_logprobs' });
    await expect(client.chat.completions.create({ model: MODEL, messages, logprobs: true, top_logprobs: 21 })).rejects.toMatchObject({ status: 400, param: 'top_logprobs' });
    await expect(client.completions.create({ model: MODEL, prompt: 'Hi', logprobs: 1, echo: true })).rejects.toMatchObject({ status: 400, param: 'logprobs', code: 'unsupported_parameter' });
  });
});

const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    age: { type: 'integer' },
    score: { type: 'number' },
    member: { type: 'boolean' },
    role: { type: 'string', enum: ['admin', 'user'] },
    tags: { type: 'array', items: { type: 'string' } },
    nick: { type: ['string', 'null'] },
  },
  required: ['name', 'age', 'role', 'tags', 'nick'],
  additionalProperties: false,
} as const;

describe('response_format', () => {
  test('json_object: the noise model always answers a JSON object', async () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 20, temperature: 1, seed, response_format: { type: 'json_object' } });
      const text = r.choices[0]!.message.content!;
      const v: unknown = JSON.parse(text);
      expect(v !== null && typeof v === 'object' && !Array.isArray(v)).toBe(true);
      expect(r.choices[0]!.finish_reason).toBe('stop');
      expect(r.usage!.completion_tokens).toBeLessThanOrEqual(20);
    }
  });

  test('json_schema: every answer parses and validates (ajv), streamed or not, n > 1, tight budgets', async () => {
    const validate = ajv.compile(PERSON);
    const response_format = { type: 'json_schema' as const, json_schema: { name: 'person', schema: PERSON as unknown as Record<string, unknown>, strict: true } };
    for (const [seed, max] of [[1, 56], [2, 80], [3, 200]] as const) {
      const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: max, temperature: 1, seed, n: 3, response_format });
      for (const c of r.choices) {
        const v: unknown = JSON.parse(c.message.content!);
        expect(validate(v), `${c.message.content} ${JSON.stringify(validate.errors)}`).toBe(true);
        expect(c.finish_reason).toBe('stop');
      }
    }
    const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 70, temperature: 1, seed: 9, response_format, stream: true });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    expect(validate(JSON.parse(text))).toBe(true);
  });

  test('json_schema with greedy decoding and logprobs: the logprob is the model\'s for the constrained token', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false };
    const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0, logprobs: true, response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } });
    expect(JSON.parse(r.choices[0]!.message.content!)).toHaveProperty('ok');
    const ids = served.chat.encode(messages);
    const first = r.choices[0]!.logprobs!.content![0]!;
    expect(first.token.startsWith('{')).toBe(true);
    const ls = logSoftmax(ids);
    const id = tok.tokenToId(tok.encode(first.token, { addSpecialTokens: false }).tokens[0]!)!;
    expect(first.logprob).toBeCloseTo(ls[id]!, 4);
  });

  test('unsupported schemas and impossible budgets are 400s naming the field', async () => {
    const bad = { type: 'object', properties: { email: { type: 'string', format: 'email' } } };
    await expect(client.chat.completions.create({ model: MODEL, messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: bad } } }))
      .rejects.toMatchObject({ status: 400, param: 'response_format.json_schema.schema.properties.email.format', code: 'unsupported_parameter' });
    await expect(client.chat.completions.create({ model: MODEL, messages, max_tokens: 5, response_format: { type: 'json_schema', json_schema: { name: 'p', schema: PERSON as unknown as Record<string, unknown> } } }))
      .rejects.toMatchObject({ status: 400, param: 'max_tokens' });
  });
});

const TOOLS = [
  { type: 'function' as const, function: { name: 'get_weather', description: 'Weather of a city.', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'], additionalProperties: false } } },
  { type: 'function' as const, function: { name: 'get_time', description: 'Time in a zone.', parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['CET', 'UTC'] } }, required: ['zone'] } } },
];

describe('tool_choice', () => {
  test('"required": the answer is one or more calls of the given tools with valid arguments', async () => {
    const validators = new Map(TOOLS.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
    for (const seed of [1, 2, 3, 4]) {
      const r = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS, tool_choice: 'required', max_tokens: 60, temperature: 1, seed });
      const c = r.choices[0]!;
      expect(c.finish_reason).toBe('tool_calls');
      expect(c.message.tool_calls!.length).toBeGreaterThan(0);
      for (const call of c.message.tool_calls!) {
        if (call.type !== 'function') throw new Error('not a function call');
        const validate = validators.get(call.function.name);
        expect(validate).toBeDefined();
        expect(validate!(JSON.parse(call.function.arguments))).toBe(true);
      }
    }
  });

  test('a named function: exactly one call of it, streamed too', async () => {
    const tool_choice = { type: 'function' as const, function: { name: 'get_time' } };
    const r = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS, tool_choice, max_tokens: 40, temperature: 1, seed: 3 });
    const calls = r.choices[0]!.message.tool_calls!;
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    if (call.type !== 'function') throw new Error('not a function call');
    expect(call.function.name).toBe('get_time');
    expect(['CET', 'UTC']).toContain(JSON.parse(call.function.arguments).zone);
    const stream = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS, tool_choice, max_tokens: 40, temperature: 1, seed: 4, stream: true });
    const names: string[] = [];
    let finish: string | null = null;
    for await (const c of stream) {
      for (const t of c.choices[0]?.delta.tool_calls ?? []) if (t.function?.name) names.push(t.function.name);
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect([names, finish]).toEqual([['get_time'], 'tool_calls']);
  });

  test('bad tool choices are 400s', async () => {
    await expect(client.chat.completions.create({ model: MODEL, messages, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }))
      .rejects.toMatchObject({ status: 400, param: 'tool_choice.function.name' });
    await expect(client.chat.completions.create({ model: MODEL, messages, tool_choice: 'required' })).rejects.toMatchObject({ status: 400, param: 'tool_choice' });
    await expect(client.chat.completions.create({ model: MODEL, messages, tools: TOOLS, tool_choice: 'required', response_format: { type: 'json_object' } }))
      .rejects.toMatchObject({ status: 400, param: 'tool_choice' });
  });
});
