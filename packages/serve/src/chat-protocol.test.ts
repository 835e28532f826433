// Reasoning, tool calls, stop tokens, UTF-8 streaming and mid-stream errors, end to end through
// the HTTP server and the official client, using scripted checkpoints (see testing.ts): real
// Apertus networks whose weights make them emit a chosen token sequence.

import { applyApertusChatTemplate } from '@apertus/tokenizer';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServedModel, type ServedModel } from './load';
import { createServer, type ApertusServer } from './server';
import { json, readSse, scriptIds, tempDir, testTokenizer, testTokenizerFiles, writeScriptedCheckpoint } from './testing';

const tmp = tempDir();
const tok = testTokenizer();
const servers: ApertusServer[] = [];
const clients: Record<string, OpenAI> = {};
const urls: Record<string, string> = {};

const TOOL_SCRIPT = '<|inner_prefix|>Let me check<|inner_suffix|>Sure!<|tools_prefix|>[{"get_weather":{"city":"Bern"}}]<|tools_suffix|>';
// A token the broken servers' decoder fails on (see `undecodable`); an id past the tokenizer for the padded model.
const BAD_ID = scriptIds(tok, '?')[0]!;
const PAD_ID = testTokenizerFiles().vocabSize + 3;

/** A served model whose streaming decoder throws on `id`: a decode failure in the middle of a reply. */
async function undecodable(dir: string, id: number): Promise<ServedModel> {
  const served = await loadServedModel(dir);
  const tokenizer = served.tokenizer;
  const open = tokenizer.decodeStream.bind(tokenizer);
  tokenizer.decodeStream = (o) => {
    const s = open(o);
    const step = s.step.bind(s);
    s.step = (x: number) => {
      if (x === id) throw new Error(`token ${x} has no text`);
      return step(x);
    };
    return s;
  };
  return served;
}
const warnings: string[] = [];

beforeAll(async () => {
  const dirs = {
    tools: writeScriptedCheckpoint(tmp.dir, 'tools', [{ from: 67, then: scriptIds(tok, TOOL_SCRIPT) }]),
    hello: writeScriptedCheckpoint(tmp.dir, 'hello', [{ from: 67, then: [...scriptIds(tok, 'Hello world!'), 68] }]),
    // "Grüezi" byte by byte: ü is two byte tokens (0xC3 0xBC) that must never be split in a delta.
    bytes: writeScriptedCheckpoint(tmp.dir, 'bytes', [{ from: 67, then: [...Buffer.from('Grüezi', 'utf8')].map((b) => 1000 + b).concat([68]) }]),
    // A model whose vocabulary is padded beyond its tokenizer's, whose best next token after 'Hi there' has no text.
    padded: writeScriptedCheckpoint(tmp.dir, 'padded', [{ from: 67, then: [...scriptIds(tok, 'Hi there'), PAD_ID, 68] }], { vocabSize: PAD_ID + 5 }),
    // A reply whose decoder fails after 'Hi there', and one that fails at its very first token.
    broken: writeScriptedCheckpoint(tmp.dir, 'broken', [{ from: 67, then: [...scriptIds(tok, 'Hi there'), BAD_ID, 68] }]),
    brokenFirst: writeScriptedCheckpoint(tmp.dir, 'broken-first', [{ from: 67, then: [BAD_ID, 68] }]),
  };
  for (const [name, dir] of Object.entries(dirs)) {
    const model = name.startsWith('broken') ? undecodable(dir, BAD_ID) : loadServedModel(dir, { onWarning: (m) => warnings.push(m) });
    const s = createServer({ model });
    servers.push(s);
    urls[name] = await s.listen(0);
    await s.ready;
    clients[name] = new OpenAI({ baseURL: `${urls[name]}/v1`, apiKey: 'x', maxRetries: 0 });
  }
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  tmp.remove();
});

const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

