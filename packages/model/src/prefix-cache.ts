import type { ApertusConfig } from './config';
import { GenerationError } from './errors';
import { KVCache } from './kv-cache';

/** One cached prefix: its tokens and, per layer, their keys and values. */
interface Entry {
  tokens: Int32Array;
  k: Float32Array[];
  v: Float32Array[];
  bytes: number;
  used: number;
}

/** Options of {@link PrefixCache}. */
export interface PrefixCacheOptions {
  /** Memory cap of the stored keys and values, in bytes; least recently used prefixes are evicted past it. */
  maxBytes: number;
  /** Prefixes shorter than this are neither stored nor reused (default 1). */
  minTokens?: number;
}

/**
 * KV reuse across requests that share a prefix (a chat history, a system prompt): `store` keeps
 * the keys and values of a sequence's tokens, `lookup` starts a new sequence from the longest stored
 * prefix of its tokens, so only the rest goes through prefill. Entries are copied in and out (a
 * stored prefix is never changed by the sequences that reuse it); memory is capped, and the least
 * recently used entries are evicted first.
 */
export class PrefixCache {
  private readonly entries: Entry[] = [];
  private clock = 0;
  private total = 0;
  private readonly rowSize: number;
  private readonly minTokens: number;

  constructor(private readonly config: ApertusConfig, private readonly options: PrefixCacheOptions) {
    if (!(options.maxBytes >= 0)) throw new GenerationError('maxBytes', `must be a non-negative number, got ${options.maxBytes}`);
    this.rowSize = config.num_key_value_heads * config.head_dim;
    this.minTokens = Math.max(1, options.minTokens ?? 1);
  }

  /** Bytes held. */
  get bytes(): number {
    return this.total;
  }

  /** Number of stored prefixes. */
  get size(): number {
    return this.entries.length;
  }

  /**
   * A fresh cache of `capacity` tokens holding the longest stored prefix of `tokens` (at most
   * tokens.length − 1 of them, so at least one token is left to compute logits from), and how many
   * tokens it holds (0 on a miss).
   */
  lookup(tokens: readonly number[], capacity: number): { cache: KVCache; reused: number } {
    const cache = new KVCache(this.config, capacity);
    let best: Entry | null = null, bestLen = 0;
    for (const e of this.entries) {
      const limit = Math.min(e.tokens.length, tokens.length - 1, capacity);
      let n = 0;
      while (n < limit && e.tokens[n] === tokens[n]) n++;
      if (n > bestLen) { best = e; bestLen = n; }
    }
    if (!best || bestLen < this.minTokens) return { cache, reused: 0 };
    best.used = ++this.clock;
    const len = bestLen * this.rowSize;
    for (let l = 0; l < cache.k.length; l++) {
      cache.k[l]!.set(best.k[l]!.subarray(0, len));
      cache.v[l]!.set(best.v[l]!.subarray(0, len));
    }
    cache.length = bestLen;
    return { cache, reused: bestLen };
  }

  /**
   * Keep the keys and values of `tokens` (the first cache.length of them are used) for later
   * lookups. A stored prefix of these tokens is replaced; a prefix larger than the cap is not kept.
   */
  store(tokens: readonly number[], cache: KVCache): void {
    const n = Math.min(tokens.length, cache.length);
    if (n < this.minTokens) return;
    const len = n * this.rowSize, bytes = 2 * cache.k.length * len * 4;
    if (bytes > this.options.maxBytes) return;
    // Drop entries this one contains (same tokens or a prefix of them).
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i]!;
      if (e.tokens.length <= n && e.tokens.every((t, j) => t === tokens[j])) this.remove(i);
    }
    while (this.total + bytes > this.options.maxBytes) {
      let lru = 0;
      this.entries.forEach((e, i) => { if (e.used < this.entries[lru]!.used) lru = i; });
      this.remove(lru);
    }
    this.entries.push({
      tokens: Int32Array.from(tokens.slice(0, n)),
      k: cache.k.map((k) => k.slice(0, len)),
      v: cache.v.map((v) => v.slice(0, len)),
      bytes,
      used: ++this.clock,
    });
    this.total += bytes;
  }

  /** Forget everything. */
  clear(): void {
    this.entries.length = 0;
    this.total = 0;
  }

  private remove(i: number): void {
    this.total -= this.entries[i]!.bytes;
    this.entries.splice(i, 1);
  }
}
