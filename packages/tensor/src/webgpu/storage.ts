/**
 * The one buffer table of device `webgpu`: which host arrays (tensor storage, by address in the
 * cpu device memory, or by `ArrayBuffer` for other arrays) have a device buffer, and whose values
 * are current.
 *
 * - `device`: a kernel wrote the range; the host copy is stale until it is read back.
 * - `shared`: host and device hold the same values — an array uploaded on first use (weights,
 *   constants, a batch), or read back without being handed to the host for writing. Kept until
 *   the host may write the array (`toHost`), its memory is recycled, or the budget needs room.
 *   A small array keeps a copy of the bytes it uploaded and is compared with it on every use, so
 *   a host array refilled in place (token ids, positions) is uploaded again, never served stale.
 *
 * Kernels ask for bindings: `input` (uploads a host array the device does not hold), `output`
 * (the range a kernel overwrites: it becomes `device`), `inout` (read and written in place).
 * The host side (`Residency`): `toHost` before the host may write (device values read back, the
 * device copy dropped), `hostRead` before it only reads (read back, the device copy kept).
 */
import { heapAddress, heapMemory } from '../memory/heap';
import type { Residency } from '../residency';
import { deviceLostError } from './adapter';
import { WebgpuMemoryError } from './errors';
import type { Binding, WebgpuRuntime } from './runtime';
import { KvArena } from './kv-arena';
import { kvBlockAt, type KvLayout } from '../memory/kv-blocks';

/** Host arrays up to this size keep a copy of what they uploaded, compared on every use. */
const SNAPSHOT_BYTES = 64 << 10;
/** Storage buffer bindings must start at a multiple of this (WebGPU's minStorageBufferOffsetAlignment ≤ 256). */
const OFFSET_ALIGN = 256;

interface Entry {
  /** Host byte range [at, at + bytes) in its space. */
  readonly at: number;
  readonly bytes: number;
  /** The device buffer and where the range starts in it. */
  readonly id: number;
  readonly off: number;
  /** Whether this entry owns its buffer (a slice of a shared buffer does not). */
  readonly owned: boolean;
  /** Host values stale (`device`) or equal (`shared`). */
  device: boolean;
  /** Bytes uploaded, for small shared arrays (compared on use). */
  snapshot: Uint8Array | null;
  readonly space: Space;
  /** What the array is (the name its first binding gave it: traces of the uploads name it). */
  readonly what: string;
  /** A KV block: its slot in the arena of its layout (each layer's part in that layer's buffer); `id` and `off` unused. */
  readonly kv: { readonly arena: KvArena; readonly slot: number } | null;
}

type Space = Map<number, Entry>;

export class DeviceStorage implements Residency {
  readonly device = 'webgpu';
  private readonly heap: Space = new Map();
  private readonly other = new WeakMap<ArrayBufferLike, Space>();
  private readonly collected: FinalizationRegistry<Space>;
  /** Shared entries, least recently used first (what the budget may drop). */
  private readonly lru = new Map<Entry, true>();
  /** Temporary buffers of the op being recorded (released by `endOp`). */
  private temps: number[] = [];
  /** The KV arenas, by block layout. */
  private readonly arenas = new Map<string, KvArena>();

  /**
   * `retired`: the table of a device that was lost before this one; host access to what only it
   * held throws `device-lost` instead of handing out stale host memory.
   */
  constructor(readonly rt: WebgpuRuntime, private readonly retired: DeviceStorage | null = null) {
    this.collected = new FinalizationRegistry((space) => { for (const e of space.values()) this.release(e); });
    rt.onPressure((bytes) => this.evictShared(bytes));
  }

  /** A binding of `v`'s values on the device (uploaded when the device does not hold them). */
  input(v: ArrayBufferView, what: string): Binding {
    const [space, at] = this.space(v, true);
    const bytes = v.byteLength;
    const e = this.containing(space!, at, bytes, v);
    if (e !== null) {
      if (!e.device && e.snapshot !== null) this.refresh(e, v);
      this.touch(e);
      return this.sub(e, at, bytes);
    }
    return this.upload(v, space!, at, what);
  }

