/**
 * The memory of the `cpu` device: one shared `WebAssembly.Memory` that holds the float storage of
 * tensors and the GEMM's scratch, so the WebAssembly kernels (GEMM, and through it attention and
 * the fused LM-head loss) read operands where they already are instead of copying them in.
 *
 * Allocator: blocks of 64-byte-aligned size classes (4 classes per power of two, so at most 25 %
 * slack) are carved from the top of the memory and, once released, kept in a free list per class
 * and handed out again (zeroed). A block is released
 * - explicitly, where its owner is certain: autograd's intermediate gradients once consumed,
 *   kernel scratch, `Tensor.dispose()`, and every op output of a `tidy` scope when it closes
 *   (a training step: forward and backward inside `tidy`, so the next step reuses the same
 *   blocks, still warm in cache, instead of touching fresh pages);
 * - otherwise when its typed array is garbage-collected (a `FinalizationRegistry`), so storage stays
 *   valid as long as any JavaScript value (tensor, `storage`, `.data` view) still refers to it.
 *   Storage allocated in a scope is registered only if it outlives the scope (kept): a
 *   registration costs microseconds and slows every young-generation collection, which for the
 *   hundreds of short-lived outputs of a decode step was a tenth of its time.
 *
 * Growing a shared memory never detaches existing views (their SharedArrayBuffer keeps its length
 * and keeps aliasing the same bytes); views of newly grown bytes are taken from the current
 * `memory.buffer`. Storage allocated outside a scope, once the memory holds {@link HEAP_SOFT_LIMIT}
 * bytes (much of it perhaps waiting for a garbage collection that V8, blind to this memory, may
 * not run soon), falls back to ordinary JavaScript arrays, which the GEMM then stages (counted in
 * `gemmKernelInfo().bytesStaged`); inside a scope, where release is certain, the memory may grow
 * to its 4 GiB maximum. Once the memory is at its maximum, a request no block of its class can
 * serve takes a pooled block of a larger class (at most twice its size); storage that still
 * finds no room is a plain array, and the kernels stage it through scratch, or in row chunks
 * through the staging reserve at the bottom of the memory ({@link stagedRows}) when even the
 * scratch finds no room.
 */
import { HeapError } from '../errors';
import { releaseResident } from '../residency';
import { encodeModule, forLoop, get, i32, v128, ValType } from '../wasm/encoder';
import { wasmApi, type WasmMemory } from '../wasm/api';

const PAGE = 65536;
/** A wasm32 memory holds at most 65536 pages (4 GiB). */
const MAX_PAGES = 65536;
/** Bytes below this address are never handed out (0 stays an invalid address). */
const BASE = 1024;
/** Bytes at BASE kept for {@link stagedRows}: operands staged in row chunks when the heap has no room left. */
export const STAGING_RESERVE = 1 << 20;
/** Tensor storage allocated outside a scope beyond this many heap bytes goes to plain JavaScript arrays instead. */
export const HEAP_SOFT_LIMIT = 256 << 20;

interface Block {
  /** Byte address in the memory. */
  readonly addr: number;
  /** Size class in bytes. */
  readonly bytes: number;
  /** Whether the array is registered for release on garbage collection. */
  registered?: boolean;
}

let memory: WasmMemory | null | undefined;
let lastBuffer: ArrayBufferLike | null = null;
/** Every SharedArrayBuffer object this memory has handed out (a new one after each grow). */
const buffers = new WeakSet<object>();
let top = BASE + STAGING_RESERVE;
/** The most bytes the memory may hold (lowered by tests through {@link setHeapMaxBytes}). */
let maxBytes = MAX_PAGES * PAGE;
let reserveInUse = false;
const free = new Map<number, number[]>();
/** The block of a live heap array (storage or scratch), kept on the array itself (a WeakMap costs the GC far more). */
const BLOCK: unique symbol = Symbol('apertus.heap.block');
type Owned = { [BLOCK]?: Block | undefined };
/** Partial views of heap storage → the storage, so a view keeps its block alive. */
const owners = new WeakMap<object, object>();
const collected = new FinalizationRegistry<Block>((b) => recycle(b));
/** Tensor storage allocated while the innermost scope is open (see `tidy`). */
let scope: Set<object> | null = null;
let liveBytes = 0;

