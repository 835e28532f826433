import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { presetConfig } from './config';
import { GenerationError } from './errors';
import { hiddenStates, step } from './infer';
import { KVBlockPool } from './kv-blocks';
import { KVCache } from './kv-cache';
import { ApertusModel } from './model';
import { f32ArrayToF16 } from '@apertus/tensor';

const config = presetConfig('tiny', { vocab_size: 64, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, max_position_embeddings: 256, initializer_range: 0.3 });
const model = ApertusModel.init(config, 5);
const ids = (n: number, seed: number) => Array.from({ length: n }, (_, i) => 4 + ((i * 7 + seed * 13) % 60));

/** Logits of each chunk's last token, fed chunk by chunk into `cache`. */
function feed(cache: KVCache, chunks: number[][]): Float32Array[] {
  return chunks.map((tokens) => step(model, [{ cache, tokens }]));
}

describe('paged KV cache', () => {
  test('any block size gives exactly the logits of one contiguous block, for any chunking', () => {
    const tokens = ids(70, 1);
    fc.assert(fc.property(fc.integer({ min: 1, max: 40 }), fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 6 }), (blockSize, cuts) => {
      const pool = new KVBlockPool(config, { blockSize });
      const cache = new KVCache(config, 128, pool);
      const chunks: number[][] = [];
      let off = 0;
      for (const c of cuts) if (off < tokens.length) { chunks.push(tokens.slice(off, off + c)); off += c; }
      for (; off < tokens.length; off++) chunks.push([tokens[off]!]);
      const want = feed(new KVCache(config, 128, new KVBlockPool(config, { blockSize: 128 })), chunks);
      expect(feed(cache, chunks)).toEqual(want);
      expect(cache.blocks).toBe(Math.ceil(tokens.length / blockSize));
      expect(pool.blocksInUse).toBe(cache.blocks);
      cache.release();
      expect(pool.blocksInUse).toBe(0);
    }), { numRuns: 8 });
  });

  test('N sequences forked from one prefix decode exactly as N unshared ones, in fewer blocks', () => {
    const N = 4, prefix = ids(45, 2), blockSize = 8;
    const tails = Array.from({ length: N }, (_, i) => ids(6, 10 + i));
    // Unshared: every sequence prefills the whole prefix into its own blocks.
    const own = new KVBlockPool(config, { blockSize });
    const unshared = tails.map(() => new KVCache(config, 64, own));
    unshared.forEach((c) => step(model, [{ cache: c, tokens: prefix }]));
    // Shared: one prefill, N forks (the 45-token prefix ends inside block 5: copy-on-write there).
    const pool = new KVBlockPool(config, { blockSize });
    const root = new KVCache(config, 64, pool);
    step(model, [{ cache: root, tokens: prefix }]);
    const shared = tails.map(() => root.fork());
    expect(pool.blocksInUse).toBe(6);
    for (let t = 0; t < 6; t++) {
      const a = step(model, unshared.map((cache, i) => ({ cache, tokens: [tails[i]![t]!] })));
      const b = step(model, shared.map((cache, i) => ({ cache, tokens: [tails[i]![t]!] })));
      expect(b).toEqual(a);
    }
    // 51 tokens = 7 blocks per sequence: unshared 4 × 7; shared: 5 full prefix blocks once,
    // and per sequence its copy of block 5 plus block 6 (the root keeps the original block 5).
    expect(own.blocksInUse).toBe(N * 7);
    expect(pool.blocksInUse).toBe(5 + 1 + N * 2);
    // The root is unchanged by its forks: continuing it equals a fresh prefill.
    const fresh = new KVCache(config, 64);
    step(model, [{ cache: fresh, tokens: prefix }]);
    expect(step(model, [{ cache: root, tokens: [9] }])).toEqual(step(model, [{ cache: fresh, tokens: [9] }]));
    for (const c of [root, ...shared]) c.release();
    expect(pool.blocksInUse).toBe(0);
  });

  test('truncate and fork give blocks back; bad sizes and counts are typed errors that change nothing', () => {
    const pool = new KVBlockPool(config, { blockSize: 4 });
    const cache = new KVCache(config, 32, pool);
    step(model, [{ cache, tokens: ids(10, 3) }]);
    expect(pool.blocksInUse).toBe(3);
    const f = cache.fork(5, 16);
    expect([f.length, f.blocks, pool.blocksInUse]).toEqual([5, 2, 3]);
    cache.truncate(4);
    expect([cache.blocks, pool.blocksInUse]).toEqual([1, 2]);
    f.release();
    f.release();
    expect(pool.blocksInUse).toBe(1);
    for (const bad of [0, -1, 1.5, NaN]) expect(() => new KVBlockPool(config, { blockSize: bad })).toThrow(GenerationError);
    expect(() => cache.truncate(5)).toThrow(/cannot keep 5 of 4/);
    expect(() => cache.fork(9)).toThrow(GenerationError);
    expect(() => cache.fork(4, 3)).toThrow(/cannot hold/);
    expect(() => new KVCache({ ...config, num_hidden_layers: 3 }, 8, pool)).toThrow(/another shape/);
    expect([cache.length, cache.blocks, pool.blocksInUse]).toEqual([4, 1, 1]);
  });
});