  /**
   * The device range a kernel overwrites with `v`'s new values: the range becomes `device`. An
   * entry holding exactly this range (or more: the rest stays as it is) keeps its buffer.
   */
  output(v: ArrayBufferView, what: string): Binding {
    this.retired?.forget(v);
    const [space, at] = this.space(v, true);
    const bytes = v.byteLength;
    const e = this.containing(space!, at, bytes, v, true);
    if (e !== null && e.kv !== null) {
      const r = this.kvPart(e, at, bytes);
      if (r.offset % OFFSET_ALIGN === 0) { this.markDevice(e); return { ...r, size: bytes }; }
    }
    if (e !== null && e.owned && (e.off + at - e.at) % OFFSET_ALIGN === 0) {
      this.markDevice(e);
      return { id: e.id, offset: e.off + at - e.at, size: bytes };
    }
    // Whatever overlaps is replaced: entries inside the range are dropped, those sticking out come home first.
    for (const o of this.overlapping(space!, at, bytes)) {
      if (o.at < at || o.at + o.bytes > at + bytes) this.toHost(this.hostView(v, o));
      else this.drop(o);
    }
    const b = this.rt.alloc(bytes, what);
    const n: Entry = { at, bytes, id: b.id, off: 0, owned: true, device: true, snapshot: null, space: space!, what, kv: null };
    space!.set(at, n);
    return { id: b.id, offset: 0, size: bytes };
  }

  /** A binding that a kernel reads and writes in place: uploaded if needed, then `device`. */
  inout(v: ArrayBufferView, what: string): Binding {
    const b = this.input(v, what);
    const [space, at] = this.space(v, false);
    const e = this.containing(space!, at, v.byteLength, v);
    if (e === null || !e.owned || b.id !== e.id) throw new WebgpuMemoryError(what, v.byteLength, 0, 0, 'could not be bound in place');
    this.markDevice(e);
    return b;
  }

  /** A zeroed temporary buffer of `bytes` for the op being recorded (freed by `endOp`). */
  temp(bytes: number, what: string): Binding {
    const b = this.rt.alloc(bytes, what);
    this.temps.push(b.id);
    return b;
  }

  /** The op is recorded: its temporaries go back to the pool (later commands may reuse them; the order of commands keeps that safe). */
  endOp(): void {
    for (const id of this.temps) this.rt.release(id);
    this.temps = [];
  }

  /** Whether the device holds values of (part of) `v` that the host does not. */
  holdsNewer(v: ArrayBufferView): boolean {
    const [space, at] = this.space(v, false);
    return space !== undefined && this.overlapping(space, at, v.byteLength).some((e) => e.device);
  }

  /** Before the host writes `v`: read back what only the device holds and drop the device copies. */
  toHost(v: ArrayBufferView): void {
    this.checkRetired(v);
    const [space, at] = this.space(v, false);
    if (space === undefined || space.size === 0) return;
    const over = this.overlapping(space, at, v.byteLength);
    if (over.length === 0) return;
    this.readBack(v, over.filter((e) => e.device));
    for (const e of over) this.drop(e);
  }

  /** Before the host reads `v` (and will not write it): read back what only the device holds, and keep the device copies. */
  hostRead(v: ArrayBufferView): void {
    this.checkRetired(v);
    const [space, at] = this.space(v, false);
    if (space === undefined || space.size === 0) return;
    const newer = this.overlapping(space, at, v.byteLength).filter((e) => e.device);
    if (newer.length === 0) return;
    this.readBack(v, newer);
    for (const e of newer) {
      e.device = false;
      if (e.kv !== null) continue;
      e.snapshot = e.bytes <= SNAPSHOT_BYTES ? this.hostView(v, e).slice() : null;
      this.lru.set(e, true);
    }
  }

  /** Drop the entries overlapping `v` without reading them (their range is overwritten elsewhere). */
  forget(v: ArrayBufferView): void {
    const [space, at] = this.space(v, false);
    if (space !== undefined) for (const e of this.overlapping(space, at, v.byteLength)) this.drop(e);
  }

  private checkRetired(v: ArrayBufferView): void {
    if (this.retired?.holdsNewer(v)) throw deviceLostError('the values of this array lived only on a device that was lost');
  }

  /** The cpu device memory's bytes [addr, addr + bytes) were recycled: their device copies go. */
  recycled(addr: number, bytes: number): void {
    this.retired?.recycled(addr, bytes);
    if (this.heap.size === 0) return;
    for (const e of this.overlapping(this.heap, addr, bytes)) this.drop(e);
  }

  /** Drop shared copies (least recently used first) until `bytes` are freed or none is left. */
  private evictShared(bytes: number): void {
    let freed = 0;
    for (const e of this.lru.keys()) {
      if (freed >= bytes) break;
      freed += this.rt.bufferBytes(e.id);
      this.drop(e);
    }
    this.rt.trimPool();
  }

  /** Bytes of device buffers that hold host arrays (entries) now. */
  get entries(): number {
    return this.heap.size;
  }