/** The shared memory of the cpu device, created on first use; null where WebAssembly or SharedArrayBuffer is missing. */
export function heapMemory(): WasmMemory | null {
  if (memory === undefined) {
    try {
      memory = wasmApi === null ? null : new wasmApi.Memory({ initial: Math.ceil(top / PAGE), maximum: MAX_PAGES, shared: true });
    } catch {
      memory = null;
    }
  }
  return memory;
}

/** The memory's current buffer (registered, so arrays on it are recognised as heap arrays). */
function buffer(): ArrayBufferLike {
  const b = memory!.buffer;
  if (b !== lastBuffer) { lastBuffer = b; buffers.add(b); }
  return b;
}

/** Size class of a request: a multiple of 64 bytes, at most 25 % above it. */
function sizeClass(bytes: number): number {
  if (bytes <= 256) return Math.max(64, Math.ceil(bytes / 64) * 64);
  const step = Math.max(64, 2 ** Math.floor(Math.log2(bytes)) / 4);
  return Math.ceil(bytes / step) * step;
}

function recycle(b: Block): void {
  releaseResident(b.addr, b.bytes);
  liveBytes -= b.bytes;
  let list = free.get(b.bytes);
  if (!list) free.set(b.bytes, (list = []));
  list.push(b.addr);
}

/** A block of at least `bytes` (`fresh`: never used, so still zero), or null when it would take the memory past `limit` bytes. */
function take(bytes: number, limit: number): (Block & { fresh: boolean }) | null {
  const mem = heapMemory();
  if (mem === null) return null;
  const cls = sizeClass(bytes);
  const list = free.get(cls);
  if (list && list.length > 0) {
    liveBytes += cls;
    return { addr: list.pop()!, bytes: cls, fresh: false };
  }
  const end = top + cls;
  if (end > Math.min(limit, maxBytes)) return larger(cls);
  const have = mem.buffer.byteLength;
  if (end > have) {
    // Grow by at least a quarter of the current size, so a growing workload grows rarely.
    const pages = Math.min(maxBytes / PAGE, Math.max(Math.ceil(end / PAGE), Math.ceil((have * 1.25) / PAGE)));
    try {
      mem.grow(pages - have / PAGE);
    } catch {
      try { mem.grow(Math.ceil(end / PAGE) - have / PAGE); } catch { return larger(cls); }
    }
  }
  const b = { addr: top, bytes: cls, fresh: true };
  top = end;
  liveBytes += cls;
  return b;
}

/** The smallest pooled block of a class above `cls` and at most twice it (the memory cannot grow), or null. */
function larger(cls: number): (Block & { fresh: boolean }) | null {
  let best = 0;
  for (const [c, list] of free) if (c > cls && c <= 2 * cls && list.length > 0 && (best === 0 || c < best)) best = c;
  if (best === 0) return null;
  liveBytes += best;
  return { addr: free.get(best)!.pop()!, bytes: best, fresh: false };
}

/** Cap the memory at `bytes` (at least its current size; default the 4 GiB of wasm32): a hook for tests of a full heap. */
export function setHeapMaxBytes(bytes: number = MAX_PAGES * PAGE): void {
  maxBytes = Math.min(MAX_PAGES * PAGE, Math.max(Math.ceil(bytes / PAGE) * PAGE, heapMemory()?.buffer.byteLength ?? 0));
}

