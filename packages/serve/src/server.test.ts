// The server against the official `openai` client and against `generate()` from @apertus/model
// (the independent reference: a different decode loop, the synchronous checkpoint loader, no
// batching, no streaming, no prefix cache: the server here runs with one, so every comparison
// below also checks that reused KV gives the same tokens).

import { generate, loadCheckpoint, type ApertusModel } from '@apertus/model';
import { applyApertusChatTemplate, type Tokenizer } from '@apertus/tokenizer';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServedModel } from './load';
import { createServer, type ApertusServer } from './server';
import { json, parsePrometheus, readSse, tempDir, testTokenizer, writeRandomCheckpoint } from './testing';

const tmp = tempDir();
let server: ApertusServer;
let client: OpenAI;
let ref: ApertusModel;
let tok: Tokenizer;
const MODEL = 'tiny-random';
const STOP_IDS = [2, 68, 72];

/** Greedy reference continuation of `ids`, decoded as the server decodes (special tokens skipped). */
function reference(ids: number[], maxTokens: number, opts: { seed?: number; temperature?: number } = {}): { text: string; tokens: number[] } {
  const g = generate(ref, ids, { temperature: opts.temperature ?? 0, maxTokens, stopTokenIds: STOP_IDS, ...(opts.seed !== undefined ? { seed: opts.seed } : {}) });
  return { text: tok.decode(g.tokens, { skipSpecialTokens: true }), tokens: g.tokens };
}

function chatIds(messages: Parameters<typeof applyApertusChatTemplate>[1], enableThinking = false): number[] {
  return applyApertusChatTemplate(tok, messages, { addGenerationPrompt: true, enableThinking }).ids;
}

beforeAll(async () => {
  const dir = writeRandomCheckpoint(tmp.dir, MODEL);
  ref = loadCheckpoint(dir).model;
  tok = testTokenizer();
  server = createServer({ model: loadServedModel(dir), maxBatch: 6, maxQueue: 16, prefixCacheBytes: 1 << 24 });
  const url = await server.listen(0);
  await server.ready;
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
  tmp.remove();
});

