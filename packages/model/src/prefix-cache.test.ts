import { describe, expect, test } from 'vitest';
import { presetConfig } from './config';
import { GenerationError } from './errors';
import { step } from './infer';
import { KVBlockPool } from './kv-blocks';
import { KVCache } from './kv-cache';
import { ApertusModel } from './model';
import { PrefixCache } from './prefix-cache';

const config = presetConfig('tiny', { vocab_size: 64, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, max_position_embeddings: 4096, initializer_range: 0.3 });
const model = ApertusModel.init(config, 3);
const ids = (n: number, seed: number) => Array.from({ length: n }, (_, i) => 4 + ((i * 7 + seed * 13) % 60));

describe('PrefixCache', () => {
  const pool = new KVBlockPool(config, { blockSize: 5 });
  const block = pool.blockBytes;
  function prefill(tokens: number[], p = pool): { cache: KVCache; logits: Float32Array } {
    const cache = new KVCache(config, 128, p);
    return { cache, logits: step(model, [{ cache, tokens }]) };
  }

  test('a second turn from the cached history computes the logits of a full prefill', () => {
    const pc = new PrefixCache(pool, { maxBytes: 1 << 20 });
    const turn1 = ids(42, 1), turn2 = [...turn1, ...ids(9, 2)];
    const first = prefill(turn1);
    pc.store(turn1, first.cache);
    first.cache.release();
    // Whole blocks only: 8 blocks of 5 of the 42 tokens.
    const { cache, reused } = pc.lookup(turn2, 128);
    expect(reused).toBe(40);
    const got = step(model, [{ cache, tokens: turn2.slice(reused) }]);
    // Reference: the same two chunks into an unshared cache of its own (same GEMM shapes).
    const ref = new KVCache(config, 128);
    step(model, [{ cache: ref, tokens: turn1.slice(0, 40) }]);
    expect(got).toEqual(step(model, [{ cache: ref, tokens: turn2.slice(40) }]));
    // And, up to rounding, the logits of the whole turn prefilled at once.
    const whole = prefill(turn2).logits;
    for (let i = 0; i < whole.length; i++) expect(got[i]).toBeCloseTo(whole[i]!, 4);
    expect(cache.length).toBe(turn2.length);
  });

  test('the longest run of whole shared blocks wins, one token is always left to compute, and reuse never changes a stored block', () => {
    const pc = new PrefixCache(pool, { maxBytes: 1 << 20 });
    const a = ids(30, 1), b = [...a.slice(0, 10), ...ids(20, 5)];
    pc.store(a, prefill(a).cache);
    pc.store(b, prefill(b).cache);
    // a: 6 blocks; b shares a's first 2 and adds 4.
    expect(pc.size).toBe(10);
    expect(pc.bytes).toBe(10 * block);
    expect(pc.lookup([...a.slice(0, 27), 1, 2], 128).reused).toBe(25);
    expect(pc.lookup([...b.slice(0, 15), 3], 128).reused).toBe(15);
    expect(pc.lookup(a, 128).reused).toBe(25); // 30 tokens: the last one is computed, so 5 whole blocks
    expect(pc.lookup([...a, 7], 128).reused).toBe(30);
    expect(pc.lookup(ids(5, 9), 128).reused).toBe(0);
    expect(pc.lookup([...a, 7], 12).reused).toBe(10); // never more than the new cache holds
    // A sequence started from `a` writes after its blocks: stored blocks keep their bytes.
    const snapshot = pc.lookup([...a, 7], 128).cache.blockTable.map((x) => Float32Array.from(x.data));
    const { cache } = pc.lookup([...a.slice(0, 20), 9, 9, 9], 128);
    step(model, [{ cache, tokens: [9, 9, 9] }]);
    expect(pc.lookup([...a, 7], 128).cache.blockTable.map((x) => Float32Array.from(x.data))).toEqual(snapshot);
    const again = pc.lookup([...a, 1], 128);
    const ref = new KVCache(config, 128);
    step(model, [{ cache: ref, tokens: a }]);
    expect(step(model, [{ cache: again.cache, tokens: [1] }])).toEqual(step(model, [{ cache: ref, tokens: [1] }]));
  });

  test('memory cap with least-recently-used eviction, leaves first; blocks go back to the pool', () => {
    const p = new KVBlockPool(config, { blockSize: 5 });
    const pc = new PrefixCache(p, { maxBytes: 9 * block });
    const store = (t: number[]) => {
      const { cache } = prefill(t, p);
      pc.store(t, cache);
      cache.release();
    };
    const reuse = (t: number[]) => {
      const { cache, reused } = pc.lookup(t, 128);
      cache.release();
      return reused;
    };
    const [a, b, c] = [ids(20, 1), ids(20, 2), ids(18, 3)];
    store(a);
    store(b);
    expect(pc.bytes).toBe(8 * block);
    expect(reuse([...a, 0])).toBe(20); // a is now more recent than b
    store(c); // 3 more blocks, over the cap by 2: b's last two blocks go (its leaves first)
    expect(pc.size).toBe(9);
    expect([reuse([...a, 0]), reuse([...b, 0]), reuse([...c, 0])]).toEqual([20, 10, 15]);
    // A run of blocks larger than the cap is not kept; a run already stored is not stored twice.
    const big = ids(60, 4);
    store(big);
    expect(reuse([...big, 0])).toBe(0);
    store(a.slice(0, 12));
    expect(pc.size).toBe(9);
    expect(p.blocksInUse).toBe(9);
    pc.clear();
    expect(p.blocksInUse).toBe(0);
  });

  test('a lookup and a store walk one node per block, however many prefixes are stored', () => {
    const p = new KVBlockPool(config, { blockSize: 4 });
    const pc = new PrefixCache(p, { maxBytes: 1 << 30 });
    const system = ids(32, 7);
    const walk = (tokens: number[], write: boolean) => {
      const before = pc.probes;
      if (write) {
        const { cache } = prefill(tokens, p);
        pc.store(tokens, cache);
        cache.release();
      } else pc.lookup(tokens, 128).cache.release();
      return pc.probes - before;
    };
    const conversation = (k: number) => [...system, 4 + (k % 60), 4 + Math.floor(k / 60), ...ids(18, 100 + k)];
    const costs = (): number[] => [walk(conversation(9999), false), walk([...conversation(0), 1], false)];
    walk(conversation(0), true);
    for (let k = 1; k < 10; k++) walk(conversation(k), true);
    const few = costs();
    for (let k = 10; k < 400; k++) walk(conversation(k), true);
    expect(pc.size).toBe(8 + 400 * 5);
    // A miss after the shared system prompt: its 8 blocks and the first differing one; a hit: all 13.
    expect(costs()).toEqual(few);
    expect(few).toEqual([9, 13]);
    expect(walk(conversation(400), true)).toBe(13);
  });

  test('bad caps, sizes and foreign caches are typed errors', () => {
    for (const maxBytes of [0, -1, NaN, Infinity]) expect(() => new PrefixCache(pool, { maxBytes })).toThrow(GenerationError);
    for (const minTokens of [0, 1.5]) expect(() => new PrefixCache(pool, { maxBytes: 1000, minTokens })).toThrow(/minTokens/);
    const pc = new PrefixCache(pool, { maxBytes: 1 << 20 });
    const other = new KVCache(config, 8);
    step(model, [{ cache: other, tokens: [1, 2, 3, 4, 5, 6] }]);
    expect(() => pc.store([1, 2, 3, 4, 5, 6], other)).toThrow(/another KV block pool/);
    expect(pc.size).toBe(0);
  });
});