/**
 * `n` zeroed floats of tensor storage on the heap, released when the array is garbage-collected
 * (or by {@link heapRelease}, or when its scope closes); a plain `Float32Array` when the heap is
 * unavailable, or past {@link HEAP_SOFT_LIMIT} outside a scope.
 */
export function heapF32(n: number): Float32Array {
  return storage(n, 4, Float32Array);
}

/** `n` zeroed 16-bit values (bf16/f16 storage) on the heap; see {@link heapF32}. */
export function heapU16(n: number): Uint16Array {
  return storage(n, 2, Uint16Array);
}

/**
 * `n` zeroed floats on the heap that belong to no scope (long-lived buffers such as KV-cache
 * blocks): released by {@link heapRelease} or when the array is garbage-collected; a plain
 * `Float32Array` where the heap is unavailable or cannot grow.
 */
export function persistentF32(n: number): Float32Array {
  return storage(n, 4, Float32Array, true);
}

/** `n` zeroed 16-bit values on the heap that belong to no scope (f16 KV-cache blocks); see {@link persistentF32}. */
export function persistentU16(n: number): Uint16Array {
  return storage(n, 2, Uint16Array, true);
}

/**
 * `bytes` of kernel scratch on the heap (not zeroed): the caller must {@link heapRelease} it. Fails
 * only where the memory cannot grow: returns null then.
 */
export function heapScratch(bytes: number): Float32Array | null {
  const b = take(Math.max(4, bytes), maxBytes);
  if (b === null) return null;
  const a = new Float32Array(buffer(), b.addr, Math.ceil(bytes / 4));
  (a as Owned)[BLOCK] = { addr: b.addr, bytes: b.bytes };
  return a;
}

/** `n` floats of kernel scratch (not zeroed): on the heap when it can grow, else a plain array; release with {@link heapRelease}. */
export function scratchF32(n: number): Float32Array {
  return heapScratch(4 * n) ?? new Float32Array(n);
}

function storage<T extends Float32Array | Uint16Array>(n: number, es: number, ctor: new (b: ArrayBufferLike, o: number, n: number) => T, persistent = false): T {
  const b = n === 0 ? null : take(n * es, scope || persistent ? maxBytes : HEAP_SOFT_LIMIT);
  if (b === null) return new ctor(new ArrayBuffer(n * es), 0, n);
  const a = new ctor(buffer(), b.addr, n);
  if (!b.fresh) zero(a, b.addr, n * es);
  (a as Owned)[BLOCK] = { addr: b.addr, bytes: b.bytes };
  if (scope && !persistent) scope.add(a);
  else register(a);
  return a;
}

let zeroFn: ((addr: number, bytes: number) => void) | null | undefined;

/**
 * Zero the `bytes` of `a` at `addr` (a block, so rounding up to 16 bytes stays inside it): with
 * 16-byte stores of a small WebAssembly function, 4–6× faster than `fill(0)` on a shared memory.
 */
function zero(a: Float32Array | Uint16Array, addr: number, bytes: number): void {
  if (zeroFn === undefined) {
    try {
      const { i32: I32 } = ValType, [at, n, i] = [0, 1, 2];
      const code = encodeModule([{ name: 'zero', params: [I32, I32], results: [], locals: [I32], body: forLoop(i, i32.const(0), get(n), i32.const(16), v128.store(i32.add(get(at), get(i)), v128.zero())) }], 1, MAX_PAGES);
      zeroFn = (new wasmApi!.Instance(new wasmApi!.Module(code), { env: { memory: memory! } }).exports as { zero: (addr: number, bytes: number) => void }).zero;
    } catch {
      zeroFn = null;
    }
  }
  if (zeroFn) zeroFn(addr, Math.ceil(bytes / 16) * 16);
  else a.fill(0);
}

/** Release `a`'s block when `a` is garbage-collected. */
function register(a: object): void {
  const b = (a as Owned)[BLOCK];
  if (!b || b.registered) return;
  b.registered = true;
  collected.register(a, { addr: b.addr, bytes: b.bytes }, a);
}

