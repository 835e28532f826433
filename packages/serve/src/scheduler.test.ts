// The scheduler's KV memory: paged blocks shared by the n continuations of a prompt, and the
// prefix cache that lets a later request (the next chat turn) start from the KV of an earlier one.
// Outputs with and without sharing must be the same tokens (greedy); blocks must all come back.

import { generate, GenerationError } from '@apertus/model';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServedModel, type ServedModel } from './load';
import { ServerMetrics } from './metrics';
import { Scheduler, type GenerationRequest, type SchedulerOptions } from './scheduler';
import { tempDir, writeRandomCheckpoint } from './testing';

const tmp = tempDir();
let served: ServedModel;
beforeAll(async () => {
  served = await loadServedModel(writeRandomCheckpoint(tmp.dir, 'tiny', 23));
});
afterAll(() => tmp.remove());

/** A greedy request's continuations: per choice, the sampled tokens' bytes and log-probabilities. */
interface Run { tokens: string[][]; logprobs: number[][] }

function run(scheduler: Scheduler, req: Omit<GenerationRequest, 'sampling' | 'logprobs' | 'stopTokenIds'>): Promise<Run> {
  const out: Run = { tokens: [], logprobs: [] };
  return new Promise((resolve, reject) => {
    scheduler.submit({ ...req, sampling: { temperature: 0 }, logprobs: 0, stopTokenIds: [] }, (e) => {
      if (e.type === 'logprob') {
        (out.tokens[e.index] ??= []).push(e.logprob.bytes.join(','));
        (out.logprobs[e.index] ??= []).push(e.logprob.logprob);
      } else if (e.type === 'done') resolve(out);
      else if (e.type === 'error') reject(e.error);
    });
  });
}

const prompt = (n: number, seed: number) => Array.from({ length: n }, (_, i) => 80 + ((i * 31 + seed * 17) % 900));