test('hiddenStates: the final-norm states the LM head reads, the same for any chunking', () => {
  const tokens = ids(23, 4), H = config.hidden_size, V = config.vocab_size;
  const whole = hiddenStates(model, { cache: new KVCache(config, 64), tokens });
  expect(whole.length).toBe(23 * H);
  // Every row through the LM head gives the logits step() gives for that position.
  const cache = new KVCache(config, 64);
  const head = model.params.get('lm_head.weight')!.toFloat32();
  for (let t = 0; t < tokens.length; t++) {
    const logits = step(model, [{ cache, tokens: [tokens[t]!] }]);
    for (let v = 0; v < V; v++) {
      let dot = 0;
      for (let h = 0; h < H; h++) dot += whole[t * H + h]! * head[v * H + h]!;
      // float32 products over H = 32 terms of size ~1: rounding well below 1e-4.
      expect(dot).toBeCloseTo(logits[v]!, 4);
    }
  }
  // Chunks attend to the earlier ones through the cache.
  const c2 = new KVCache(config, 64);
  const parts = [tokens.slice(0, 9), tokens.slice(9, 10), tokens.slice(10)].map((p) => hiddenStates(model, { cache: c2, tokens: p }));
  const joined = new Float32Array(whole.length);
  let off = 0;
  for (const p of parts) { joined.set(p, off); off += p.length; }
  for (let i = 0; i < whole.length; i++) expect(joined[i]).toBeCloseTo(whole[i]!, 5);
});

describe('f16 KV cache', () => {
  // head_dim 16: decoding runs the SIMD kernel's f16 variant (head_dim 8 above takes the gathered path).
  const c16 = presetConfig('tiny', { vocab_size: 64, hidden_size: 64, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 16, max_position_embeddings: 256, initializer_range: 0.3 });
  const m16 = ApertusModel.init(c16, 7);
  const run = (cache: KVCache, tokens: number[]) => { step(m16, [{ cache, tokens: tokens.slice(0, 20) }]); for (const t of tokens.slice(20)) step(m16, [{ cache, tokens: [t] }]); };

  test('holds the f16 rounding of what an f32 cache holds (layer 0, whose keys and values no cached attention has touched), in half the bytes', () => {
    const tokens = ids(37, 3), f32 = new KVCache(c16, 64, new KVBlockPool(c16, { blockSize: 8 })), f16 = new KVCache(c16, 64, new KVBlockPool(c16, { blockSize: 8, dtype: 'f16' }));
    run(f32, tokens); run(f16, tokens);
    expect(f16.bytes * 2).toBe(f32.bytes);
    const a = f32.update(0, new Float32Array(0), new Float32Array(0)), b = f16.update(0, new Float32Array(0), new Float32Array(0));
    expect(b.dtype).toBe('f16');
    const rows = (p: typeof a, at: number, b0: number) => Array.from(p.blocks[b0]!.subarray(at, at + 8 * 32));
    const half = new Uint16Array(8 * 32);
    for (let blk = 0; blk < a.blocks.length - 1; blk++) {
      for (const at of [a.keys, a.values]) {
        f32ArrayToF16(rows(a, at, blk), half);
        expect(rows(b, at, blk)).toEqual(Array.from(half));
      }
    }
  });

  test('a fork shares f16 blocks and copies one on write; decoding after it gives the unshared cache\'s logits exactly', () => {
    const prefix = ids(30, 4), tail = ids(5, 9), pool = new KVBlockPool(c16, { blockSize: 8, dtype: 'f16' });
    const base = new KVCache(c16, 64, pool);
    run(base, prefix);
    const fork = base.fork(27), alone = new KVCache(c16, 64, new KVBlockPool(c16, { blockSize: 8, dtype: 'f16' }));
    run(alone, prefix.slice(0, 27));
    const got = tail.map((t) => step(m16, [{ cache: fork, tokens: [t] }])), want = tail.map((t) => step(m16, [{ cache: alone, tokens: [t] }]));
    expect(got).toEqual(want);
    fork.release(); base.release();
    expect(pool.blocksInUse).toBe(0);
  });

  test('a bad cache type is a GenerationError naming kvCacheType', () => {
    expect(() => new KVBlockPool(c16, { dtype: 'bf16' as 'f16' })).toThrow(/kvCacheType/);
  });
});