/**
 * Return the block of a heap array to the pool now. Only for arrays whose every user is known
 * (the caller owns it); a no-op for arrays not allocated by the heap, or already released.
 */
/** Whether `a` is live storage of the heap (allocated here and neither released nor collected). */
export function heapHolds(a: object): boolean {
  return (a as Owned)[BLOCK] !== undefined;
}

export function heapRelease(a: object): void {
  const b = (a as Owned)[BLOCK];
  if (!b) return;
  (a as Owned)[BLOCK] = undefined;
  if (b.registered) collected.unregister(a);
  recycle(b);
}

/** Open a scope: storage allocated until {@link heapCloseScope} is released then. Returns the enclosing scope. */
export function heapOpenScope(): Set<object> | null {
  const outer = scope;
  scope = new Set();
  return outer;
}

/** Close the innermost scope, releasing its storage except `keep`, and return to `outer`. */
export function heapCloseScope(outer: Set<object> | null, keep: Iterable<object>): void {
  const s = scope!;
  scope = outer;
  for (const k of keep) if (s.delete(k)) register(k);
  for (const a of s) heapRelease(a);
}

/** Let storage outlive the scope it was allocated in (gradients of leaves). */
export function heapKeep(a: object): void {
  if (scope?.delete(a)) register(a);
}

/** Byte address of a typed array that lives in the heap memory, else -1. */
export function heapAddress(a: ArrayBufferView): number {
  const b = a.buffer;
  return b === lastBuffer || buffers.has(b) ? a.byteOffset : -1;
}

const noop = (): void => {};

/** Addresses of `arrays` on the heap, those that are not staged whole into scratch; null (nothing held) when the scratch finds no room. */
function stageWhole(arrays: Float32Array[], outputs: Float32Array[]): { at: number[]; done(): void } | null {
  const direct = arrays.map(heapAddress);
  if (!direct.includes(-1)) return { at: direct, done: noop };
  const copies = new Map<Float32Array, Float32Array>();
  const done = (copyOut: boolean): void => {
    for (const [a, s] of copies) {
      if (copyOut && outputs.includes(a)) a.set(s.subarray(0, a.length));
      heapRelease(s);
    }
  };
  const at: number[] = [];
  for (const a of arrays) {
    const p = heapAddress(a);
    if (p >= 0) { at.push(p); continue; }
    let s = copies.get(a);
    if (!s) {
      const b = heapScratch(4 * Math.max(1, a.length));
      if (b === null) { done(false); return null; }
      b.set(a);
      copies.set(a, (s = b));
    }
    at.push(heapAddress(s));
  }
  return { at, done: () => done(true) };
}

const bytesOf = (arrays: Float32Array[]): string => arrays.map((a) => 4 * a.length).join(', ');

/**
 * Byte addresses of `arrays` on the heap, staging those that are not (inputs copied in); `done`
 * copies staged outputs back and releases the scratch. Throws a {@link HeapError} naming `op`
 * when the heap has no room for the copies (row kernels use {@link stagedRows}, which cannot fail so).
 */
export function staged(arrays: Float32Array[], outputs: Float32Array[], op = 'cpu kernel'): { at: number[]; done(): void } {
  const s = stageWhole(arrays, outputs);
  if (s === null) throw new HeapError(`${op}: the cpu device memory (${heapStats().memoryBytes} bytes, at its maximum) has no room to stage operands of ${bytesOf(arrays)} bytes`);
  return s;
}

/**
 * Run a row kernel with every operand on the heap: `arrays[i]` holds `widths[i]` floats per row
 * of `rows` (width 0: read whole by every row, such as a weight), `outputs` are copied back.
 * `kernel(at, r0, count)` runs rows [r0, r0 + count) given the byte addresses of their first
 * rows. Operands not on the heap are staged whole into scratch (one call), or where the heap has
 * no room, in chunks of rows through the staging reserve; only operands whose width-0 part and
 * one row together exceed the reserve throw a {@link HeapError} naming `op`.
 */