  private upload(v: ArrayBufferView, space: Space, at: number, what: string): Binding {
    const bytes = v.byteLength;
    // Entries the new range overlaps come home first (their host copies are then current).
    for (const o of this.overlapping(space, at, bytes)) this.toHost(this.hostView(v, o));
    const b = this.rt.alloc(bytes, what);
    this.rt.write(b.id, 0, v, false, what);
    const e: Entry = {
      at, bytes, id: b.id, off: 0, owned: true, device: false, space, what, kv: null,
      snapshot: bytes <= SNAPSHOT_BYTES ? new Uint8Array(v.buffer, v.byteOffset, bytes).slice() : null,
    };
    space.set(at, e);
    this.lru.set(e, true);
    return { id: b.id, offset: 0, size: bytes };
  }

  /** A small shared array whose host bytes changed since its upload is uploaded again (into its buffer). */
  private refresh(e: Entry, v: ArrayBufferView): void {
    const host = this.hostView(v, e);
    const now = new Uint8Array(host.buffer, host.byteOffset, e.bytes);
    const snap = e.snapshot!;
    let same = true;
    for (let i = 0; i < now.length; i++) if (now[i] !== snap[i]) { same = false; break; }
    if (same) return;
    this.rt.write(e.id, e.off, now, false, e.what);
    snap.set(now);
  }

  /** A binding of the part [at, at + bytes) of entry `e`; an unaligned part is copied to a temporary buffer. */
  private sub(e: Entry, at: number, bytes: number): Binding {
    const { id, offset } = e.kv !== null ? this.kvPart(e, at, bytes) : { id: e.id, offset: e.off + at - e.at };
    if (offset % OFFSET_ALIGN === 0) return { id, offset, size: bytes };
    if (offset % 4 !== 0) throw new WebgpuMemoryError('a view', bytes, 0, 0, `starts at byte ${offset} of its buffer, not a multiple of 4`);
    const t = this.temp(bytes, 'an unaligned view');
    this.rt.copy(id, offset, t.id, 0, Math.ceil(bytes / 4) * 4);
    return { id: t.id, offset: 0, size: bytes };
  }

  /** Where [at, at + bytes) of KV entry `e` lies on the device (within one layer: its keys, or its values). */
  private kvPart(e: Entry, at: number, bytes: number): { readonly id: number; readonly offset: number } {
    const { arena, slot } = e.kv!, rel = at - e.at, l = Math.floor(rel / arena.slotBytes);
    if (rel + bytes > (l + 1) * arena.slotBytes) throw new WebgpuMemoryError('a view of a KV block', bytes, 0, 0, 'spans two layers (the device holds each layer apart)');
    const base = arena.at(l, slot);
    return { id: base.id, offset: base.offset + rel - l * arena.slotBytes };
  }

  /**
   * The KV block entry holding `v` (a block registered by `kvBlockStorage`, or a view of one),
   * placed in the arena of its layout on first use: from the host bytes, or cleared on the
   * device when those are all zero (a fresh block: nothing to upload).
   */
  kvEntry(v: ArrayBufferView): Entry | null {
    const [space, at] = this.space(v, true);
    const have = this.containing(space!, at, v.byteLength, v);
    if (have !== null && have.kv !== null) return have;
    const block = space === this.heap ? kvBlockAt(at) : null;
    if (block === null) return null;
    for (const o of this.overlapping(this.heap, block.at, block.bytes)) this.toHost(this.hostView(v, o));
    const arena = this.arenaFor(block.layout), slot = arena.take();
    const e: Entry = { at: block.at, bytes: block.bytes, id: -1, off: 0, owned: false, device: false, snapshot: null, space: this.heap, what: 'KV block', kv: { arena, slot } };
    const host = new Uint8Array(heapMemory()!.buffer, block.at, block.bytes);
    let zero = true;
    for (let i = 0; i < host.length; i += 4) if (host[i] !== 0 || host[i + 1] !== 0 || host[i + 2] !== 0 || host[i + 3] !== 0) { zero = false; break; }
    for (let l = 0; l < block.layout.layers; l++) {
      const d = arena.at(l, slot);
      if (zero) this.rt.clear(d.id, d.offset, arena.slotBytes);
      else this.rt.write(d.id, d.offset, host.subarray(l * arena.slotBytes, (l + 1) * arena.slotBytes), false, 'KV block');
    }
    this.heap.set(block.at, e);
    return e;
  }

  /** The slot of the KV block holding `v` (placing it on the device first) and its arena, or null when `v` is not KV storage. */
  kvSlot(v: ArrayBufferView): { readonly arena: KvArena; readonly slot: number } | null {
    return this.kvEntry(v)?.kv ?? null;
  }

