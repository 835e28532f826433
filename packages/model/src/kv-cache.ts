import type { ApertusConfig } from './config';
import { GenerationError } from './errors';

/**
 * Per-sequence key/value cache, preallocated for `capacity` tokens: for every layer, keys (after
 * QK-norm and RoPE) and raw values, each [capacity, num_key_value_heads, head_dim] float32.
 */
export class KVCache {
  /** Maximum number of tokens. */
  readonly capacity: number;
  /** Keys per layer. */
  readonly k: Float32Array[];
  /** Values per layer. */
  readonly v: Float32Array[];
  /** Tokens cached so far (= position of the next token). */
  length = 0;
  /** Floats per cached token per layer. */
  readonly rowSize: number;

  /** Allocate the cache of one sequence. */
  constructor(config: ApertusConfig, capacity: number) {
    if (!Number.isInteger(capacity) || capacity <= 0) throw new GenerationError('capacity', `must be a positive integer, got ${capacity}`);
    if (capacity > config.max_position_embeddings) {
      throw new GenerationError('capacity', `${capacity} tokens exceed max_position_embeddings ${config.max_position_embeddings}`);
    }
    this.capacity = capacity;
    this.rowSize = config.num_key_value_heads * config.head_dim;
    this.k = Array.from({ length: config.num_hidden_layers }, () => new Float32Array(capacity * this.rowSize));
    this.v = Array.from({ length: config.num_hidden_layers }, () => new Float32Array(capacity * this.rowSize));
  }

  /** Forget everything after the first `n` tokens (e.g. to reuse a shared prompt prefix). */
  truncate(n: number): void {
    if (n < 0 || n > this.length) throw new GenerationError('truncate', `cannot keep ${n} of ${this.length} cached tokens`);
    this.length = n;
  }

  /** Bytes held by this cache. */
  get bytes(): number {
    return this.k.length * 2 * this.capacity * this.rowSize * 4;
  }
}
