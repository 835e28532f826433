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
  function prefill(tokens: number[]): { cache: KVCache; logits: Float32Array } {
    const cache = new KVCache(config, 128, pool);
    return { cache, logits: step(model, [{ cache, tokens }]) };
  }

  test('a second turn from the cached history computes the logits of a full prefill', () => {
    const pc = new PrefixCache(pool, { maxBytes: 1 << 20 });
    const turn1 = ids(42, 1), turn2 = [...turn1, ...ids(9, 2)];
    const first = prefill(turn1);
    pc.store(turn1, first.cache);
    first.cache.release();
    const { cache, reused } = pc.lookup(turn2, 128);
    expect(reused).toBe(42);
    const got = step(model, [{ cache, tokens: turn2.slice(reused) }]);
    // Reference: the same two chunks into an unshared cache of its own (same GEMM shapes).
    const ref = new KVCache(config, 128);
    step(model, [{ cache: ref, tokens: turn1 }]);
    expect(got).toEqual(step(model, [{ cache: ref, tokens: turn2.slice(42) }]));
    // And, up to rounding, the logits of the whole turn prefilled at once.
    const whole = prefill(turn2).logits;
    for (let i = 0; i < whole.length; i++) expect(got[i]).toBeCloseTo(whole[i]!, 4);
    expect(cache.length).toBe(turn2.length);
  });

  test('the longest shared prefix wins, at least one token is always left to compute, and reuse never changes an entry', () => {
    const pc = new PrefixCache(pool, { maxBytes: 1 << 20 });
    const a = ids(30, 1), b = [...a.slice(0, 10), ...ids(20, 5)];
    pc.store(a, prefill(a).cache);
    pc.store(b, prefill(b).cache);
    expect(pc.lookup([...a.slice(0, 25), 1, 2], 128).reused).toBe(25);
    expect(pc.lookup([...b.slice(0, 15), 3], 128).reused).toBe(15);
    expect(pc.lookup(a, 128).reused).toBe(29);
    expect(pc.lookup(ids(5, 9), 128).reused).toBe(0);
    // A sequence started from `a` writes into a's shared last partial block (22 = 4 blocks + 2).
    const branch = [...a.slice(0, 22), 9, 9, 9];
    const { cache } = pc.lookup(branch, 128);
    step(model, [{ cache, tokens: [9, 9, 9] }]);
    // Stored, the branch adds only its own copy of block 4: blocks shared with `a` count once.
    expect(pc.bytes).toBe(12 * block);
    pc.store(branch, cache);
    expect(pc.bytes).toBe(13 * block);
    const again = pc.lookup([...a, 1], 128);
    expect(again.reused).toBe(30);
    const ref = new KVCache(config, 128);
    step(model, [{ cache: ref, tokens: a }]);
    expect(step(model, [{ cache: again.cache, tokens: [1] }])).toEqual(step(model, [{ cache: ref, tokens: [1] }]));
  });

  test('memory cap with least-recently-used eviction; blocks go back to the pool', () => {
    const p = new KVBlockPool(config, { blockSize: 5 });
    const pc = new PrefixCache(p, { maxBytes: 9 * block });
    const store = (t: number[]) => {
      const c = new KVCache(config, 128, p);
      step(model, [{ cache: c, tokens: t }]);
      pc.store(t, c);
      c.release();
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
    store(c); // 4 more blocks, over the cap: b goes
    expect(pc.size).toBe(2);
    expect(pc.bytes).toBe(8 * block);
    expect([reuse([...a, 0]), reuse([...b, 0]), reuse([...c, 0])]).toEqual([20, 0, 18]);
    // A prefix larger than the cap is not kept; a longer history replaces its own prefix; a
    // prefix of a stored history is not stored twice.
    const big = ids(60, 4);
    store(big);
    expect(reuse([...big, 0])).toBe(0);
    const a2 = [...a, ...ids(5, 6)];
    store(a2);
    store(a.slice(0, 12));
    expect(pc.size).toBe(2);
    expect(pc.bytes).toBe(9 * block);
    expect(p.blocksInUse).toBe(9);
    pc.clear();
    expect(p.blocksInUse).toBe(0);
  });

  test('bad caps, sizes and foreign caches are typed errors', () => {
    for (const maxBytes of [0, -1, NaN, Infinity]) expect(() => new PrefixCache(pool, { maxBytes })).toThrow(GenerationError);
    for (const minTokens of [0, 1.5]) expect(() => new PrefixCache(pool, { maxBytes: 1000, minTokens })).toThrow(/minTokens/);
    const pc = new PrefixCache(pool, { maxBytes: 1 << 20 });
    const other = new KVCache(config, 8);
    step(model, [{ cache: other, tokens: [1, 2] }]);
    expect(() => pc.store([1, 2], other)).toThrow(/another KV block pool/);
    expect(pc.size).toBe(0);
  });
});
