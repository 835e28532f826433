import { currentDevice, kvBlockStorage, type KvBlockData, type KvDType } from '@apertus/tensor';
import { wasm as wasmKernels } from '@apertus/tensor/kernels';
import type { ApertusConfig } from './config';
import { GenerationError } from './errors';

/**
 * One block of KV memory: keys and values of `blockSize` consecutive tokens for every layer,
 * laid out [layer][k | v][blockSize][num_key_value_heads · head_dim], float32 or f16 bits (the
 * pool's `dtype`). `refs` counts the caches (sequences, stored prefixes) whose block table holds it.
 */
export interface KVBlock {
  readonly data: KvBlockData;
  refs: number;
}

/** Options of {@link KVBlockPool}. */
export interface KVBlockPoolOptions {
  /** Tokens per block (default 16). */
  blockSize?: number;
  /**
   * Element type of the cache (default 'f32'): 'f16' keeps keys and values in half precision, as
   * llama.cpp does by default: half the memory and half the bytes a long-context decoding step
   * reads, each value rounded once to the nearest half (cpu device only).
   */
  dtype?: KvDType;
}

/**
 * Paged KV memory shared by many sequences (vLLM's PagedAttention layout): fixed-size blocks handed
 * out on demand and reference-counted, so sequences that share a prefix (n > 1 continuations, a
 * cached chat history) hold the same blocks, and a block written while shared is copied first
 * (copy-on-write, see KVCache.update). The blocks are KV storage of the tensor package
 * (`kvBlockStorage`): in the cpu device memory, where decoding attention reads them in place, and
 * on `webgpu` in the device's KV arena, where the keys and values are written and read without
 * leaving the device; a block goes back when its last holder releases it.
 */
export class KVBlockPool {
  /** The model's config. */
  readonly config: ApertusConfig;
  /** Tokens per block. */
  readonly blockSize: number;
  /** Floats per token per layer (num_key_value_heads · head_dim). */
  readonly rowSize: number;
  /** Floats per head. */
  readonly headDim: number;
  /** Layers. */
  readonly layers: number;
  /** Longest sequence a cache of this pool may hold (max_position_embeddings). */
  readonly maxPositions: number;
  /** Element type of the blocks. */
  readonly dtype: KvDType;
  private live = 0;

  /** A pool for caches of a model of this config. Throws GenerationError for a bad block size. */
  constructor(config: ApertusConfig, options: KVBlockPoolOptions = {}) {
    const bs = options.blockSize ?? 16;
    if (!Number.isInteger(bs) || bs < 1) throw new GenerationError('blockSize', `must be a positive integer, got ${bs}`);
    const dtype = options.dtype ?? 'f32';
    if (dtype !== 'f32' && dtype !== 'f16') throw new GenerationError('kvCacheType', `must be 'f32' or 'f16', got ${JSON.stringify(dtype)}`);
    if (dtype === 'f16' && currentDevice().device !== 'cpu') throw new GenerationError('kvCacheType', `an f16 KV cache runs on the cpu device, not on ${currentDevice().device}`);
    this.dtype = dtype;
    this.config = config;
    this.blockSize = bs;
    this.rowSize = config.num_key_value_heads * config.head_dim;
    this.headDim = config.head_dim;
    this.layers = config.num_hidden_layers;
    this.maxPositions = config.max_position_embeddings;
  }

  /** Blocks held by at least one cache. */
  get blocksInUse(): number {
    return this.live;
  }

  /** Bytes of one block. */
  get blockBytes(): number {
    return this.layers * 2 * this.blockSize * this.rowSize * (this.dtype === 'f16' ? 2 : 4);
  }

  /** Bytes of all blocks held (a shared block counts once). */
  get bytes(): number {
    return this.live * this.blockBytes;
  }

  /** A fresh block with one reference. */
  allocate(): KVBlock {
    this.live++;
    return { data: kvBlockStorage({ layers: this.layers, blockSize: this.blockSize, rowSize: this.rowSize, dtype: this.dtype }), refs: 1 };
  }

  /** One more holder of `block`. */
  retain(block: KVBlock): void {
    if (block.refs <= 0) throw new GenerationError('block', 'cannot share a released KV block');
    block.refs++;
  }

  /** One holder fewer; the block is gone when none is left. */
  release(block: KVBlock): void {
    if (block.refs <= 0) throw new GenerationError('block', 'KV block released twice');
    if (--block.refs === 0) {
      this.live--;
      wasmKernels.heapRelease(block.data);
    }
  }

  /** Offset of token row `t` (within its block) of layer `layer`'s keys (`v` = 1: values). */
  offset(layer: number, v: 0 | 1, t: number): number {
    return ((layer * 2 + v) * this.blockSize + t) * this.rowSize;
  }
}
