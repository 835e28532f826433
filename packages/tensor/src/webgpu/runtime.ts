/**
 * The calling side of device `webgpu`: one `GPUDevice` owned by a device thread (`worker.ts`), and
 * on this thread the record of what it holds and what it should do.
 *
 * - Buffers are named by ids chosen here, so no command needs an answer. Freed buffers go to a
 *   pool by size class and are handed out again: a steady state creates none.
 * - Commands (uploads, dispatches, copies) are appended to a batch; the batch is posted without
 *   waiting when a read needs it, when its uploads pass `FLUSH_BYTES`, or on `flush()`. The device
 *   thread encodes a batch into one command encoder and submits it once.
 * - `read` is the only wait: it posts the batch with the reads and sleeps in `Atomics.wait` until
 *   the bytes are in shared memory.
 * - Pipelines are cached by their WGSL text (which carries every specialisation); kernel
 *   parameters are uniform blocks cached by content, so a decode step that repeats the shapes of
 *   the previous one sends neither.
 * - Memory: every buffer counts against the budget (`memoryBytes`); a request beyond it is a
 *   `WebgpuMemoryError` before anything is sent.
 */
import { isNode } from '../host';
import { deviceLostError, diagnoseNoAdapter, type WebgpuAdapterInfo } from './adapter';
import { zeroCounters, type WebgpuCounters } from './counters';
import { WebgpuKernelError, WebgpuMemoryError, WebgpuUnavailableError } from './errors';
import type { DeviceThread, StartDeviceThread } from './host';
import { startBrowserDeviceThread } from './host-browser';
import { startNodeDeviceThread } from './host-node';
import { CTL, OP, serveDevice, type Batch } from './worker';

/** A range of a device buffer, in bytes. */
export interface Binding {
  readonly id: number;
  readonly offset: number;
  readonly size: number;
}

/** A compute kernel: WGSL text (entry point `main`, bind group 0) and its bindings in order: 'u' uniform, 'r' read-only storage, 'w' storage. */
export interface Kernel {
  readonly name: string;
  readonly wgsl: string;
  readonly bindings: string;
}

/** Options of device `webgpu`. */
export interface WebgpuOptions {
  /**
   * Device memory budget in bytes (default: `APERTUS_WEBGPU_MEMORY` in the environment, else no
   * budget beyond what the device itself refuses). WebGPU does not tell how much memory a device
   * has; set this to fail early, with the sizes, instead of when the driver runs out.
   */
  memoryBytes?: number;
  /** Optional features to use where the adapter has them (default both). Leaving one out runs the plain kernels. */
  features?: readonly ('shader-f16' | 'subgroups')[];
  /** Limits below the adapter's (for tests of tensors split across bindings). */
  limits?: { readonly maxBufferSize?: number; readonly maxStorageBufferBindingSize?: number };
  /** Starts the device thread (default: the host's, Node's worker threads or a Web Worker). */
  start?: StartDeviceThread;
}

/** What the device offers, as the kernels need it. */
export interface DeviceLimits {
  readonly maxBufferSize: number;
  readonly maxStorageBufferBindingSize: number;
  readonly maxStorageBuffersPerShaderStage: number;
  readonly maxComputeWorkgroupStorageSize: number;
  readonly maxComputeInvocationsPerWorkgroup: number;
  readonly maxComputeWorkgroupsPerDimension: number;
}

const ERROR_BYTES = 8192;
/** Post the batch once its uploads reach this many bytes (bounds the memory a batch holds). */
const FLUSH_BYTES = 64 << 20;
/** Batches posted but not yet run, beyond which the caller waits (bounds the device thread's queue). */
const MAX_IN_FLIGHT = 4;
/** Longest wait for a read (SwiftShader runs a 131072-wide row in seconds; a GPU in microseconds). */
const READ_TIMEOUT_MS = 600_000;
/** Uniform blocks: 256 bytes each (the offset alignment), 256 to a buffer. */
const UNIFORM_BYTES = 256;
const UNIFORMS_PER_PAGE = 256;
const UNIFORM_PAGES = 16;

