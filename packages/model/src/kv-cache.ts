import { Tensor } from '@apertus/tensor';
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
  /** Floats per head. */
  readonly headDim: number;

  /** Allocate the cache of one sequence. */
  constructor(config: ApertusConfig, capacity: number) {
    if (!Number.isInteger(capacity) || capacity <= 0) throw new GenerationError('capacity', `must be a positive integer, got ${capacity}`);
    if (capacity > config.max_position_embeddings) {
      throw new GenerationError('capacity', `${capacity} tokens exceed max_position_embeddings ${config.max_position_embeddings}`);
    }
    this.capacity = capacity;
    this.headDim = config.head_dim;
    this.rowSize = config.num_key_value_heads * config.head_dim;
    this.k = Array.from({ length: config.num_hidden_layers }, () => new Float32Array(capacity * this.rowSize));
    this.v = Array.from({ length: config.num_hidden_layers }, () => new Float32Array(capacity * this.rowSize));
  }

  /**
   * Write T new rows of keys and values (float32 [T, nkv, d], row-major) of `layer` after the
   * `length` cached ones and return all S = length + T keys and values as [1, S, nkv, d] views,
   * as Hugging Face's `Cache.update`. `length` itself advances once every layer is done (`advance`).
   */
  update(layer: number, k: Float32Array, v: Float32Array): { k: Tensor; v: Tensor } {
    const T = k.length / this.rowSize, S = this.length + T, heads = this.rowSize / this.headDim;
    if (S > this.capacity) throw new GenerationError('context', `sequence needs ${S} positions but its cache holds ${this.capacity}`);
    this.k[layer]!.set(k, this.length * this.rowSize);
    this.v[layer]!.set(v, this.length * this.rowSize);
    return {
      k: Tensor.from(this.k[layer]!.subarray(0, S * this.rowSize), [1, S, heads, this.headDim]),
      v: Tensor.from(this.v[layer]!.subarray(0, S * this.rowSize), [1, S, heads, this.headDim]),
    };
  }

  /** Count `n` tokens written by `update` (to every layer) as cached. */
  advance(n: number): void {
    if (this.length + n > this.capacity) throw new GenerationError('context', `cannot cache ${this.length + n} of ${this.capacity} positions`);
    this.length += n;
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
