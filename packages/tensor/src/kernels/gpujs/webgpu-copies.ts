/**
 * Which host memory has newer values in a GPU buffer of the webgpu worker: a kernel output that
 * fills a tensor's storage (or a range of it) stays on the GPU, and the host range is marked here
 * until the host needs it (`toHost`: read back, then the range is the host's again), a later
 * output replaces it, or its memory is recycled. Ranges are keyed by their address in the cpu
 * device memory (one shared WebAssembly memory, whatever `SharedArrayBuffer` object a view came
 * from) or, for other arrays, by their `ArrayBuffer`, whose collection frees its buffers.
 */
import { heapAddress, heapMemory } from '../../memory/heap';

/** A host range whose current values are in worker buffer `id`. */
interface Copy {
  readonly id: number;
  readonly byteOffset: number;
  readonly byteLength: number;
}

/** How the copies reach the worker: read a buffer into host memory (blocking), free buffers. */
export interface CopyTransport {
  read(id: number, into: Float32Array): void;
  free(ids: number[]): void;
}

export class DeviceCopies {
  private readonly heap = new Map<number, Copy>();
  private readonly other = new WeakMap<ArrayBufferLike, Map<number, Copy>>();
  private readonly collected: FinalizationRegistry<Map<number, Copy>>;

  constructor(private readonly transport: CopyTransport) {
    this.collected = new FinalizationRegistry((m) => transport.free([...m.values()].map((c) => c.id)));
  }

  /** The buffer holding exactly `v`'s range, if any. */
  exact(v: ArrayBufferView): number | undefined {
    if (!(v instanceof Float32Array)) return undefined;
    const [space, at] = this.space(v, false);
    const c = space?.get(at);
    return c !== undefined && c.byteLength === v.byteLength ? c.id : undefined;
  }

  /** Bring every range overlapping `v` back to the host (read back, then forgotten). */
  toHost(v: ArrayBufferView): void {
    const [space, at] = this.space(v, false);
    if (space === undefined || space.size === 0) return;
    for (const c of this.overlapping(space, at, v.byteLength)) {
      this.transport.read(c.id, this.hostView(v, c));
      space.delete(c.byteOffset);
      this.transport.free([c.id]);
    }
  }

  /** `v` now holds the output in buffer `id`; ranges it covers are dropped, those it cuts brought home first. */
  replace(v: Float32Array, id: number): void {
    const [space, at] = this.space(v, true);
    const end = at + v.byteLength;
    const dropped: number[] = [];
    for (const c of this.overlapping(space!, at, v.byteLength)) {
      if (c.byteOffset < at || c.byteOffset + c.byteLength > end) this.transport.read(c.id, this.hostView(v, c));
      space!.delete(c.byteOffset);
      dropped.push(c.id);
    }
    if (dropped.length > 0) this.transport.free(dropped);
    space!.set(at, { id, byteOffset: at, byteLength: v.byteLength });
  }

  /** Bytes [addr, addr + bytes) of the cpu device memory were recycled: free their buffers. */
  recycled(addr: number, bytes: number): void {
    if (this.heap.size === 0) return;
    const gone = this.overlapping(this.heap, addr, bytes);
    for (const c of gone) this.heap.delete(c.byteOffset);
    if (gone.length > 0) this.transport.free(gone.map((c) => c.id));
  }

  private space(v: ArrayBufferView, create: boolean): [Map<number, Copy> | undefined, number] {
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

  private overlapping(space: Map<number, Copy>, at: number, bytes: number): Copy[] {
    const exact = space.get(at);
    if (exact !== undefined && exact.byteLength === bytes) return [exact];
    const res: Copy[] = [];
    for (const c of space.values()) if (c.byteOffset < at + bytes && at < c.byteOffset + c.byteLength) res.push(c);
    return res;
  }

  /** The host memory of copy `c`, reached through `v` (same memory space). */
  private hostView(v: ArrayBufferView, c: Copy): Float32Array {
    const buffer = heapAddress(v) >= 0 ? heapMemory()!.buffer : v.buffer;
    return new Float32Array(buffer, c.byteOffset, c.byteLength / 4);
  }
}