/** Size class of a pooled buffer: 256-byte multiples, then four classes per power of two; large buffers exact. */
function sizeClass(bytes: number): number {
  const b = Math.max(256, Math.ceil(bytes / 256) * 256);
  if (b > 64 << 20) return b;
  const p = 2 ** Math.floor(Math.log2(b));
  for (const f of [1, 1.25, 1.5, 1.75, 2]) if (p * f >= b) return Math.ceil((p * f) / 256) * 256;
  return b;
}

export class WebgpuRuntime {
  /** The adapter. */
  readonly adapter: WebgpuAdapterInfo;
  /** Features of the device ('shader-f16', 'subgroups', …). */
  readonly features: ReadonlySet<string>;
  /** Limits of the device. */
  readonly limits: DeviceLimits;
  /** The budget (bytes; Infinity when none). */
  readonly memoryBytes: number;
  private readonly thread: DeviceThread;
  private readonly ctl: Int32Array;
  private readonly errorText: SharedArrayBuffer;
  private readonly count: WebgpuCounters = zeroCounters();
  /** The uploads (what, padded bytes) while `traceUploads` runs. */
  private uploadLog: { what: string; bytes: number }[] | null = null;
  private cmds: unknown[][] = [];
  private kernels: string[] = [];
  private blob: Uint8Array = new Uint8Array(1 << 16);
  private blobUsed = 0;
  private posted = 0;
  private nextId = 1;
  private readonly sizes = new Map<number, number>();
  private readonly pool = new Map<number, number[]>();
  private readonly pipelines = new Map<string, number>();
  private readonly uniforms = new Map<string, Binding>();
  private readonly uniformPages: number[] = [];
  private pressureHandler: ((bytes: number) => void) | null = null;
  private dead: Error | null = null;

  private constructor(thread: DeviceThread, ctl: Int32Array, errorText: SharedArrayBuffer, ready: { adapter: WebgpuAdapterInfo; features: string[]; limits: DeviceLimits }, memoryBytes: number) {
    this.thread = thread;
    this.ctl = ctl;
    this.errorText = errorText;
    this.adapter = ready.adapter;
    this.features = new Set(ready.features);
    this.limits = ready.limits;
    this.memoryBytes = memoryBytes;
  }

  /** Start the device thread and get the device; throws `WebgpuUnavailableError` naming what is missing. */
  static async start(options: WebgpuOptions = {}): Promise<WebgpuRuntime> {
    const control = new SharedArrayBuffer(CTL.WORDS * 4);
    const error = new SharedArrayBuffer(ERROR_BYTES);
    const limitCaps: Record<string, number> = {};
    if (options.limits?.maxBufferSize !== undefined) limitCaps.maxBufferSize = options.limits.maxBufferSize;
    if (options.limits?.maxStorageBufferBindingSize !== undefined) limitCaps.maxStorageBufferBindingSize = options.limits.maxStorageBufferBindingSize;
    const start = options.start ?? (isNode ? startNodeDeviceThread : startBrowserDeviceThread);
    const thread = start(serveDevice.toString(), { control, error, features: [...(options.features ?? ['shader-f16', 'subgroups'])], limitCaps });
    const ready = await new Promise<{ adapter: WebgpuAdapterInfo; features: string[]; limits: DeviceLimits }>((resolve, reject) => {
      thread.onMessage((m) => {
        const msg = m as { t: string; message?: string; missing?: string } & Record<string, unknown>;
        if (msg.t === 'ready') resolve(msg as never);
        else if (msg.t === 'error') reject(diagnoseNoAdapter(msg.message ?? 'unknown', msg.missing === 'webgpu-package'));
      });
    }).catch((e: unknown) => { thread.terminate(); throw e; });
    const env = isNode ? Number(process.env.APERTUS_WEBGPU_MEMORY ?? NaN) : NaN;
    const memoryBytes = options.memoryBytes ?? (Number.isFinite(env) && env > 0 ? env : Infinity);
    return new WebgpuRuntime(thread, new Int32Array(control), error, ready, memoryBytes);
  }

  /** Called with the bytes wanted when the budget is reached, before a `WebgpuMemoryError`: drop what can be had again (host copies' device twins). */
  onPressure(handler: (bytes: number) => void): void {
    this.pressureHandler = handler;
  }

  /** Bytes a buffer of `bytes` takes from the budget (its size class). */
  static footprint(bytes: number): number {
    return sizeClass(bytes);
  }

