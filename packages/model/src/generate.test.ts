import { noGrad, Tensor } from '@apertus/tensor';
import { describe, expect, test } from 'vitest';
import { presetConfig } from './config';
import { GenerationError } from './errors';
import { generate, generateBatch, generateStream } from './generate';
import { step } from './infer';
import { KVCache } from './kv-cache';
import { ApertusModel } from './model';
import { Sampler } from './sampling';

const config = presetConfig('tiny', { vocab_size: 50, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, max_position_embeddings: 64, initializer_range: 0.3 });
const model = ApertusModel.init(config, 7);
const V = config.vocab_size;

/** Logits of every position from the full (non-cached) forward pass. */
function fullLogits(ids: number[]): Float32Array {
  return noGrad(() => model.forward(Tensor.ints(ids, [1, ids.length]))).data;
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe('KV-cache inference', () => {
  const prompt = [1, 5, 9, 13, 2, 1, 7, 30, 44, 3];
  test('prefill + token-by-token decode reproduce the full forward pass', () => {
    const full = fullLogits(prompt);
    const cache = new KVCache(config, 16);
    const first = step(model, [{ cache, tokens: prompt.slice(0, 4) }]);
    expect(maxDiff(first, full.subarray(3 * V, 4 * V))).toBeLessThan(1e-5);
    for (let t = 4; t < prompt.length; t++) {
      const l = step(model, [{ cache, tokens: [prompt[t]!] }]);
      expect(maxDiff(l, full.subarray(t * V, (t + 1) * V))).toBeLessThan(1e-5);
    }
    expect(cache.length).toBe(prompt.length);
  });
  test('a batch of sequences at different lengths equals running them one by one', () => {
    const a = new KVCache(config, 16), b = new KVCache(config, 16), c = new KVCache(config, 16);
    step(model, [{ cache: a, tokens: [1, 4, 8] }]);
    step(model, [{ cache: b, tokens: [1, 2] }]);
    const together = step(model, [{ cache: a, tokens: [11] }, { cache: b, tokens: [12, 13, 14] }, { cache: c, tokens: [1] }]);
    expect(maxDiff(together.subarray(0, V), fullLogits([1, 4, 8, 11]).subarray(3 * V))).toBeLessThan(1e-5);
    expect(maxDiff(together.subarray(V, 2 * V), fullLogits([1, 2, 12, 13, 14]).subarray(4 * V))).toBeLessThan(1e-5);
    expect(maxDiff(together.subarray(2 * V), fullLogits([1]))).toBeLessThan(1e-5);
  });
  test('logits written into a reused `out` are those of a fresh array, bit for bit; too small an `out` is a typed error', () => {
    const a = new KVCache(config, 16), b = new KVCache(config, 16), a2 = new KVCache(config, 16), b2 = new KVCache(config, 16);
    const out = new Float32Array(3 * V).fill(7);
    for (const tokens of [[1, 4, 8], [9], [30]]) {
      const fresh = step(model, [{ cache: a, tokens }, { cache: b, tokens: [tokens[0]! + 1] }]);
      const got = step(model, [{ cache: a2, tokens }, { cache: b2, tokens: [tokens[0]! + 1] }], out);
      expect(got.buffer).toBe(out.buffer);
      expect(Array.from(got)).toEqual(Array.from(fresh));
      expect(out[2 * V]).toBe(7);
    }
    expect(() => step(model, [{ cache: a, tokens: [3] }, { cache: b, tokens: [4] }], new Float32Array(2 * V - 1))).toThrow(/out: .*cannot hold the logits of 2 sequences/);
    expect(a.length).toBe(5);
  });
  test('context overflow and bad ids are typed errors and leave the cache untouched', () => {
    const cache = new KVCache(config, 4);
    step(model, [{ cache, tokens: [1, 2, 3] }]);
    expect(() => step(model, [{ cache, tokens: [4, 5] }])).toThrow(GenerationError);
    expect(() => step(model, [{ cache, tokens: [999] }])).toThrow(/token id 999/);
    expect(cache.length).toBe(3);
    expect(() => new KVCache(config, 65)).toThrow(/max_position_embeddings/);
  });
});

describe('generation', () => {
  test('greedy generation equals repeated argmax of the full forward pass', () => {
    const prompt = [1, 17, 23];
    const g = generate(model, prompt, { temperature: 0, maxTokens: 8, stopTokenIds: [] });
    const seq = [...prompt];
    for (let i = 0; i < 8; i++) {
      const l = fullLogits(seq).subarray((seq.length - 1) * V);
      seq.push(l.indexOf(Math.max(...l)));
    }
    expect(g.tokens).toEqual(seq.slice(prompt.length));
    expect(g.finishReason).toBe('length');
  });
  test('batched generation of prompts of different lengths equals generating each alone', () => {
    const prompts = [[1, 3], [1, 9, 27, 40, 2, 1], [5]];
    const opts = { temperature: 0.9, topK: 10, seed: 42, maxTokens: 6, stopTokenIds: [] };
    const together = generateBatch(model, prompts, opts);
    prompts.forEach((p, i) => expect(together[i]!.tokens).toEqual(generate(model, p, opts).tokens));
  });
  test('stop token ids, stop strings, onToken and abort', () => {
    const free = generate(model, [1, 2], { temperature: 0, maxTokens: 10, stopTokenIds: [] }).tokens;
    const stopAt = free[3]!;
    const first = free.indexOf(stopAt);
    const g = generate(model, [1, 2], { temperature: 0, maxTokens: 10, stopTokenIds: [stopAt] });
    expect(g).toEqual({ tokens: free.slice(0, first), finishReason: 'stop' });
    const decode = (ids: readonly number[]) => ids.map((i) => `<${i}>`).join('');
    const s = generate(model, [1, 2], { temperature: 0, maxTokens: 10, stopTokenIds: [], stop: [`<${free[1]}>`], decode });
    expect(s.finishReason).toBe('stop');
    expect(s.stopString).toBe(`<${free[1]}>`);
    expect(s.tokens).toEqual(free.slice(0, free.indexOf(free[1]!) + 1));
    const seen: number[] = [];
    generate(model, [1, 2], { temperature: 0, maxTokens: 10, stopTokenIds: [], onToken: (t) => { seen.push(t); return seen.length < 2; } });
    expect(seen).toEqual(free.slice(0, 2));
    const ac = new AbortController();
    ac.abort();
    expect(generate(model, [1, 2], { temperature: 0, signal: ac.signal }).tokens).toEqual([]);
  });
  test('streaming yields the same tokens as generate', async () => {
    const opts = { temperature: 0.7, seed: 3, maxTokens: 7, stopTokenIds: [] };
    const streamed: number[] = [];
    const it = generateStream(model, [1, 8], opts);
    let r = await it.next();
    while (!r.done) { streamed.push(r.value); r = await it.next(); }
    expect(streamed).toEqual(generate(model, [1, 8], opts).tokens);
    expect(r.value.tokens).toEqual(streamed);
  });
  test('invalid requests are typed errors naming the field', () => {
    expect(() => generate(model, [], {})).toThrow(/prompt/);
    expect(() => generate(model, [1], { maxTokens: 0 })).toThrow(/maxTokens/);
    expect(() => generate(model, [1], { temperature: -1 })).toThrow(/temperature/);
    expect(() => generate(model, [1], { topP: 0 })).toThrow(/topP/);
    expect(() => generate(model, Array(64).fill(1))).toThrow(/context/);
    expect(() => generate(model, [1], { stop: ['x'] })).toThrow(/decode/);
  });
  test('generation stops at the context limit with finish reason length', () => {
    const g = generate(model, Array(60).fill(1), { temperature: 0, maxTokens: 100, stopTokenIds: [] });
    expect(g.tokens.length).toBe(4);
    expect(g.finishReason).toBe('length');
  });
});

describe('sampler', () => {
  const logits = Float32Array.from([2, 1, 0.5, 0, -1, 3]);
  const softmax = (x: number[]) => { const m = Math.max(...x), e = x.map((v) => Math.exp(v - m)), z = e.reduce((a, b) => a + b); return e.map((v) => v / z); };
  function freq(params: ConstructorParameters<typeof Sampler>[0], n = 20000): number[] {
    const counts = new Array(6).fill(0);
    for (let i = 0; i < n; i++) counts[new Sampler({ ...params, seed: i }).sample(logits)]++;
    return counts.map((c) => c / n);
  }
  const within = (p: number[], q: number[]) => p.forEach((v, i) => expect(Math.abs(v - q[i]!)).toBeLessThan(4 * Math.sqrt(q[i]! * (1 - q[i]!) / 20000) + 1e-9));
  test('temperature sampling follows softmax(logits / T)', () => {
    within(freq({ temperature: 1 }), softmax(Array.from(logits)));
    within(freq({ temperature: 0.5 }), softmax(Array.from(logits, (v) => v / 0.5)));
  });
  test('top-k, top-p and min-p restrict the support and renormalise', () => {
    within(freq({ topK: 2 }), [...softmax([2, 1, 0.5, 0, -1, 3].map((v, i) => (i === 0 || i === 5 ? v : -Infinity)))]);
    // top-p 0.8: probabilities sorted 0.6285 (id 5), 0.2312 (id 0) → cumulative 0.86 ≥ 0.8 keeps two.
    within(freq({ topP: 0.8 }), softmax([2, 1, 0.5, 0, -1, 3].map((v, i) => (i === 0 || i === 5 ? v : -Infinity))));
    // min-p 0.3: keep p ≥ 0.3·0.6285 = 0.1886 → ids 5 and 0.
    within(freq({ minP: 0.3 }), softmax([2, 1, 0.5, 0, -1, 3].map((v, i) => (i === 0 || i === 5 ? v : -Infinity))));
  });
  test('greedy, seeds, and penalties', () => {
    expect(new Sampler({ temperature: 0 }).sample(logits)).toBe(5);
    const a = new Sampler({ seed: 9 }), b = new Sampler({ seed: 9 });
    expect(Array.from({ length: 20 }, () => a.sample(logits))).toEqual(Array.from({ length: 20 }, () => b.sample(logits)));
    // Repetition penalty 2 on the prompt token 5: 3 / 2 = 1.5 < 2 → greedy picks 0.
    expect(new Sampler({ temperature: 0, repetitionPenalty: 2 }, [5]).sample(logits)).toBe(0);
    // Negative logits are multiplied: token 4 at −1 → −2 (still lowest); presence penalty 1.5 on 5 after one use: 3 − 1.5 < 2.
    const s = new Sampler({ temperature: 0, presencePenalty: 1.5 });
    expect([s.sample(logits), s.sample(logits)]).toEqual([5, 0]);
    const f = new Sampler({ temperature: 0, frequencyPenalty: 0.6 });
    expect([f.sample(logits), f.sample(logits), f.sample(logits)]).toEqual([5, 5, 0]);
  });
});
