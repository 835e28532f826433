import { copyInto, type KVPages } from '@apertus/tensor';
import type { ApertusConfig } from './config';
import { GenerationError } from './errors';
import { KVBlockPool, type KVBlock } from './kv-blocks';

/**
 * Per-sequence key/value cache of up to `capacity` tokens: for every layer, keys (after QK-norm and
 * RoPE) and raw values, [num_key_value_heads, head_dim] per token (float32, or f16 in an f16
 * pool: rounded as they are written), stored in the blocks of
 * a {@link KVBlockPool} listed by the sequence's block table (token t lives in block ⌊t / blockSize⌋).
 * Blocks are allocated as tokens arrive; `fork` shares them with another cache, and a shared block
 * is copied before it is written (copy-on-write).
 */
export class KVCache {
  /** Maximum number of tokens. */
  readonly capacity: number;
  /** Where the blocks come from (a private pool unless one is given). */
  readonly pool: KVBlockPool;
  /** Tokens cached so far (= position of the next token). */
  length = 0;
  private table: KVBlock[] = [];

  /** The cache of one sequence; blocks come from `pool` (default: a pool of its own). */
  constructor(config: ApertusConfig, capacity: number, pool?: KVBlockPool) {
    if (!Number.isInteger(capacity) || capacity <= 0) throw new GenerationError('capacity', `must be a positive integer, got ${capacity}`);
    if (capacity > config.max_position_embeddings) {
      throw new GenerationError('capacity', `${capacity} tokens exceed max_position_embeddings ${config.max_position_embeddings}`);
    }
    this.pool = pool ?? new KVBlockPool(config);
    if (this.pool.rowSize !== config.num_key_value_heads * config.head_dim || this.pool.layers !== config.num_hidden_layers || this.pool.maxPositions < capacity) {
      throw new GenerationError('pool', 'the KV block pool was made for a model of another shape');
    }
    this.capacity = capacity;
  }

  /** Floats per cached token per layer. */
  get rowSize(): number {
    return this.pool.rowSize;
  }

  /** Floats per head. */
  get headDim(): number {
    return this.pool.headDim;
  }

  /** The block table: block b holds tokens [b·blockSize, (b + 1)·blockSize). */
  get blockTable(): readonly KVBlock[] {
    return this.table;
  }

  /** Blocks in this sequence's table (shared ones included). */
  get blocks(): number {
    return this.table.length;
  }

  /** Bytes of the blocks this cache holds (shared blocks included; see KVBlockPool.bytes for the total). */
  get bytes(): number {
    return this.table.length * this.pool.blockBytes;
  }

  /**
   * Write T new rows of keys and values (float32 [T, nkv, d], row-major) of `layer` after the
   * `length` cached ones and return all S = length + T keys and values as the pages of that layer
   * (for `pagedAttention`), as Hugging Face's `Cache.update` returns the whole cache. The pages
   * stay valid until the cache is next changed. `length` itself advances once every layer is done
   * (`advance`).
   */
  update(layer: number, k: Float32Array, v: Float32Array): KVPages {
    const pool = this.pool, row = pool.rowSize, bs = pool.blockSize;
    const T = k.length / row, S = this.length + T, heads = row / pool.headDim;
    if (S > this.capacity) throw new GenerationError('context', `sequence needs ${S} positions but its cache holds ${this.capacity}`);
    for (let t = this.length; t < S;) {
      const b = Math.floor(t / bs), n = Math.min(bs * (b + 1), S) - t, r = t - this.length;
      const block = this.writable(b);
      // Through the device that holds them: on webgpu the rows go from the layer's output into the block's slot there.
      const kAt = pool.offset(layer, 0, t - b * bs), vAt = pool.offset(layer, 1, t - b * bs);
      copyInto(k.subarray(r * row, (r + n) * row), block.data.subarray(kAt, kAt + n * row));
      copyInto(v.subarray(r * row, (r + n) * row), block.data.subarray(vAt, vAt + n * row));
      t += n;
    }
    return { blocks: this.table.map((b) => b.data), dtype: pool.dtype, blockSize: bs, keys: pool.offset(layer, 0, 0), values: pool.offset(layer, 1, 0), heads, length: S };
  }

  /** Count `n` tokens written by `update` (to every layer) as cached. */
  advance(n: number): void {
    if (this.length + n > this.capacity) throw new GenerationError('context', `cannot cache ${this.length + n} of ${this.capacity} positions`);
    this.length += n;
  }

  /** Forget everything after the first `n` tokens (e.g. to reuse a shared prompt prefix); blocks past them go back. */
  truncate(n: number): void {
    if (!Number.isInteger(n) || n < 0 || n > this.length) throw new GenerationError('truncate', `cannot keep ${n} of ${this.length} cached tokens`);
    this.length = n;
    const keep = Math.ceil(n / this.pool.blockSize);
    for (const b of this.table.splice(keep)) this.pool.release(b);
  }

  /**
   * A new cache of `capacity` tokens holding the first `n` tokens of this one, sharing their
   * blocks (nothing is copied until one of the two writes into a shared block).
   */
  fork(n = this.length, capacity = this.capacity): KVCache {
    if (!Number.isInteger(n) || n < 0 || n > this.length) throw new GenerationError('fork', `cannot share ${n} of ${this.length} cached tokens`);
    if (capacity < n) throw new GenerationError('capacity', `${capacity} tokens cannot hold the ${n} shared ones`);
    const c = new KVCache(this.pool.config, capacity, this.pool);
    c.table = this.table.slice(0, Math.ceil(n / this.pool.blockSize));
    for (const b of c.table) this.pool.retain(b);
    c.length = n;
    return c;
  }

  /**
   * A cache of `capacity` tokens whose first `length` tokens are in `blocks` (whole blocks of
   * `pool`, shared: each gains a holder), e.g. blocks kept by a prefix cache.
   */
  static sharing(pool: KVBlockPool, capacity: number, blocks: readonly KVBlock[], length: number): KVCache {
    if (length > capacity || Math.ceil(length / pool.blockSize) !== blocks.length) throw new GenerationError('sharing', `${blocks.length} blocks of ${pool.blockSize} tokens cannot hold ${length} tokens of a ${capacity}-token cache`);
    const c = new KVCache(pool.config, capacity, pool);
    for (const b of blocks) pool.retain(b);
    c.table = [...blocks];
    c.length = length;
    return c;
  }

  /** Give every block back to the pool; the cache is then empty (and may be filled again). */
  release(): void {
    for (const b of this.table) this.pool.release(b);
    this.table = [];
    this.length = 0;
  }

  /** Block `b` of the table, allocated when new and copied first when shared. */
  private writable(b: number): KVBlock {
    while (this.table.length <= b) this.table.push(this.pool.allocate());
    const block = this.table[b]!;
    if (block.refs === 1) return block;
    const copy = this.pool.allocate();
    copyInto(block.data, copy.data);
    this.pool.release(block);
    this.table[b] = copy;
    return copy;
  }
}
