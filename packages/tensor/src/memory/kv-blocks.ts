/**
 * Storage for the blocks of a paged KV cache. A block holds the keys and values of `blockSize`
 * tokens for every layer, laid out [layer][k | v][blockSize][rowSize], in float32 or, as
 * llama.cpp keeps its cache by default, in IEEE half precision (f16 bits: half the bytes that a
 * long-context decoding step reads). It is heap storage like any other (host memory of the cpu
 * device), and its layout is recorded so that a device can keep blocks its own way: the webgpu
 * device holds each layer of every float32 block in one buffer per layer (an arena), where
 * attention reads them. f16 blocks are read by the cpu kernels only.
 */
import { f32ArrayToF16 } from '../dtype';
import { heapAddress, heapHolds, persistentF32, persistentU16 } from './heap';

/** Element type of a KV cache: float32, or f16 bits. */
export type KvDType = 'f32' | 'f16';

/** A KV block's storage: float32, or f16 bits. */
export type KvBlockData = Float32Array | Uint16Array;

/** The layout of a KV block. */
export interface KvLayout {
  readonly layers: number;
  readonly blockSize: number;
  /** Floats per token per layer (kv heads · head dim). */
  readonly rowSize: number;
  /** Element type (default 'f32'). */
  readonly dtype?: KvDType;
}

/** Blocks by heap byte address; an entry holds only while its array is live storage at that address. */
const blocks = new Map<number, { readonly block: WeakRef<Float32Array>; readonly layout: KvLayout }>();

/** A zeroed block of KV storage with `layout` (persistent: it outlives `tidy` scopes until `heapRelease`). */
export function kvBlockStorage(layout: KvLayout & { readonly dtype?: 'f32' }): Float32Array;
export function kvBlockStorage(layout: KvLayout): KvBlockData;
export function kvBlockStorage(layout: KvLayout): KvBlockData {
  const n = layout.layers * 2 * layout.blockSize * layout.rowSize;
  if (layout.dtype === 'f16') return persistentU16(n);
  const a = persistentF32(n);
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

// Float16Array (V8 13.5+, Node 24) converts a whole row natively with the same rounding as f32ToF16Bits.
const F16 = (globalThis as { Float16Array?: new (b: ArrayBufferLike, o: number, n: number) => { set(a: ArrayLike<number>): void } }).Float16Array;

/**
 * dst ← f16 bits of src (round to nearest even, overflow to ±Inf: IEEE conversion), the write of
 * new keys and values into an f16 KV block. `native` = false takes the portable loop (the test
 * checks that both give the same bits).
 */
export function f16RowsInto(src: ArrayLike<number>, dst: Uint16Array, native = F16 !== undefined): void {
  if (src.length !== dst.length) throw new RangeError(`f16RowsInto: ${src.length} values into ${dst.length}`);
  if (native && F16) new F16(dst.buffer, dst.byteOffset, dst.length).set(src);
  else f32ArrayToF16(src, dst);
}

let halfTable: Float32Array | undefined;
/** dst ← the float32 values of f16 bits src (exact: every half is a float32), through a 65,536-entry table. */
export function f16RowsToF32(src: Uint16Array, dst: Float32Array): void {
  if (halfTable === undefined) {
    halfTable = new Float32Array(65536);
    const bits = new Uint32Array(halfTable.buffer);
    // Half bits → float32 bits: sign moved up, exponent rebased (or Inf/NaN kept), subnormals normalised.
    for (let h = 0; h < 65536; h++) {
      const sign = (h & 0x8000) << 16, e = (h >>> 10) & 0x1f, m = h & 0x3ff;
      if (e === 0x1f) bits[h] = (sign | 0x7f800000 | (m << 13)) >>> 0;
      else if (e !== 0) bits[h] = (sign | ((e + 112) << 23) | (m << 13)) >>> 0;
      else halfTable[h] = (sign ? -1 : 1) * m * 2 ** -24;
    }
  }
  for (let i = 0; i < src.length; i++) dst[i] = halfTable[src[i]!]!;
}