describe('tool calls and reasoning', () => {
  test('non-streamed: reasoning_content, content and tool_calls come back separately', async () => {
    const r = await clients.tools!.chat.completions.create({ model: 'tools', messages: [{ role: 'user', content: 'Weather in Bern?' }], tools, enable_thinking: true } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const m = r.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content: string | null };
    expect(m.reasoning_content).toBe('Let me check');
    expect(m.content).toBe('Sure!');
    expect(m.tool_calls).toHaveLength(1);
    const call = m.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.type).toBe('function');
    expect(call.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city": "Bern"}' });
    expect(r.choices[0]!.finish_reason).toBe('tool_calls');
    // Every scripted token was sampled, <|tools_suffix|> (a stop token) included.
    expect(r.usage!.completion_tokens).toBe(scriptIds(tok, TOOL_SCRIPT).length);
  });

  test('streamed: reasoning and content deltas, one tool_calls delta, finish_reason tool_calls', async () => {
    const stream = await clients.tools!.chat.completions.create({ model: 'tools', messages: [{ role: 'user', content: 'Weather in Bern?' }], tools, stream: true });
    let reasoning = '';
    let content = '';
    const calls: unknown[] = [];
    const reasons: string[] = [];
    for await (const c of stream) {
      const d = c.choices[0]?.delta as { content?: string; reasoning_content?: string; tool_calls?: unknown[] } | undefined;
      reasoning += d?.reasoning_content ?? '';
      content += d?.content ?? '';
      calls.push(...(d?.tool_calls ?? []));
      if (c.choices[0]?.finish_reason) reasons.push(c.choices[0].finish_reason);
    }
    expect(reasoning).toBe('Let me check');
    expect(content).toBe('Sure!');
    expect(calls).toEqual([{ index: 0, id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'get_weather', arguments: '{"city": "Bern"}' } }]);
    expect(reasons).toEqual(['tool_calls']);
  });

  test('tool_choice "none": tools are not offered and the block stays text', async () => {
    const r = await clients.tools!.chat.completions.create({ model: 'tools', messages: [{ role: 'user', content: 'Weather?' }], tools, tool_choice: 'none' });
    expect(r.choices[0]!.message.tool_calls).toBeUndefined();
    expect(r.choices[0]!.message.content).toBe('Sure![{"get_weather":{"city":"Bern"}}]');
    expect(r.choices[0]!.finish_reason).toBe('stop');
  });

  test('the follow-up turn (assistant tool_calls + tool result) renders with the Apertus template', async () => {
    const messages = [
      { role: 'user' as const, content: 'Weather in Bern?' },
      { role: 'assistant' as const, content: null, tool_calls: [{ id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city": "Bern"}' } }] },
      { role: 'tool' as const, tool_call_id: 'call_1', content: '{"temp": 20}' },
    ];
    const res = await fetch(`${urls.tools}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages, tools, enable_thinking: true }) });
    const { tokens } = await json(res);
    const want = applyApertusChatTemplate(tok, [
      { role: 'user', content: 'Weather in Bern?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Bern"}' } }] },
      { role: 'tool', content: '{"temp": 20}', tool_call_id: 'call_1' },
    ], { tools, enableThinking: true, addGenerationPrompt: true });
    expect(tokens).toEqual(want.ids);
    expect(want.text).toContain('Deliberation: enabled\n');
    expect(want.text).toContain('<|tools_prefix|>[{"get_weather": {"city": "Bern"}}]<|tools_suffix|>[{"temp": 20}]<|assistant_start|>');
    // And the client can send that conversation.
    const r = await clients.tools!.chat.completions.create({ model: 'tools', messages, tools });
    expect(r.choices[0]!.finish_reason).toBe('tool_calls');
  });
});

describe('stop tokens and streaming text', () => {
  test('<|assistant_end|> ends the answer with finish_reason stop and is counted in usage', async () => {
    const r = await clients.hello!.chat.completions.create({ model: 'hello', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 50 });
    expect(r.choices[0]!.message.content).toBe('Hello world!');
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage!.completion_tokens).toBe(scriptIds(tok, 'Hello world!').length + 1);
  });

  test('a multi-byte character is never split across deltas', async () => {
    const stream = await clients.bytes!.chat.completions.create({ model: 'bytes', messages: [{ role: 'user', content: 'Hi' }], stream: true });
    const deltas: string[] = [];
    for await (const c of stream) if (c.choices[0]?.delta.content) deltas.push(c.choices[0].delta.content);
    expect(deltas.join('')).toBe('Grüezi');
    expect(deltas).toContain('ü');
    for (const d of deltas) expect(d).not.toContain('\uFFFD');
  });
});

describe('a vocabulary padded beyond the tokenizer', () => {
  test('loads with a warning, and its ids without text are never sampled (the reply is no 500)', async () => {
    expect(warnings.some((w) => w.includes(`ids ${testTokenizerFiles().vocabSize}–${PAD_ID + 4} have no text and are never sampled`))).toBe(true);
    const r = await clients.padded!.chat.completions.create({ model: 'padded', messages: [{ role: 'user', content: 'Hi' }], temperature: 0, max_tokens: 12 });
    expect(r.choices[0]!.message.content!.startsWith('Hi there')).toBe(true);
    const sampled = await clients.padded!.chat.completions.create({ model: 'padded', messages: [{ role: 'user', content: 'Hi' }], temperature: 1, max_tokens: 12, logprobs: true, top_logprobs: 0 });
    expect(sampled.choices[0]!.logprobs!.content!.length).toBeGreaterThan(0);
  });
});

describe('mid-stream errors', () => {
  test('SSE: chunks, then an OpenAI error event, then [DONE]; the client throws; the server keeps serving', async () => {
    const res = await fetch(`${urls.broken}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'broken', messages: [{ role: 'user', content: 'Hi' }], stream: true }),
    });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events[events.length - 1]).toBe('[DONE]');
    const payloads = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(payloads.map((p) => p.choices?.[0]?.delta?.content ?? '').join('')).toBe('Hi there');
    const err = payloads[payloads.length - 1];
    expect(err.error).toMatchObject({ type: 'server_error', code: 'decode_error', param: null });
    expect(err.error.message).toContain(String(BAD_ID));

    const stream = await clients.broken!.chat.completions.create({ model: 'broken', messages: [{ role: 'user', content: 'Hi' }], stream: true });
    let text = '';
    await expect(async () => {
      for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    }).rejects.toThrow(APIError);
    expect(text).toBe('Hi there');
    // Non-streamed, the same failure is a 500 with the error body.
    await expect(clients.broken!.chat.completions.create({ model: 'broken', messages: [{ role: 'user', content: 'Hi' }] })).rejects.toMatchObject({ status: 500, code: 'decode_error' });
    // With n = 2 both sequences fail together, and both leave the batch (also when the very first token fails).
    await expect(clients.broken!.chat.completions.create({ model: 'broken', messages: [{ role: 'user', content: 'Hi' }], n: 2 })).rejects.toMatchObject({ status: 500 });
    await expect(clients.brokenFirst!.chat.completions.create({ model: 'broken-first', messages: [{ role: 'user', content: 'Hi' }], n: 3 })).rejects.toMatchObject({ status: 500, code: 'decode_error' });
    // The failed sequences leave the batch after their error is sent: wait for that (bounded, as a
    // loaded machine may take longer than any fixed sleep), then check that nothing is left.
    await Promise.race([Promise.all(servers.slice(4).map((s) => s.scheduler!.idle())), new Promise((r) => setTimeout(r, 10_000))]);
    for (const s of servers.slice(4)) expect(s.scheduler!.running + s.scheduler!.queued).toBe(0);
    expect((await fetch(`${urls.broken}/health`)).status).toBe(200);
    const ok = await clients.broken!.chat.completions.create({ model: 'broken', messages: [{ role: 'user', content: 'Hi' }], max_tokens: scriptIds(tok, 'Hi there').length });
    expect(ok.choices[0]!.message.content).toBe('Hi there');
    expect(ok.choices[0]!.finish_reason).toBe('length');
  });
});
