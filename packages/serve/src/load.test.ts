// Load on loopback, bounded in time and count: N clients stream completions back to back for a
// fixed duration. Every request must finish with the reference text and [DONE], none may be lost,
// the KV-cache memory stays within the batch bound and is all released at the end. Latency
// figures are printed, never asserted (see bench/load.mjs for the benchmark).

import { generate, loadCheckpoint } from '@apertus/model';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServedModel } from './load';
import { createServer, type ApertusServer } from './server';
import { parsePrometheus, tempDir, testTokenizer, writeRandomCheckpoint } from './testing';

const CLIENTS = 8;
const DURATION_MS = 2500;
const MAX_REQUESTS = 400;
const MAX_TOKENS = 8;
const MAX_BATCH = 6;

const tmp = tempDir();
let server: ApertusServer;
const prompts = ['Hello', 'The capital of Switzerland is', 'Once upon a time there was', 'function add(a, b)', 'Grüezi'];
const expected = new Map<string, string>();

beforeAll(async () => {
  const dir = writeRandomCheckpoint(tmp.dir, 'tiny');
  const ref = loadCheckpoint(dir).model;
  const tok = testTokenizer();
  for (const p of prompts) expected.set(p, tok.decode(generate(ref, tok.encodeIds(p), { temperature: 0, maxTokens: MAX_TOKENS }).tokens, { skipSpecialTokens: true }));
  server = createServer({ model: await loadServedModel(dir), maxBatch: MAX_BATCH, maxQueue: CLIENTS });
  await server.listen(0);
});

afterAll(async () => {
  await server.close();
  tmp.remove();
});

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

describe('load', () => {
  test(`${CLIENTS} concurrent streaming clients for ${DURATION_MS} ms: all complete, correct, none lost, memory bounded`, async () => {
    const before = parsePrometheus(await (await fetch(`${server.url}/metrics`)).text());
    const scheduler = server.scheduler!;
    const config = scheduler.served.model.config;
    // Bound: every running sequence holds at most (context) tokens of K and V in f32.
    const kvBound = MAX_BATCH * config.max_position_embeddings * config.num_hidden_layers * 2 * config.num_key_value_heads * config.head_dim * 4;
    let kvPeak = 0;
    const sampler = setInterval(() => (kvPeak = Math.max(kvPeak, scheduler.kvCacheBytes)), 5);
    const heapStart = process.memoryUsage().heapUsed;
    const deadline = Date.now() + DURATION_MS;
    let started = 0;
    const latencies: number[] = [];
    const ttfts: number[] = [];
    const failures: string[] = [];
    let tokens = 0;
    async function client(c: number): Promise<void> {
      // At least two requests per client whatever the machine's speed, so the load is back to back.
      for (let k = 0; (k < 2 || Date.now() < deadline) && started < MAX_REQUESTS; k++) {
        started++;
        const prompt = prompts[(c + k) % prompts.length]!;
        const t0 = performance.now();
        const res = await fetch(`${server.url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'tiny', prompt, max_tokens: MAX_TOKENS, temperature: 0, stream: true, stream_options: { include_usage: true } }),
        });
        if (res.status !== 200) {
          failures.push(`status ${res.status}: ${await res.text()}`);
          continue;
        }
        const reader = res.body!.getReader();
        const dec = new TextDecoder();
        let buf = '';
        let first = 0;
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          if (!first) first = performance.now();
          buf += dec.decode(value, { stream: true });
        }
        const events = buf.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
        const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { choices: { text: string }[]; usage: { completion_tokens: number } | null });
        const text = chunks.map((ch) => ch.choices[0]?.text ?? '').join('');
        if (events[events.length - 1] !== '[DONE]') failures.push(`no [DONE] for ${prompt}`);
        else if (text !== expected.get(prompt)) failures.push(`wrong text for ${prompt}: ${JSON.stringify(text)}`);
        tokens += chunks[chunks.length - 1]!.usage!.completion_tokens;
        latencies.push(performance.now() - t0);
        ttfts.push(first - t0);
      }
    }
    const t0 = performance.now();
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    const after = parsePrometheus(await (await fetch(`${server.url}/metrics`)).text());

    expect(failures).toEqual([]);
    expect(latencies.length).toBe(started);
    expect(started).toBeGreaterThanOrEqual(2 * CLIENTS);
    // No request lost: the server counted exactly the requests the clients completed.
    expect(after.get('apertus_requests_total{route="/v1/completions",status="200"}')! - (before.get('apertus_requests_total{route="/v1/completions",status="200"}') ?? 0)).toBe(started);
    expect(after.get('apertus_generation_tokens_total')! - (before.get('apertus_generation_tokens_total') ?? 0)).toBe(tokens);
    expect(tokens).toBe(started * MAX_TOKENS);
    // Memory: KV caches stayed within the batch bound and are all released; the heap did not run away.
    expect(kvPeak).toBeGreaterThan(0);
    expect(kvPeak).toBeLessThanOrEqual(kvBound);
    expect(scheduler.kvCacheBytes).toBe(0);
    expect(scheduler.running + scheduler.queued).toBe(0);
    expect(process.memoryUsage().heapUsed - heapStart).toBeLessThan(256 * 1024 * 1024);
    console.log(
      `load: ${started} requests, ${CLIENTS} clients, ${seconds.toFixed(2)} s, ${(tokens / seconds).toFixed(0)} tok/s, ` +
        `latency p50 ${pct(latencies, 50).toFixed(1)} p90 ${pct(latencies, 90).toFixed(1)} p99 ${pct(latencies, 99).toFixed(1)} ms, ` +
        `TTFB p50 ${pct(ttfts, 50).toFixed(1)} ms, KV peak ${(kvPeak / 1024).toFixed(0)} KiB`,
    );
  });
});
