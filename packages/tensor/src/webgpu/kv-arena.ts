/**
 * The webgpu device's paged KV memory: for one block layout, one device buffer per layer holding
 * `capacity` slots, a slot being one block's keys and values of that layer ([k | v][blockSize]
 * [rowSize], as in the host block). A KV block placed on the device takes a slot; attention binds
 * a layer's buffer and finds a sequence's keys through its block table of slots. The buffers
 * double when the slots run out (the old contents copied on the device), so a long generation
 * allocates a few times and never uploads its keys and values.
 */
import type { KvLayout } from '../memory/kv-blocks';
import { WebgpuMemoryError } from './errors';
import type { Binding, WebgpuRuntime } from './runtime';

/** Slots of a new arena. */
const FIRST_CAPACITY = 64;

export class KvArena {
  /** Bytes of one slot in one layer's buffer. */
  readonly slotBytes: number;
  private ids: number[] = [];
  private capacity = 0;
  private readonly free: number[] = [];
  private next = 0;

  constructor(private readonly rt: WebgpuRuntime, readonly layout: KvLayout) {
    this.slotBytes = 2 * layout.blockSize * layout.rowSize * 4;
  }

  /** A free slot (the buffers grow when none is left). */
  take(): number {
    const s = this.free.pop();
    if (s !== undefined) return s;
    if (this.next === this.capacity) this.grow(Math.max(FIRST_CAPACITY, 2 * this.capacity));
    return this.next++;
  }

  /** Give slot `s` back. */
  release(s: number): void {
    this.free.push(s);
  }

  /** The buffer of `layer` (all its slots). */
  binding(layer: number): Binding {
    return { id: this.ids[layer]!, offset: 0, size: this.capacity * this.slotBytes };
  }

  /** Where slot `s` of `layer` starts: its buffer and byte offset. */
  at(layer: number, s: number): { readonly id: number; readonly offset: number } {
    return { id: this.ids[layer]!, offset: s * this.slotBytes };
  }

  private grow(capacity: number): void {
    const bytes = capacity * this.slotBytes;
    if (bytes > this.rt.limits.maxStorageBufferBindingSize) {
      throw new WebgpuMemoryError(`the KV cache (${capacity} blocks of ${this.layout.blockSize} tokens)`, bytes, 0, this.rt.limits.maxStorageBufferBindingSize,
        'is larger, per layer, than the largest buffer binding the adapter allows (maxStorageBufferBindingSize)');
    }
    this.rt.reserve(this.layout.layers * bytes, 'the KV cache');
    const ids = Array.from({ length: this.layout.layers }, (_, l) => {
      const b = this.rt.alloc(bytes, `the KV cache of layer ${l}`);
      if (this.capacity > 0) this.rt.copy(this.ids[l]!, 0, b.id, 0, this.capacity * this.slotBytes);
      return b.id;
    });
    for (const id of this.ids) this.rt.release(id);
    this.ids = ids;
    this.capacity = capacity;
  }
}