  /**
   * Raw device bytes of `v` for a device copy (no binding alignment): as a source (uploaded if
   * the device does not hold it), or as a destination (`write`: the range becomes `device`; a
   * KV block goes to its arena).
   */
  copyRange(v: ArrayBufferView, write: boolean, what: string): { readonly id: number; readonly offset: number } {
    const [space, at] = this.space(v, true);
    let e = this.containing(space!, at, v.byteLength, v, write);
    if (e === null && space === this.heap) e = this.kvEntry(v);
    if (e === null) {
      const b = write ? this.output(v, what) : this.input(v, what);
      return { id: b.id, offset: b.offset };
    }
    if (!write && !e.device && e.snapshot !== null) this.refresh(e, v);
    const r = e.kv !== null ? this.kvPart(e, at, v.byteLength) : { id: e.id, offset: e.off + at - e.at };
    if (write) this.markDevice(e);
    else this.touch(e);
    return r;
  }

  /**
   * dst ← src for two whole KV blocks of one layout (a block copied on write): each layer's slot on
   * the device. False when they are not (the caller copies byte ranges).
   */
  copyKvBlock(src: ArrayBufferView, dst: ArrayBufferView): boolean {
    const a = this.kvEntry(src), b = this.kvEntry(dst);
    if (a === null || b === null || a.kv!.arena !== b.kv!.arena || src.byteLength !== a.bytes || dst.byteLength !== b.bytes) return false;
    if (heapAddress(src) !== a.at || heapAddress(dst) !== b.at) return false;
    const arena = a.kv!.arena;
    for (let l = 0; l < arena.layout.layers; l++) {
      const from = arena.at(l, a.kv!.slot), to = arena.at(l, b.kv!.slot);
      this.rt.copy(from.id, from.offset, to.id, to.offset, arena.slotBytes);
    }
    this.markDevice(b);
    return true;
  }

  private arenaFor(layout: KvLayout): KvArena {
    const key = `${layout.layers},${layout.blockSize},${layout.rowSize}`;
    let a = this.arenas.get(key);
    if (a === undefined) { a = new KvArena(this.rt, layout); this.arenas.set(key, a); }
    return a;
  }

  private markDevice(e: Entry): void {
    e.device = true;
    e.snapshot = null;
    this.lru.delete(e);
  }

  private touch(e: Entry): void {
    if (e.device || e.kv !== null) return;
    this.lru.delete(e);
    this.lru.set(e, true);
  }

  private drop(e: Entry): void {
    e.space.delete(e.at);
    this.lru.delete(e);
    this.release(e);
  }

  private release(e: Entry): void {
    if (e.owned) this.rt.release(e.id);
    if (e.kv !== null) e.kv.arena.release(e.kv.slot);
  }

  /** Read the device values of `entries` into their host ranges (one wait). */
  private readBack(v: ArrayBufferView, entries: Entry[]): void {
    if (entries.length === 0) return;
    this.rt.read(entries.flatMap((e) => {
      const host = this.hostView(v, e);
      if (e.kv === null) return [{ from: { id: e.id, offset: e.off, size: e.bytes }, into: host }];
      const { arena, slot } = e.kv;
      return Array.from({ length: arena.layout.layers }, (_, l) => ({
        from: { ...arena.at(l, slot), size: arena.slotBytes }, into: host.subarray(l * arena.slotBytes, (l + 1) * arena.slotBytes),
      }));
    }));
  }

  /** The entry whose range contains [at, at + bytes) entirely, if any (an entry overlapping only part of it comes home first, unless `replacing`). */
  private containing(space: Space, at: number, bytes: number, v: ArrayBufferView, replacing = false): Entry | null {
    const exact = space.get(at);
    if (exact !== undefined && exact.bytes >= bytes) return exact;
    let inside: Entry | null = null;
    for (const e of this.overlapping(space, at, bytes)) {
      if (e.at <= at && at + bytes <= e.at + e.bytes) inside = e;
      else if (!replacing) this.toHost(this.hostView(v, e));
    }
    return inside !== null && space.get(inside.at) === inside ? inside : null;
  }

  private space(v: ArrayBufferView, create: boolean): [Space | undefined, number] {
    const addr = heapAddress(v);
    if (addr >= 0) return [this.heap, addr];
    let m = this.other.get(v.buffer);
    if (m === undefined && create) {
      m = new Map();
      this.other.set(v.buffer, m);
      this.collected.register(v.buffer, m);
    }
    return [m, v.byteOffset];
  }

  private overlapping(space: Space, at: number, bytes: number): Entry[] {
    const exact = space.get(at);
    if (exact !== undefined && exact.bytes === bytes) return [exact];
    const res: Entry[] = [];
    for (const e of space.values()) if (e.at < at + Math.max(bytes, 1) && at < e.at + e.bytes) res.push(e);
    return res;
  }

  /** The host memory of entry `e`, reached through `v` (same space). */
  private hostView(v: ArrayBufferView, e: Entry): Uint8Array {
    const buffer = heapAddress(v) >= 0 ? heapMemory()!.buffer : v.buffer;
    return new Uint8Array(buffer, e.at, e.bytes);
  }
}