  /** Throw `WebgpuMemoryError` unless `bytes` more fit the budget (dropping pooled buffers and evictable copies first). */
  reserve(bytes: number, what: string): void {
    this.check();
    if (this.count.bytesHeld + bytes <= this.memoryBytes) return;
    this.trimPool();
    if (this.count.bytesHeld + bytes > this.memoryBytes) this.pressureHandler?.(bytes);
    if (this.count.bytesHeld + bytes > this.memoryBytes) throw new WebgpuMemoryError(what, bytes, this.count.bytesHeld, this.memoryBytes);
  }

  /** A device buffer of at least `bytes` (from the pool when one of its class is free). */
  alloc(bytes: number, what: string): Binding {
    const size = sizeClass(bytes);
    if (size > this.limits.maxBufferSize) {
      throw new WebgpuMemoryError(what, size, this.count.bytesHeld, this.limits.maxBufferSize, 'is larger than the largest buffer the adapter allows (maxBufferSize)');
    }
    const free = this.pool.get(size);
    if (free !== undefined && free.length > 0) return { id: free.pop()!, offset: 0, size: bytes };
    this.reserve(size, what);
    const id = this.nextId++;
    this.sizes.set(id, size);
    this.cmds.push([OP.CREATE, id, size, 0]);
    this.count.buffersCreated++;
    this.count.bytesHeld += size;
    this.count.peakBytesHeld = Math.max(this.count.peakBytesHeld, this.count.bytesHeld);
    return { id, offset: 0, size: bytes };
  }

  /** Give buffer `id` back to the pool (commands recorded before this still see it as it was). */
  release(id: number): void {
    const size = this.sizes.get(id);
    if (size === undefined) return;
    let free = this.pool.get(size);
    if (free === undefined) { free = []; this.pool.set(size, free); }
    free.push(id);
  }

  /** The size (bytes) of buffer `id`. */
  bufferBytes(id: number): number {
    return this.sizes.get(id) ?? 0;
  }

  /** Destroy every pooled buffer. */
  trimPool(): void {
    for (const [size, ids] of this.pool) {
      for (const id of ids) {
        this.cmds.push([OP.DESTROY, id]);
        this.sizes.delete(id);
        this.count.bytesHeld -= size;
      }
    }
    this.pool.clear();
  }

  /** Upload `data` into buffer `id` at `byteOffset` (in order with the recorded work). */
  write(id: number, byteOffset: number, data: ArrayBufferView, uniform = false, what = uniform ? 'kernel parameters' : 'data'): void {
    const n = data.byteLength, padded = Math.ceil(n / 4) * 4;
    if (padded === 0) return;
    this.uploadLog?.push({ what, bytes: padded });
    if (this.blobUsed + padded > this.blob.length) {
      const grown = new Uint8Array(Math.max(2 * this.blob.length, this.blobUsed + padded));
      grown.set(this.blob.subarray(0, this.blobUsed));
      this.blob = grown;
    }
    this.blob.set(new Uint8Array(data.buffer, data.byteOffset, n), this.blobUsed);
    if (padded > n) this.blob.fill(0, this.blobUsed + n, this.blobUsed + padded);
    this.cmds.push([OP.WRITE, id, byteOffset, 0, this.blobUsed, padded]);
    this.blobUsed += padded;
    if (this.blobUsed >= FLUSH_BYTES) this.flush();
    this.count.uploads++;
    this.count.uploadBytes += padded;
    if (uniform) this.count.uniformBytes += padded;
  }

  /** The pipeline id of `k`, building it (once per WGSL text) when new. */
  pipeline(k: Kernel): number {
    let pid = this.pipelines.get(k.wgsl);
    if (pid === undefined) {
      pid = this.pipelines.size + 1;
      this.pipelines.set(k.wgsl, pid);
      this.cmds.push([OP.PIPELINE, pid, k.name, k.wgsl, k.bindings]);
      this.count.pipelineBuilds++;
    }
    return pid;
  }

  /** Number of distinct pipelines built so far. */
  get pipelineCount(): number {
    return this.pipelines.size;
  }

