import { GenerationError } from './errors';
import type { KVBlock, KVBlockPool } from './kv-blocks';
import { KVCache } from './kv-cache';

/** A stored KV block: the block of `blockSize` tokens that follows its parent's. */
interface Node {
  readonly parent: Node | null;
  /** Its tokens, as the key in the parent's `children`. */
  readonly key: string;
  readonly block: KVBlock | null;
  readonly children: Map<string, Node>;
}

/** Options of {@link PrefixCache}. */
export interface PrefixCacheOptions {
  /** Memory cap of the stored blocks, in bytes (> 0); least recently used blocks are evicted past it. */
  maxBytes: number;
  /** Prefixes shorter than this are neither stored nor reused (default 1). */
  minTokens?: number;
}

/**
 * KV reuse across requests that share a prefix (a chat history, a system prompt), as vLLM's
 * automatic prefix caching does it: the KV blocks of full `blockSize`-token blocks form a trie
 * keyed by their tokens, so `store` and `lookup` walk one node per block of the sequence and cost
 * the same whether the cache holds ten prefixes or ten thousand. `lookup` starts a new sequence
 * from the longest stored run of whole blocks of its tokens, so only the rest (at least one token,
 * and the last partial block) goes through prefill. Nothing is copied: stored blocks are shared,
 * reference-counted blocks of one {@link KVBlockPool}, and a full block is never written again.
 * Memory is capped; the least recently used blocks are evicted first, leaves before their parents
 * (recency order keeps every parent newer than its children, so the oldest block is a leaf).
 */
export class PrefixCache {
  /** The pool whose blocks are shared. */
  readonly pool: KVBlockPool;
  /** The memory cap in bytes. */
  readonly maxBytes: number;
  private readonly minTokens: number;
  private readonly root: Node = { parent: null, key: '', block: null, children: new Map() };
  /** Every stored node, least recently used first. */
  private readonly lru = new Map<Node, true>();
  private visited = 0;

  /** A cache of prefixes whose blocks live in `pool`. Throws GenerationError for a cap ≤ 0 or a bad minTokens. */
  constructor(pool: KVBlockPool, options: PrefixCacheOptions) {
    if (!(options.maxBytes > 0) || !Number.isFinite(options.maxBytes)) throw new GenerationError('maxBytes', `must be a positive number of bytes, got ${options.maxBytes}`);
    const minTokens = options.minTokens ?? 1;
    if (!Number.isInteger(minTokens) || minTokens < 1) throw new GenerationError('minTokens', `must be a positive integer, got ${minTokens}`);
    this.pool = pool;
    this.maxBytes = options.maxBytes;
    this.minTokens = minTokens;
  }

  /** Bytes of the stored blocks (each held once). */
  get bytes(): number {
    return this.lru.size * this.pool.blockBytes;
  }

  /** Number of stored blocks. */
  get size(): number {
    return this.lru.size;
  }

  /** Trie nodes visited by all lookups and stores so far: the work they did, independent of the machine. */
  get probes(): number {
    return this.visited;
  }

  /** The key of block `b` of `tokens`. */
  private key(tokens: readonly number[], b: number): string {
    const bs = this.pool.blockSize;
    let k = '';
    for (let i = b * bs; i < (b + 1) * bs; i++) k += `${tokens[i]},`;
    return k;
  }

  /** Mark `node` and its ancestors as just used (deepest first, so parents end up newer). */
  private touch(node: Node): void {
    for (let x: Node | null = node; x && x !== this.root; x = x.parent) {
      this.lru.delete(x);
      this.lru.set(x, true);
    }
  }

  /**
   * A cache of `capacity` tokens holding the longest stored run of whole blocks that begins
   * `tokens` (at most tokens.length − 1 tokens, so at least one is left to compute logits from),
   * and how many tokens it holds (0 on a miss: an empty cache).
   */
  lookup(tokens: readonly number[], capacity: number): { cache: KVCache; reused: number } {
    const bs = this.pool.blockSize;
    const most = Math.floor(Math.min(tokens.length - 1, capacity) / bs);
    const blocks: KVBlock[] = [];
    let node = this.root;
    for (let b = 0; b < most; b++) {
      this.visited++;
      const child = node.children.get(this.key(tokens, b));
      if (!child) break;
      blocks.push(child.block!);
      node = child;
    }
    const reused = blocks.length * bs;
    if (reused === 0 || reused < this.minTokens) return { cache: new KVCache(this.pool.config, capacity, this.pool), reused: 0 };
    this.touch(node);
    return { cache: KVCache.sharing(this.pool, capacity, blocks, reused), reused };
  }

  /**
   * Keep the KV blocks of `tokens`' whole blocks (of the first cache.length of them) for later
   * lookups; the cache stays its owner's. Blocks already stored are kept as they are; a run of
   * blocks larger than the cap is not stored.
   */
  store(tokens: readonly number[], cache: KVCache): void {
    if (cache.pool !== this.pool) throw new GenerationError('cache', 'belongs to another KV block pool than the prefix cache');
    const bs = this.pool.blockSize;
    const full = Math.floor(Math.min(tokens.length, cache.length) / bs);
    if (full === 0 || full * bs < this.minTokens || full * this.pool.blockBytes > this.maxBytes) return;
    const table = cache.blockTable;
    let node = this.root;
    for (let b = 0; b < full; b++) {
      this.visited++;
      const key = this.key(tokens, b);
      let child = node.children.get(key);
      if (!child) {
        this.pool.retain(table[b]!);
        child = { parent: node, key, block: table[b]!, children: new Map() };
        node.children.set(key, child);
      }
      node = child;
    }
    this.touch(node);
    while (this.bytes > this.maxBytes) this.evictOldest();
  }

  /** Forget everything (the blocks go back to the pool unless sequences still share them). */
  clear(): void {
    for (const n of this.lru.keys()) this.pool.release(n.block!);
    this.lru.clear();
    this.root.children.clear();
  }

  private evictOldest(): void {
    const oldest = this.lru.keys().next().value as Node;
    this.lru.delete(oldest);
    oldest.parent!.children.delete(oldest.key);
    this.pool.release(oldest.block!);
  }
}