describe('OpenAI API with the official client', () => {
  test('lists the model', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual([MODEL]);
    expect((await client.models.retrieve(MODEL)).id).toBe(MODEL);
  });

  test('greedy chat completion equals generate() on the template-rendered prompt', async () => {
    const messages = [{ role: 'system' as const, content: 'You are terse.' }, { role: 'user' as const, content: 'What is the capital of Switzerland?' }];
    const r = await client.chat.completions.create({ model: MODEL, messages, temperature: 0, max_tokens: 12 });
    const ids = chatIds(messages);
    const want = reference(ids, 12);
    expect(want.tokens).toHaveLength(12);
    expect(r.object).toBe('chat.completion');
    expect(r.choices).toHaveLength(1);
    expect(r.choices[0]!.message.content).toBe(want.text);
    expect(r.choices[0]!.message.role).toBe('assistant');
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage).toEqual({ prompt_tokens: ids.length, completion_tokens: 12, total_tokens: ids.length + 12, prompt_tokens_details: { cached_tokens: 0 } });
  });

  test('streamed chat equals the non-streamed answer, with role chunk, finish chunk and usage chunk', async () => {
    const messages = [{ role: 'user' as const, content: 'Tell me a story about mountains.' }];
    const whole = await client.chat.completions.create({ model: MODEL, messages, temperature: 0, max_completion_tokens: 20 });
    const stream = await client.chat.completions.create({ model: MODEL, messages, temperature: 0, max_completion_tokens: 20, stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(text).toBe(reference(chatIds(messages), 20).text);
    const finish = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finish.map((c) => c.choices[0]!.finish_reason)).toEqual(['length']);
    const last = chunks[chunks.length - 1]!;
    expect(last.choices).toEqual([]);
    // The same counts; the second request found the first one's prompt in the prefix cache (whole 16-token blocks).
    expect(last.usage).toEqual({ ...whole.usage, prompt_tokens_details: { cached_tokens: Math.floor((whole.usage!.prompt_tokens - 1) / 16) * 16 } });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
  });

  test('completions: string prompt (with BOS), echo, stop strings, streaming', async () => {
    const prompt = 'Once upon a time';
    const ids = tok.encodeIds(prompt);
    expect(ids[0]).toBe(1);
    const want = reference(ids, 16).text;
    const r = await client.completions.create({ model: MODEL, prompt, max_tokens: 16, temperature: 0 });
    expect(r.choices[0]!.text).toBe(want);
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage).toMatchObject({ prompt_tokens: ids.length, completion_tokens: 16, total_tokens: ids.length + 16 });
    const echoed = await client.completions.create({ model: MODEL, prompt, max_tokens: 16, temperature: 0, echo: true });
    expect(echoed.choices[0]!.text).toBe(prompt + want);
    // A stop string from the middle of the reference text: the answer is cut right before it.
    const stop = want.slice(5, 8);
    const cut = want.slice(0, want.indexOf(stop));
    const stopped = await client.completions.create({ model: MODEL, prompt, max_tokens: 16, temperature: 0, stop: [stop, 'zzzz-never'] });
    expect(stopped.choices[0]!.text).toBe(cut);
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
    const stream = await client.completions.create({ model: MODEL, prompt, max_tokens: 16, temperature: 0, stop, stream: true });
    let streamed = '';
    const reasons: (string | null)[] = [];
    for await (const c of stream) {
      streamed += c.choices[0]?.text ?? '';
      if (c.choices[0]?.finish_reason) reasons.push(c.choices[0].finish_reason);
    }
    expect(streamed).toBe(cut);
    expect(reasons).toEqual(['stop']);
  });

  test('completions with token-id prompts and several prompts', async () => {
    const p1 = tok.encodeIds('Hello world');
    const p2 = tok.encodeIds('The capital of Switzerland is');
    const r = await client.completions.create({ model: MODEL, prompt: [p1, p2], max_tokens: 6, temperature: 0 });
    expect(r.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(r.choices.map((c) => c.text)).toEqual([reference(p1, 6).text, reference(p2, 6).text]);
    expect(r.usage!.prompt_tokens).toBe(p1.length + p2.length);
  });

  test('n > 1 shares one prefill; with a seed, choice i samples like generate() with seed + i', async () => {
    const messages = [{ role: 'user' as const, content: 'Hello!' }];
    const ids = chatIds(messages);
    const r = await client.chat.completions.create({ model: MODEL, messages, temperature: 1, top_p: 0.9, seed: 1234, n: 3, max_tokens: 10 });
    expect(r.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    const want = [0, 1, 2].map((i) => generate(ref, ids, { temperature: 1, topP: 0.9, seed: 1234 + i, maxTokens: 10, stopTokenIds: STOP_IDS }));
    expect(r.choices.map((c) => c.message.content)).toEqual(want.map((g) => tok.decode(g.tokens, { skipSpecialTokens: true })));
    // Sampling at temperature 1 makes the three continuations differ.
    expect(new Set(r.choices.map((c) => c.message.content)).size).toBeGreaterThan(1);
    expect(r.usage!.prompt_tokens).toBe(ids.length);
    // Usage counts every sampled token, a stop token included (generate() leaves it out of `tokens`).
    expect(r.usage!.completion_tokens).toBe(want.reduce((s, g) => s + g.tokens.length + (g.finishReason === 'stop' ? 1 : 0), 0));
  });

  test('sampling fields (top_k, min_p, penalties, seed) reach the sampler: output equals generate() with the same parameters', async () => {
    const prompt = 'The quick brown fox';
    const params = { temperature: 0.7, top_p: 0.95, top_k: 20, min_p: 0.02, presence_penalty: 1.5, frequency_penalty: 0.5, repetition_penalty: 1.2, seed: 99 };
    const r = await client.completions.create({ model: MODEL, prompt, max_tokens: 12, ...params } as OpenAI.CompletionCreateParamsNonStreaming);
    const g = generate(ref, tok.encodeIds(prompt), {
      temperature: 0.7, topP: 0.95, topK: 20, minP: 0.02, presencePenalty: 1.5, frequencyPenalty: 0.5, repetitionPenalty: 1.2, seed: 99, maxTokens: 12, stopTokenIds: STOP_IDS,
    });
    expect(r.choices[0]!.text).toBe(tok.decode(g.tokens, { skipSpecialTokens: true }));
    // The penalties change the result: without them (same seed) the text differs.
    const plain = generate(ref, tok.encodeIds(prompt), { temperature: 0.7, topP: 0.95, topK: 20, minP: 0.02, seed: 99, maxTokens: 12, stopTokenIds: STOP_IDS });
    expect(plain.tokens).not.toEqual(g.tokens);
  });

  test('concurrent requests of different lengths share decode steps and each equals its reference', async () => {
    const before = parsePrometheus(await (await fetch(`${server.url}/metrics`)).text()).get('apertus_steps_total')!;
    const prompts = ['a', 'The quick brown fox jumps over the lazy dog.', 'Grüezi mitenand', 'Numbers: 1 2 3', 'function add(a, b)', 'Bern'];
    const results = await Promise.all(prompts.map((p, i) => client.completions.create({ model: MODEL, prompt: p, max_tokens: 8 + i, temperature: 0 })));
    results.forEach((r, i) => expect(r.choices[0]!.text).toBe(reference(tok.encodeIds(prompts[i]!), 8 + i).text));
    const steps = parsePrometheus(await (await fetch(`${server.url}/metrics`)).text()).get('apertus_steps_total')! - before;
    const tokens = results.reduce((s, r) => s + r.usage!.completion_tokens, 0);
    // Run one by one, these would take ≥ tokens steps (one per token, plus prefills).
    expect(steps).toBeLessThan(tokens);
  });

  test('tokenize and detokenize agree with the tokenizer', async () => {
    const text = 'Grüezi mitenand! 2+2=4';
    const t = await json(fetch(`${server.url}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: text }) }));
    expect(t.tokens).toEqual(tok.encodeIds(text));
    expect(t.count).toBe(t.tokens.length);
    const chat = await json(fetch(`${server.url}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }] }) }));
    expect(chat.tokens).toEqual(chatIds([{ role: 'user', content: 'Hi' }]));
    const d = await json(fetch(`${server.url}/detokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tokens: t.tokens }) }));
    expect(d.prompt).toBe(`<s>${text}`);
  });

  test('metrics count requests, tokens and latencies', async () => {
    const before = parsePrometheus(await (await fetch(`${server.url}/metrics`)).text());
    const rs = await Promise.all([3, 4, 5].map((m) => client.completions.create({ model: MODEL, prompt: 'Hello', max_tokens: m, temperature: 0 })));
    const res = await fetch(`${server.url}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const after = parsePrometheus(await res.text());
    const d = (k: string) => after.get(k)! - (before.get(k) ?? 0);
    expect(d('apertus_requests_total{route="/v1/completions",status="200"}')).toBe(3);
    expect(d('apertus_generation_tokens_total')).toBe(rs.reduce((s, r) => s + r.usage!.completion_tokens, 0));
    // Prompt tokens are prefilled or reused from the prefix cache.
    expect(d('apertus_prompt_tokens_total') + d('apertus_prefix_cache_reused_tokens_total')).toBe(rs.reduce((s, r) => s + r.usage!.prompt_tokens, 0));
    expect(d('apertus_time_to_first_token_seconds_count')).toBe(3);
    expect(d('apertus_inter_token_latency_seconds_count')).toBe(2 + 3 + 4);
    expect(d('apertus_sequences_finished_total{finish_reason="length"}')).toBe(3);
    expect(after.get('apertus_queue_depth')).toBe(0);
    expect(after.get('apertus_sequences_running')).toBe(0);
    expect(after.get('apertus_kv_cache_bytes')).toBe(0);
    expect(after.get('apertus_model_loaded')).toBe(1);
  });

  test('a second chat turn reuses the first turn’s KV (metrics) and answers as generate() on the whole history', async () => {
    const metrics = async () => parsePrometheus(await (await fetch(`${server.url}/metrics`)).text());
    const turn1 = [{ role: 'user' as const, content: 'Tell me about the mountains of Switzerland.' }];
    const r1 = await client.chat.completions.create({ model: MODEL, messages: turn1, temperature: 0, max_tokens: 6 });
    const before = await metrics();
    const turn2 = [...turn1, { role: 'assistant' as const, content: r1.choices[0]!.message.content! }, { role: 'user' as const, content: 'And the lakes?' }];
    const r2 = await client.chat.completions.create({ model: MODEL, messages: turn2, temperature: 0, max_tokens: 6 });
    const after = await metrics();
    const d = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
    expect(d('apertus_prefix_cache_lookups_total{result="hit"}')).toBe(1);
    // Every whole 16-token block of turn 1's prompt and reply is reused.
    expect(d('apertus_prefix_cache_reused_tokens_total')).toBeGreaterThanOrEqual(Math.floor((chatIds(turn1).length + 6) / 16) * 16);
    expect(d('apertus_prompt_tokens_total') + d('apertus_prefix_cache_reused_tokens_total')).toBe(r2.usage!.prompt_tokens);
    expect(r2.choices[0]!.message.content).toBe(reference(chatIds(turn2), 6).text);
    expect(after.get('apertus_prefix_cache_bytes')).toBeGreaterThan(0);
    expect(after.get('apertus_kv_blocks')).toBeGreaterThan(0);
  });

  test('raw SSE framing: data lines, usage: null on chunks, [DONE] last', async () => {
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3, stream: true, stream_options: { include_usage: true } }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await readSse(res);
    expect(events[events.length - 1]).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    for (const c of chunks.slice(0, -1)) expect(c.usage).toBeNull();
    expect(chunks[chunks.length - 1].usage.completion_tokens).toBe(3);
  });
});
