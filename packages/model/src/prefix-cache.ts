import { GenerationError } from './errors';
import type { KVBlockPool } from './kv-blocks';
import { KVCache } from './kv-cache';

/** One cached prefix: its tokens and a cache sharing their KV blocks. */
interface Entry {
  tokens: Int32Array;
  cache: KVCache;
  used: number;
}

/** Options of {@link PrefixCache}. */
export interface PrefixCacheOptions {
  /** Memory cap of the stored prefixes' KV blocks, in bytes (> 0); least recently used prefixes are evicted past it. */
  maxBytes: number;
  /** Prefixes shorter than this are neither stored nor reused (default 1). */
  minTokens?: number;
}

/**
 * KV reuse across requests that share a prefix (a chat history, a system prompt): `store` keeps
 * the KV blocks of a sequence's tokens, `lookup` starts a new sequence from the longest stored
 * prefix of its tokens, so only the rest goes through prefill. Nothing is copied: entries and the
 * sequences started from them share reference-counted blocks of one {@link KVBlockPool}, and a
 * shared block is copied only when a sequence writes into it, so a stored prefix never changes.
 * Memory is capped (blocks shared by entries count once), and the least recently used entries are
 * evicted first.
 */
export class PrefixCache {
  /** The pool whose blocks are shared. */
  readonly pool: KVBlockPool;
  private readonly entries: Entry[] = [];
  private clock = 0;
  private readonly maxBytes: number;
  private readonly minTokens: number;

  /** A cache of prefixes whose blocks live in `pool`. Throws GenerationError for a cap ≤ 0 or a bad minTokens. */
  constructor(pool: KVBlockPool, options: PrefixCacheOptions) {
    if (!(options.maxBytes > 0) || !Number.isFinite(options.maxBytes)) throw new GenerationError('maxBytes', `must be a positive number of bytes, got ${options.maxBytes}`);
    const minTokens = options.minTokens ?? 1;
    if (!Number.isInteger(minTokens) || minTokens < 1) throw new GenerationError('minTokens', `must be a positive integer, got ${minTokens}`);
    this.pool = pool;
    this.maxBytes = options.maxBytes;
    this.minTokens = minTokens;
  }

  /** Bytes of the blocks held by stored prefixes (a block shared by several counts once). */
  get bytes(): number {
    return new Set(this.entries.flatMap((e) => e.cache.blockTable)).size * this.pool.blockBytes;
  }

  /** Number of stored prefixes. */
  get size(): number {
    return this.entries.length;
  }

  /**
   * A cache of `capacity` tokens holding the longest stored prefix of `tokens` (at most
   * tokens.length − 1 of them, so at least one token is left to compute logits from), and how many
   * tokens it holds (0 on a miss: an empty cache).
   */
  lookup(tokens: readonly number[], capacity: number): { cache: KVCache; reused: number } {
    let best: Entry | null = null, bestLen = 0;
    for (const e of this.entries) {
      const limit = Math.min(e.tokens.length, tokens.length - 1, capacity);
      let n = 0;
      while (n < limit && e.tokens[n] === tokens[n]) n++;
      if (n > bestLen) { best = e; bestLen = n; }
    }
    if (!best || bestLen < this.minTokens) return { cache: new KVCache(this.pool.config, capacity, this.pool), reused: 0 };
    best.used = ++this.clock;
    return { cache: best.cache.fork(bestLen, capacity), reused: bestLen };
  }

  /**
   * Keep the KV blocks of `tokens` (the first cache.length of them) for later lookups; the cache
   * stays its owner's. Stored prefixes of these tokens are replaced; tokens that a stored entry
   * already starts with, or whose blocks exceed the cap, are not stored again.
   */
  store(tokens: readonly number[], cache: KVCache): void {
    if (cache.pool !== this.pool) throw new GenerationError('cache', 'belongs to another KV block pool than the prefix cache');
    const n = Math.min(tokens.length, cache.length);
    if (n < this.minTokens) return;
    const bytes = Math.ceil(n / this.pool.blockSize) * this.pool.blockBytes;
    if (bytes > this.maxBytes) return;
    const starts = (e: Entry, len: number) => e.tokens.subarray(0, len).every((t, j) => t === tokens[j]);
    const known = this.entries.find((e) => e.tokens.length >= n && starts(e, n));
    if (known) {
      known.used = ++this.clock;
      return;
    }
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i]!;
      if (e.tokens.length < n && starts(e, e.tokens.length)) this.remove(i);
    }
    this.entries.push({ tokens: Int32Array.from(tokens.slice(0, n)), cache: cache.fork(n, n), used: ++this.clock });
    while (this.bytes > this.maxBytes) {
      let lru = 0;
      this.entries.forEach((e, i) => { if (e.used < this.entries[lru]!.used) lru = i; });
      this.remove(lru);
    }
  }

  /** Forget everything (the blocks go back to the pool unless sequences still share them). */
  clear(): void {
    for (const e of this.entries) e.cache.release();
    this.entries.length = 0;
  }

  private remove(i: number): void {
    this.entries[i]!.cache.release();
    this.entries.splice(i, 1);
  }
}
