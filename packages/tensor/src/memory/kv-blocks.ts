/**
 * Storage for the blocks of a paged KV cache. A block holds the keys and values of `blockSize`
 * tokens for every layer, laid out [layer][k | v][blockSize][rowSize] float32 (the model's
 * `KVBlockPool`). It is heap storage like any other (host memory of the cpu device), and its
 * layout is recorded so that a device can keep blocks its own way: the webgpu device holds each
 * layer of every block in one buffer per layer (an arena), where attention reads them.
 */
import { heapAddress, heapHolds, persistentF32 } from './heap';

/** The layout of a KV block. */
export interface KvLayout {
  readonly layers: number;
  readonly blockSize: number;
  /** Floats per token per layer (kv heads · head dim). */
  readonly rowSize: number;
}

/** Blocks by heap byte address; an entry holds only while its array is live storage at that address. */
const blocks = new Map<number, { readonly block: WeakRef<Float32Array>; readonly layout: KvLayout }>();

/** A zeroed block of KV storage with `layout` (persistent: it outlives `tidy` scopes until `heapRelease`). */
export function kvBlockStorage(layout: KvLayout): Float32Array {
  const a = persistentF32(layout.layers * 2 * layout.blockSize * layout.rowSize);
  const at = heapAddress(a);
  if (at >= 0) blocks.set(at, { block: new WeakRef(a), layout });
  return a;
}

/** The live KV block whose bytes hold heap address `addr`: its start, bytes and layout; null when none. */
export function kvBlockAt(addr: number): { readonly at: number; readonly bytes: number; readonly layout: KvLayout } | null {
  for (const [at, b] of blocks) {
    const a = b.block.deref();
    if (a === undefined || !heapHolds(a) || heapAddress(a) !== at) { blocks.delete(at); continue; }
    if (at <= addr && addr < at + a.byteLength) return { at, bytes: a.byteLength, layout: b.layout };
  }
  return null;
}