  /** A uniform block holding `words` (at most 64 u32), sent once per distinct content. */
  uniform(words: Uint32Array, what = 'kernel parameters'): Binding {
    let key = '';
    for (let i = 0; i < words.length; i++) key += words[i]!.toString(36) + ',';
    const hit = this.uniforms.get(key);
    if (hit !== undefined) {
      this.uniforms.delete(key);
      this.uniforms.set(key, hit);
      return hit;
    }
    const size = Math.max(16, Math.ceil(words.byteLength / 16) * 16);
    let slot: Binding;
    const used = this.uniforms.size;
    if (used < UNIFORM_PAGES * UNIFORMS_PER_PAGE) {
      const page = Math.floor(used / UNIFORMS_PER_PAGE);
      if (page === this.uniformPages.length) {
        const id = this.nextId++;
        this.cmds.push([OP.CREATE, id, UNIFORM_BYTES * UNIFORMS_PER_PAGE, 1]);
        this.count.buffersCreated++;
        this.uniformPages.push(id);
      }
      slot = { id: this.uniformPages[page]!, offset: (used % UNIFORMS_PER_PAGE) * UNIFORM_BYTES, size };
    } else {
      // Every slot taken: the least recently used one gets the new content.
      const [oldKey, old] = this.uniforms.entries().next().value as [string, Binding];
      this.uniforms.delete(oldKey);
      slot = { id: old.id, offset: old.offset, size };
    }
    const padded = new Uint32Array(size / 4);
    padded.set(words);
    this.write(slot.id, slot.offset, padded, true, what);
    this.uniforms.set(key, slot);
    return slot;
  }

  /** Record a dispatch of `k` over `groups` workgroups with `params` (a uniform block, binding 0, when the kernel's first binding is 'u') and `buffers`. */
  dispatch(k: Kernel, params: Uint32Array | null, buffers: readonly Binding[], groups: readonly [number, number, number]): void {
    this.check();
    const pid = this.pipeline(k);
    const all = params === null ? buffers : [this.uniform(params, `${k.name} parameters`), ...buffers];
    if (all.length !== k.bindings.length) throw new WebgpuKernelError(k.name, `${all.length} bindings for a kernel that declares ${k.bindings.length}`);
    const max = this.limits.maxComputeWorkgroupsPerDimension;
    if (groups.some((g) => g > max)) throw new WebgpuKernelError(k.name, `${groups.join(' × ')} workgroups exceed ${max} per dimension`);
    if (groups[0] * groups[1] * groups[2] === 0) return;
    const c: unknown[] = [OP.DISPATCH, pid, groups[0], groups[1], groups[2]];
    for (const b of all) c.push(b.id, b.offset, Math.ceil(b.size / 4) * 4);
    this.cmds.push(c);
    this.kernels.push(k.name);
    this.count.dispatches++;
  }

  /** Record a device-side copy of `bytes` (a multiple of 4, offsets too). */
  copy(src: number, srcOffset: number, dst: number, dstOffset: number, bytes: number): void {
    if (bytes === 0) return;
    this.cmds.push([OP.COPY, src, srcOffset, dst, dstOffset, bytes]);
    this.count.copies++;
  }

  /** Record zeroing `bytes` (a multiple of 4) of buffer `id` from `offset`. */
  clear(id: number, offset: number, bytes: number): void {
    if (bytes === 0) return;
    this.cmds.push([OP.CLEAR, id, offset, bytes]);
    this.count.copies++;
  }

  /** Post the recorded batch (no wait, except when too many are in flight). */
  flush(): void {
    this.check();
    if (this.cmds.length === 0) return;
    this.post(null, null);
  }