export function stagedRows(op: string, arrays: Float32Array[], widths: number[], outputs: Float32Array[], rows: number, kernel: (at: number[], r0: number, count: number) => void): void {
  const whole = stageWhole(arrays, outputs);
  if (whole !== null) {
    try { kernel(whole.at, 0, rows); } finally { whole.done(); }
    return;
  }
  const mem = heapMemory()!;
  const away = (i: number): boolean => heapAddress(arrays[i]!) < 0;
  const a16 = (bytes: number): number => Math.ceil(bytes / 16) * 16;
  // Width-0 operands not on the heap first, staged once; then a slot of `count` rows per row operand.
  let fixed = 0, perRow = 0;
  arrays.forEach((a, i) => {
    if (!away(i)) return;
    if (widths[i] === 0) fixed += a16(4 * a.length);
    else perRow += 4 * widths[i]!;
  });
  const fit = Math.floor((STAGING_RESERVE - fixed - 16 * arrays.length) / Math.max(1, perRow));
  const count = Math.min(rows, fit);
  if (fit < 1 || reserveInUse) {
    throw new HeapError(`${op}: the cpu device memory is full and operands of ${bytesOf(arrays)} bytes do not fit its ${STAGING_RESERVE}-byte staging reserve one row at a time`);
  }
  const f32 = (at: number, n: number): Float32Array => new Float32Array(mem.buffer, at, n);
  const slot: number[] = [];
  let at = BASE;
  arrays.forEach((a, i) => {
    if (!away(i)) { slot.push(-1); return; }
    slot.push(at);
    if (widths[i] === 0) f32(at, a.length).set(a);
    at += a16(4 * (widths[i] === 0 ? a.length : count * widths[i]!));
  });
  reserveInUse = true;
  try {
    for (let r0 = 0; r0 < rows; r0 += count) {
      const c = Math.min(count, rows - r0);
      const ptr = arrays.map((a, i) => {
        const w = widths[i]!;
        if (slot[i]! < 0) return heapAddress(a) + 4 * w * r0;
        if (w > 0) f32(slot[i]!, c * w).set(a.subarray(r0 * w, (r0 + c) * w));
        return slot[i]!;
      });
      kernel(ptr, r0, c);
      arrays.forEach((a, i) => {
        const w = widths[i]!;
        if (w > 0 && slot[i]! >= 0 && outputs.includes(a)) a.set(f32(slot[i]!, c * w), r0 * w);
      });
    }
    arrays.forEach((a, i) => { if (widths[i] === 0 && slot[i]! >= 0 && outputs.includes(a)) a.set(f32(slot[i]!, a.length)); });
  } finally {
    reserveInUse = false;
  }
}

/** `storage.subarray(begin, end)` that keeps `storage` (and so its heap block) alive as long as the view. */
export function heapView<T extends Float32Array | Uint16Array | Int32Array>(storage: T, begin: number, end: number): T {
  if (begin === 0 && end === storage.length) return storage;
  const v = storage.subarray(begin, end) as T;
  if ((storage as Owned)[BLOCK]) owners.set(v, storage);
  return v;
}

/** Heap figures (diagnostics and tests). */
export interface HeapStats {
  /** Bytes of the shared memory (0 before first use). */
  memoryBytes: number;
  /** Bytes in blocks handed out and not yet released. */
  liveBytes: number;
  /** Bytes in released blocks waiting in the pool. */
  pooledBytes: number;
}

/** Sizes of the cpu device memory. */
export function heapStats(): HeapStats {
  let pooled = 0;
  for (const [cls, list] of free) pooled += cls * list.length;
  return { memoryBytes: memory ? memory.buffer.byteLength : 0, liveBytes, pooledBytes: pooled };
}
