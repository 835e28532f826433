// Where a weight's bytes live for the products: `{ memory, byteOffset }`, memory being the cpu
// heap (kernels/cpu/heap.ts) or a shared WebAssembly.Memory that holds weights only (a model larger
// than one wasm32 memory, 4 GiB, takes several). A product runs its kernels on the weight's
// memory; activations and outputs that live elsewhere are staged into scratch there.
import { HeapError } from '../../../errors';
import { heapAddress, heapMemory, heapRelease, heapScratch, persistentF32 } from '../../../memory/heap';
import { wasmApi, type WasmMemory } from '../../../wasm/api';
import { canShareMemory } from '../../../host';

const PAGE = 65536;
/** A wasm32 memory holds at most 4 GiB. */
const MAX_BYTES = 65536 * PAGE;
/** Bytes of a weights memory kept for products' scratch (staged activations and outputs, input records). */
export const WEIGHT_MEMORY_SCRATCH = 512 << 20;

/** A weight's bytes in a memory the product kernels run on. */
export interface WeightBytes {
  readonly memory: WasmMemory;
  readonly byteOffset: number;
}

/** A shared memory holding weights only, with room above them for products' scratch. */
class WeightMemory {
  readonly memory: WasmMemory;
  /** End of the weights (the scratch starts at the next 64-byte line). */
  top = 64;
  constructor() {
    if (wasmApi === null) throw new HeapError('weights: WebAssembly is not available in this runtime');
    this.memory = new wasmApi.Memory({ initial: 1, maximum: 65536, shared: true });
  }
  /** Make the memory at least `end` bytes long (false where it cannot grow that far). */
  reserve(end: number): boolean {
    const have = this.memory.buffer.byteLength;
    if (end <= have) return true;
    if (end > MAX_BYTES) return false;
    try { this.memory.grow(Math.ceil((end - have) / PAGE)); return true; } catch { return false; }
  }
}

const memories = new WeakMap<WasmMemory, WeightMemory>();

/**
 * The weights of a model, in as many weights-only memories as they need (a new one when the last
 * is full): `store` copies a tensor's bytes in, once, and they stay there as long as the store.
 */
export class WeightStore {
  private readonly all: WeightMemory[] = [];

  /** Whether weights memories can be made here (WebAssembly and memory shared with worker threads). */
  static available(): boolean {
    return wasmApi !== null && canShareMemory();
  }

  /** Copy `bytes` in (64-byte aligned); the products read them where they now are. */
  store(bytes: Uint8Array): WeightBytes {
    let m = this.all.at(-1);
    const fits = (w: WeightMemory): boolean => w.top + bytes.byteLength + WEIGHT_MEMORY_SCRATCH <= MAX_BYTES;
    if (!m || (m.top > 64 && !fits(m))) {
      m = new WeightMemory();
      memories.set(m.memory, m);
      this.all.push(m);
    }
    const at = m.top;
    if (!m.reserve(at + bytes.byteLength)) throw new HeapError(`weights: cannot grow a weights memory to ${at + bytes.byteLength} bytes`);
    new Uint8Array(m.memory.buffer, at, bytes.byteLength).set(bytes);
    m.top = Math.ceil((at + bytes.byteLength) / 64) * 64;
    return { memory: m.memory, byteOffset: at };
  }

  /** Bytes held, over all memories. */
  get bytes(): number {
    return this.all.reduce((s, m) => s + m.top, 0);
  }
}

/** A weight's bytes copied into the cpu heap (a persistent block, released with the returned value's `storage`). */
export function storeOnHeap(bytes: Uint8Array): WeightBytes & { storage: Float32Array } {
  const memory = heapMemory();
  if (memory === null) throw new HeapError('weights: the cpu device memory is not available here');
  const storage = persistentF32(Math.ceil(bytes.byteLength / 4));
  const byteOffset = heapAddress(storage);
  if (byteOffset < 0) throw new HeapError(`weights: the cpu device memory has no room for ${bytes.byteLength} bytes`);
  new Uint8Array(memory.buffer, byteOffset, bytes.byteLength).set(bytes);
  return { memory, byteOffset, storage };
}

/** Byte address of `a` in `memory`, or −1 when it lives elsewhere. */
export function addressIn(memory: WasmMemory, a: ArrayBufferView): number {
  if (memory === heapMemory()) return heapAddress(a);
  return a.buffer === memory.buffer ? a.byteOffset : -1;
}

/** `bytes` of scratch in `memory` (64-byte aligned) until `release`; throws HeapError naming `op` where there is no room. */
export function scratch(memory: WasmMemory, bytes: number, op: string): { at: number; release(): void } {
  if (memory === heapMemory()) {
    const s = heapScratch(bytes + 64);
    if (s === null) throw new HeapError(`${op}: the cpu device memory has no room for ${bytes} bytes of scratch`);
    return { at: Math.ceil(heapAddress(s) / 64) * 64, release: () => heapRelease(s) };
  }
  const m = memories.get(memory);
  if (!m) throw new HeapError(`${op}: the weight's memory is neither the cpu device memory nor a weights memory`);
  const at = Math.ceil(m.top / 64) * 64;
  if (!m.reserve(at + bytes)) throw new HeapError(`${op}: a weights memory has no room for ${bytes} bytes of scratch`);
  return { at, release: () => undefined };
}