describe('scheduler KV memory', () => {
  test('a second turn reuses the first turn’s prompt and reply, and generates the same tokens as without the cache', async () => {
    const metrics = new ServerMetrics();
    const cached = new Scheduler(served, { prefixCacheBytes: 1 << 24, kvBlockSize: 8, metrics });
    const turn1 = prompt(70, 1);
    const first = await run(cached, { prompt: turn1, maxTokens: 6 });
    expect(metrics.prefixCacheLookups.get({ result: 'miss' })).toBe(1);
    // Turn 2: the first turn, its reply, and a new message.
    const reply = generate(served.model, turn1, { temperature: 0, maxTokens: 6, stopTokenIds: [] }).tokens;
    expect(reply.length).toBe(6);
    const turn2 = [...turn1, ...reply, ...prompt(20, 2)];
    const plain = await run(new Scheduler(served), { prompt: turn2, maxTokens: 8 });
    const reused = await run(cached, { prompt: turn2, maxTokens: 8 });
    expect(metrics.prefixCacheLookups.get({ result: 'hit' })).toBe(1);
    // The cache holds the whole 8-token blocks of the prompt and all sampled tokens but the last (never fed back).
    const held = Math.floor((turn1.length + 5) / 8) * 8;
    expect(metrics.prefixCacheReusedTokens.get()).toBe(held);
    expect(metrics.promptTokens.get()).toBe(turn1.length + turn2.length - held);
    expect(reused.tokens).toEqual(plain.tokens);
    reused.logprobs[0]!.forEach((l, i) => expect(l).toBeCloseTo(plain.logprobs[0]![i]!, 4));
    expect(first.tokens[0]!.length).toBe(6);
    // Only the prefix cache holds blocks once nothing runs; the exposition names the new series.
    await cached.idle();
    expect(cached.pool.blocksInUse * cached.pool.blockBytes).toBe(cached.prefixCache!.bytes);
    const text = metrics.render();
    for (const name of ['apertus_prefix_cache_lookups_total{result="hit"} 1', `apertus_prefix_cache_reused_tokens_total ${held}`, 'apertus_kv_blocks', 'apertus_prefix_cache_bytes']) expect(text).toContain(name);
  });

  test('n continuations share the prompt blocks and equal n separate requests; all blocks come back', async () => {
    const s = new Scheduler(served, { kvBlockSize: 8 });
    const p = prompt(45, 3);
    let peak = 0;
    const watch = setInterval(() => (peak = Math.max(peak, s.pool.blocksInUse)), 0);
    const together = await run(s, { prompt: p, n: 3, maxTokens: 10 });
    clearInterval(watch);
    const alone = await run(new Scheduler(served), { prompt: p, maxTokens: 10 });
    for (let i = 0; i < 3; i++) expect(together.tokens[i]).toEqual(alone.tokens[0]);
    // 45 + 9 tokens = 7 blocks each unshared (21); shared: 5 full prompt blocks once, per
    // continuation its own copy of block 5 and block 6, plus the original block 5 (≤ 12).
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(5 + 1 + 3 * 2);
    await s.idle();
    expect(s.pool.blocksInUse).toBe(0);
  });

  test('eviction keeps the prefix cache under its cap; cancelled requests give their blocks back', async () => {
    const probe = new Scheduler(served, { kvBlockSize: 8 });
    const cap = 12 * probe.pool.blockBytes;
    const metrics = new ServerMetrics();
    const s = new Scheduler(served, { prefixCacheBytes: cap, kvBlockSize: 8, metrics });
    for (let k = 0; k < 4; k++) {
      await run(s, { prompt: prompt(40, 10 + k), maxTokens: 4 });
      expect(s.prefixCache!.bytes).toBeLessThanOrEqual(cap);
    }
    // The first prompt was evicted, the last one is reused.
    await run(s, { prompt: [...prompt(40, 10), 5], maxTokens: 1 });
    await run(s, { prompt: [...prompt(40, 13), 5], maxTokens: 1 });
    expect(metrics.prefixCacheLookups.get({ result: 'miss' })).toBe(5);
    expect(metrics.prefixCacheLookups.get({ result: 'hit' })).toBe(1);
    const h = s.submit({ prompt: prompt(100, 20), maxTokens: 50 }, () => {});
    await new Promise((r) => setTimeout(r, 5));
    h.cancel();
    await s.idle();
    // Once nothing runs, the prefix cache holds every block left (blocks its entries share count once).
    expect(s.pool.blocksInUse * s.pool.blockBytes).toBe(s.prefixCache!.bytes);
    s.prefixCache!.clear();
    expect(s.pool.blocksInUse).toBe(0);
  });

  test('a cap or block size that is not a positive integer is a typed error naming the option', () => {
    const bad: [keyof SchedulerOptions, number][] = [['prefixCacheBytes', 0], ['prefixCacheBytes', -1], ['prefixCacheBytes', 1.5], ['kvBlockSize', 0], ['kvBlockSize', NaN]];
    for (const [field, v] of bad) {
      expect(() => new Scheduler(served, { [field]: v })).toThrow(GenerationError);
      expect(() => new Scheduler(served, { [field]: v })).toThrow(new RegExp(field));
    }
  });
});

describe('scheduler with an f16 KV cache', () => {
  test('blocks of half the bytes; greedy tokens and log-probabilities of generate() on an f16 cache, through the prefix cache too', async () => {
    const half = new Scheduler(served, { kvCacheType: 'f16', prefixCacheBytes: 1 << 24, kvBlockSize: 8 });
    expect(half.pool.blockBytes * 2).toBe(new Scheduler(served, { kvBlockSize: 8 }).pool.blockBytes);
    const p = prompt(40, 5), want = generate(served.model, p, { temperature: 0, maxTokens: 6, stopTokenIds: [], kvCacheType: 'f16' }).tokens;
    const got = await run(half, { prompt: p, maxTokens: 6 });
    expect(got.tokens[0]!.length).toBe(6);
    // Token bytes name the tokens: the same ids as generate()'s.
    const again = await run(half, { prompt: [...p, ...want.slice(0, 3)], maxTokens: 3 });
    expect(again.tokens[0]).toEqual(got.tokens[0]!.slice(3));
    expect(() => new Scheduler(served, { kvCacheType: 'q8' as 'f16' })).toThrow(GenerationError);
  });
});