  /**
   * Read each range into its host view (one wait for all of them): the recorded work first, then
   * the copies to a staging buffer, then the values.
   */
  read(items: readonly { readonly from: Binding; readonly into: ArrayBufferView }[]): void {
    this.check();
    let total = 0;
    const reads: number[][] = [];
    for (const it of items) {
      const bytes = Math.ceil(it.into.byteLength / 4) * 4;
      if (bytes === 0) continue;
      reads.push([it.from.id, it.from.offset, bytes, total]);
      total += bytes;
    }
    if (reads.length === 0) return;
    const sab = new SharedArrayBuffer(total);
    Atomics.store(this.ctl, CTL.READ, 0);
    this.post(reads, sab);
    if (Atomics.wait(this.ctl, CTL.READ, 0, READ_TIMEOUT_MS) === 'timed-out') {
      throw new WebgpuKernelError('read', `the device thread did not answer within ${READ_TIMEOUT_MS / 1000} s`);
    }
    if (Atomics.load(this.ctl, CTL.READ) !== 1) throw this.failure();
    const all = new Uint8Array(sab);
    let at = 0;
    for (const it of items) {
      const n = it.into.byteLength;
      if (n === 0) continue;
      new Uint8Array(it.into.buffer, it.into.byteOffset, n).set(all.subarray(at, at + n));
      at += Math.ceil(n / 4) * 4;
    }
    this.count.readbacks++;
    this.count.readbackBytes += total;
  }

  /** The counters so far (a copy; submits as reported by the device thread). */
  counters(): WebgpuCounters {
    return { ...this.count, submits: Atomics.load(this.ctl, CTL.SUBMITS) };
  }

  /** Run `f` and list its uploads in order, each named by what went up (budget tests say which they expect). */
  traceUploads<T>(f: () => T): { readonly result: T; readonly uploads: readonly { readonly what: string; readonly bytes: number }[] } {
    const outer = this.uploadLog, log: { what: string; bytes: number }[] = [];
    this.uploadLog = log;
    try {
      const result = f();
      return { result, uploads: log };
    } finally {
      outer?.push(...log);
      this.uploadLog = outer;
    }
  }

  /** Destroy the device (tests of a lost device): later work fails with `missing: 'device-lost'`. */
  loseDevice(): void {
    this.flush();
    this.thread.post({ t: 'destroy' });
  }

  /** Whether the device is gone (lost, or this runtime disposed). */
  get lost(): boolean {
    return this.dead !== null || Atomics.load(this.ctl, CTL.LOST) === 1;
  }

  /** Stop the device thread (its device and buffers go with it). */
  dispose(): void {
    if (this.dead !== null) return;
    this.dead = new WebgpuUnavailableError('device-lost', 'the webgpu device was released', "select it again with useDevice('webgpu')");
    this.thread.terminate();
  }

  private post(reads: number[][] | null, into: SharedArrayBuffer | null): void {
    // Wait while too many batches are queued ahead of this one.
    for (;;) {
      const done = Atomics.load(this.ctl, CTL.BATCHES);
      if (this.posted - done < MAX_IN_FLIGHT) break;
      Atomics.wait(this.ctl, CTL.BATCHES, done, 1000);
      this.check();
    }
    // The blob goes to the device thread (transferred); a small one is copied out instead.
    let blob: ArrayBuffer;
    if (2 * this.blobUsed > this.blob.length) {
      blob = this.blob.buffer as ArrayBuffer;
      this.blob = new Uint8Array(1 << 16);
    } else {
      blob = this.blob.slice(0, this.blobUsed).buffer;
    }
    const batch: Batch = { cmds: this.cmds, blobs: [blob], reads, into, kernels: this.kernels };
    this.thread.post({ t: 'batch', batch }, [blob]);
    this.posted++;
    this.count.batches++;
    this.cmds = [];
    this.kernels = [];
    this.blobUsed = 0;
  }

  /** Throw the device's error if it has one (lost, a failed batch). */
  check(): void {
    if (this.dead !== null) throw this.dead;
    if (Atomics.load(this.ctl, CTL.STICKY) !== 0 || Atomics.load(this.ctl, CTL.LOST) !== 0) {
      this.dead = this.failure();
      throw this.dead;
    }
  }

  private failure(): Error {
    const n = Atomics.load(this.ctl, CTL.ERROR_LENGTH);
    const text = new TextDecoder().decode(new Uint8Array(this.errorText, 0, n).slice());
    if (Atomics.load(this.ctl, CTL.LOST) !== 0 || /device (was )?lost|destroyed/i.test(text)) return deviceLostError(text);
    if (/out of (device )?memory/i.test(text)) return new WebgpuMemoryError('a batch of kernels', 0, this.count.bytesHeld, this.memoryBytes, `ran the device out of memory (${text}) before reaching the budget`);
    return new WebgpuKernelError(/kernel '([^']+)'/.exec(text)?.[1] ?? 'batch', text);
  }
}
