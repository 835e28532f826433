import { describe, expect, test } from 'vitest';
import { presetConfig } from './config';
import { step } from './infer';
import { KVCache } from './kv-cache';
import { ApertusModel } from './model';
import { PrefixCache } from './prefix-cache';

const config = presetConfig('tiny', { vocab_size: 64, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, max_position_embeddings: 4096, initializer_range: 0.3 });
const model = ApertusModel.init(config, 3);
/** Bytes of one cached token (keys and values of every layer). */
const perToken = 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * 4;
const ids = (n: number, seed: number) => Array.from({ length: n }, (_, i) => 4 + ((i * 7 + seed * 13) % 60));

function prefill(tokens: number[]): { cache: KVCache; logits: Float32Array } {
  const cache = new KVCache(config, 128);
  return { cache, logits: step(model, [{ cache, tokens }]) };
}

describe('PrefixCache', () => {
  test('a second turn from the cached history computes the same logits as a full prefill', () => {
    const pc = new PrefixCache(config, { maxBytes: 1 << 20 });
    const turn1 = ids(40, 1), turn2 = [...turn1, ...ids(9, 2)];
    const first = prefill(turn1);
    pc.store(turn1, first.cache);
    const { cache, reused } = pc.lookup(turn2, 128);
    expect(reused).toBe(40);
    const got = step(model, [{ cache, tokens: turn2.slice(reused) }]);
    const want = prefill(turn2).logits;
    for (let i = 0; i < want.length; i++) expect(got[i]).toBeCloseTo(want[i]!, 4);
    expect(cache.length).toBe(turn2.length);
  });

  test('the longest shared prefix wins, and at least one token is always left to compute', () => {
    const pc = new PrefixCache(config, { maxBytes: 1 << 20 });
    const a = ids(30, 1), b = [...a.slice(0, 10), ...ids(20, 5)];
    pc.store(a, prefill(a).cache);
    pc.store(b, prefill(b).cache);
    expect(pc.lookup([...a.slice(0, 25), 1, 2], 128).reused).toBe(25);
    expect(pc.lookup([...b.slice(0, 15), 3], 128).reused).toBe(15);
    expect(pc.lookup(a, 128).reused).toBe(29);
    expect(pc.lookup(ids(5, 9), 128).reused).toBe(0);
    // Reusing a prefix never changes it.
    const { cache } = pc.lookup([...a.slice(0, 20), 9, 9, 9], 128);
    step(model, [{ cache, tokens: [9, 9, 9] }]);
    expect(pc.lookup([...a, 1], 128).reused).toBe(30);
  });

  test('memory cap with least-recently-used eviction', () => {
    const pc = new PrefixCache(config, { maxBytes: 50 * perToken });
    const [a, b, c] = [ids(20, 1), ids(20, 2), ids(20, 3)];
    pc.store(a, prefill(a).cache);
    pc.store(b, prefill(b).cache);
    expect(pc.bytes).toBe(40 * perToken);
    pc.lookup([...a, 0], 128); // a is now more recent than b
    pc.store(c, prefill(c).cache); // over the cap: b goes
    expect(pc.size).toBe(2);
    expect(pc.bytes).toBe(40 * perToken);
    expect(pc.lookup([...a, 0], 128).reused).toBe(20);
    expect(pc.lookup([...b, 0], 128).reused).toBe(0);
    expect(pc.lookup([...c, 0], 128).reused).toBe(20);
    // A prefix larger than the cap is not kept; a longer history replaces its own prefix.
    const big = ids(60, 4);
    pc.store(big, prefill(big).cache);
    expect(pc.lookup([...big, 0], 128).reused).toBe(0);
    const a2 = [...a, ...ids(5, 6)];
    pc.store(a2, prefill(a2).cache);
    expect(pc.size).toBe(2);
    expect(pc.bytes).toBe(45 * perToken);
  });
});
