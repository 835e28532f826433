/**
 * The `webgpu` kernels behind a synchronous KernelSet: a worker owns gpu.js in `webgpu` mode;
 * the calling thread drives the op generators as usual and, for each kernel call, posts it to the
 * worker and sleeps in `Atomics.wait` until the worker has run it on the GPU (and, when asked,
 * written its output into shared memory). The kernel texts and settings are the ones every other
 * mode uses; the worker checks, like `GpujsRuntime`, that each kernel really ran in `webgpu`.
 *
 * This file is the bridge's protocol, the same on every host: the worker's serving loop
 * ({@link SERVE_SOURCE}) and the calling side ({@link WebgpuWorkerRuntime}). How a worker is
 * started and how it gets gpu.js and `navigator.gpu` is the host's part: `webgpu-host-node.ts`
 * (a `worker_threads` Worker, Dawn from the `webgpu` package) and `webgpu-host-browser.ts` (a
 * Web Worker, the browser's own `navigator.gpu`).
 */
import { Input } from 'gpu.js';
import { isNode } from '../../host';
import type { Residency } from '../../residency';
import { GpujsBackendError } from './errors';
import { HostTable, type KernelCall, type KernelOp, drive, kernelSettings, outputCells } from './runtime';
import { DeviceCopies } from './webgpu-copies';
import { deviceLostError, isDeviceLost } from './webgpu';
import { startBrowserWebgpuWorker } from './webgpu-host-browser';
import { startNodeWebgpuWorker } from './webgpu-host-node';

/** Control words: the call's state (0 running, 1 done, 2 failed) and the error text's length. */
const CTL_STATE = 0;
const CTL_ERROR_LENGTH = 1;
const ERROR_BYTES = 4096;
/**
 * Host tables (`HostTable`: RoPE's cos/sin, the packed weights of `@apertus/gguf`'s quantized
 * matrices) kept on the device, by key: at most this many, and this many bytes; the least
 * recently used go first, never those of the call at hand.
 */
const TABLE_LIMIT = 1024;
const TABLE_BYTES = 1 << 30;
/** Longest we wait for one kernel call (SwiftShader compiles and runs a 131072-wide row in seconds). */
const CALL_TIMEOUT_MS = 300_000;
/** Compiled kernels kept alive in the worker (as `GpujsRuntime`). */
const CACHE_LIMIT = 192;

/** What every bridge worker is started with (a host adds its own fields, e.g. where gpu.js is). */
export interface BridgeData {
  /** Two Int32 control words (state, error length). */
  control: SharedArrayBuffer;
  /** The error text of a failed call (UTF-8). */
  error: SharedArrayBuffer;
}

/** A started bridge worker, as the calling side sees it. */
export interface BridgeWorker {
  postMessage(message: unknown): void;
  terminate(): void;
}

/**
 * Starts a worker that runs `serve` — the source of a function
 * `(gpujs: Promise<gpu.js module>, workerData: BridgeData, listen: (handler) => void)` — after the
 * host's prelude has made `navigator.gpu` exist and loaded gpu.js.
 */
export type StartBridgeWorker = (serve: string, data: BridgeData) => BridgeWorker;

/**
 * The protocol, independent of the host that runs it: `gpujs` is the
 * gpu.js module, `gpu` a `GPU` in `webgpu` mode. The worker keeps GPU buffers in a table by id
 * (ids are chosen by the caller, so no call needs an answer to name its buffers):
 * - `{ type: 'run', key, source, settings, args, id, read, uploads }`: create each upload
 *   (`{ id, data }`, a host array copied into a new buffer) in the table, run the kernel with
 *   every `{ buffer: id, dims }` argument bound to that buffer read as `dims` (x fastest), keep
 *   the output under `id`, and, when `read`, answer with its values.
 * - `{ type: 'read', id, result }`: answer with the values of buffer `id`.
 * - `{ type: 'free', ids }`: release those buffers (no answer).
 * Kernels are built with `pipeline: true, immutable: true`, so every output is a buffer of its own
 * that stays on the GPU until freed.
 */
const PROTOCOL_SOURCE = `
const kernels = new Map();
const table = new Map();
let context = null;
function leaf(v, end) {
  while (Array.isArray(v)) v = v[end ? v.length - 1 : 0];
  return v;
}
function upload(gpujs, id, data) {
  // A fresh array: Dawn's writeBuffer takes no view of a SharedArrayBuffer (the cpu device's
  // memory), and ids (Int32Array) are read as floats, as gpu.js does for its own uploads.
  const flat = new Float32Array(data.length);
  flat.set(data);
  const buffer = context.device.createBuffer({ size: Math.max(4, flat.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
  context.device.queue.writeBuffer(buffer, 0, flat);
  table.set(id, new gpujs.WebGPUBufferResult({ buffer, output: [flat.length], componentCount: 1, context, kernel: null }));
}
function bind(gpujs, a) {
  const h = table.get(a.buffer);
  if (h === undefined) throw new Error('no device buffer ' + a.buffer);
  return new gpujs.WebGPUBufferResult({ buffer: h.buffer, output: a.dims, componentCount: 1, context: h.context, kernel: h.kernel });
}
function kernelFor(gpu, m) {
  let k = kernels.get(m.key);
  if (k === undefined) {
    k = gpu.createKernel(m.source, Object.assign({}, m.settings, { pipeline: true, immutable: true }));
    kernels.set(m.key, k);
    if (kernels.size > ${CACHE_LIMIT}) {
      const oldest = kernels.keys().next().value;
      try { kernels.get(oldest).destroy(); } catch {}
      kernels.delete(oldest);
    }
  } else {
    kernels.delete(m.key);
    kernels.set(m.key, k);
  }
  return k;
}
async function start(gpujs, gpu) {
  const probe = gpu.createKernel('function () { return 0; }', { output: [1], pipeline: true, immutable: true });
  const r = await probe();
  context = r.context;
  r.delete();
  probe.destroy();
}
async function readBuffer(h, out) {
  const device = context.device;
  const staging = device.createBuffer({ size: Math.max(4, out.byteLength), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  try {
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(h.buffer, 0, staging, 0, out.byteLength);
    device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ, 0, out.byteLength);
    out.set(new Float32Array(staging.getMappedRange(0, out.byteLength)));
    staging.unmap();
  } finally {
    staging.destroy();
  }
}
async function serve(gpujs, gpu, m, out) {
  if (m.type === 'read') {
    const h = table.get(m.id);
    if (h === undefined) throw new Error('no device buffer ' + m.id);
    await readBuffer(h, out);
    return;
  }
  if (m.type === 'free') {
    for (const id of m.ids) {
      const h = table.get(id);
      if (h !== undefined) { h.delete(); table.delete(id); }
    }
    return;
  }
  for (const u of m.uploads) upload(gpujs, u.id, u.data);
  const k = kernelFor(gpu, m);
  const views = [];
  const args = m.args.map((a) => {
    if (a !== null && typeof a === 'object' && typeof a.buffer === 'number' && Array.isArray(a.dims)) {
      const v = bind(gpujs, a);
      views.push(v);
      return v;
    }
    return a;
  });
  let res;
  try {
    res = await k(...args);
  } catch (e) {
    if (!k.kernel.built) kernels.delete(m.key);
    throw e;
  } finally {
    for (const v of views) v.delete();
  }
  const ran = k.kernel.constructor.mode;
  if (ran !== 'webgpu' || k.kernel.fallbackReason) {
    res.delete();
    throw new Error('gpu.js fell back silently to ' + ran + (k.kernel.fallbackReason ? ': ' + k.kernel.fallbackReason : ''));
  }
  table.set(m.id, res);
  if (!m.read) return;
  const values = await res.toArray();
  const first = leaf(values, false);
  const last = leaf(values, true);
  if (!(first instanceof Float32Array) || first.buffer !== last.buffer || last.byteOffset + last.byteLength - first.byteOffset !== out.byteLength) {
    throw new Error('gpu.js returned an output that is not ' + out.length + ' contiguous floats');
  }
  out.set(new Float32Array(first.buffer, first.byteOffset, out.length));
}
`;

/**
 * The worker's side of the bridge: the protocol above, served one message at a time; a waiting
 * caller is answered through the shared control words (`Atomics.notify`). The source of a
 * function `(gpujs: Promise<gpu.js module>, workerData: BridgeData, listen: (handler) => void)`
 * that a host runs after its prelude has made `navigator.gpu` exist and started loading gpu.js.
 */
export const SERVE_SOURCE = `(gpujsLoaded, workerData, listen) => {
const ctl = new Int32Array(workerData.control);
const errorBytes = new Uint8Array(workerData.error);
${PROTOCOL_SOURCE}
let gpujs;
let gpu;
const ready = (async () => {
  gpujs = await gpujsLoaded;
  gpu = new gpujs.GPU({ mode: 'webgpu' });
  if (!gpu.Kernel || gpu.Kernel.mode !== 'webgpu') throw new Error('gpu.js chose ' + (gpu.Kernel && gpu.Kernel.mode) + ' instead of webgpu');
  await start(gpujs, gpu);
})();
ready.catch(() => undefined);
function finish(state, text) {
  if (text !== undefined) {
    const bytes = new TextEncoder().encode(String(text)).subarray(0, errorBytes.length);
    errorBytes.set(bytes);
    Atomics.store(ctl, ${CTL_ERROR_LENGTH}, bytes.length);
  }
  Atomics.store(ctl, ${CTL_STATE}, state);
  Atomics.notify(ctl, ${CTL_STATE});
}
let queue = ready;
listen((m) => {
  queue = queue.then(() => serve(gpujs, gpu, m, m.result ? new Float32Array(m.result) : null)).then(
    () => { if (m.type !== 'free') finish(1); },
    (e) => { if (m.type !== 'free') finish(2, e && e.message ? e.message : (e && e.constructor ? e.constructor.name + ' ' : '') + String(e) + (e && e.stack ? ' ' + e.stack : '')); },
  );
});
}`;

/**
 * What the webgpu kernels moved between host memory and the GPU so far. Within one op, kernel
 * outputs that later calls read stay on the GPU and a host array is uploaded once (until the op
 * overwrites it); every op's inputs come from the host and its outputs go back to the host.
 * Scalars (sizes, eps, offsets) are not counted.
 */
export interface WebgpuTransfers {
  /** Kernel launches. */
  calls: number;
  /** Host arrays copied to the GPU. */
  uploads: number;
  /** Bytes of those arrays. */
  uploadBytes: number;
  /** Kernel outputs copied back to the host. */
  readbacks: number;
  /** Bytes of those outputs. */
  readbackBytes: number;
}

/** A host array uploaded during the current op, and the buffer that holds it. */
interface Upload {
  readonly view: ArrayBufferView;
  readonly id: number;
}

/** The device buffers of one op: uploads still equal to their host arrays, kernel outputs by the array the op got back, and every id to free. */
interface OpBuffers {
  uploads: Upload[];
  readonly outputs: Map<object, number>;
  readonly ids: number[];
}

/** Whether two views cover overlapping bytes of the same buffer. */
function overlaps(a: ArrayBufferView, b: ArrayBufferView): boolean {
  return a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength;
}

/** A host table kept on the device: the inputs it was built from (copies) and its buffer. */
interface KeptTable {
  readonly inputs: Float64Array[];
  readonly id: number;
  readonly bytes: number;
}

function sameInputs(kept: readonly Float64Array[], now: readonly ArrayLike<number>[]): boolean {
  if (kept.length !== now.length) return false;
  for (let i = 0; i < now.length; i++) {
    const a = kept[i]!, b = now[i]!;
    if (a.length !== b.length) return false;
    for (let k = 0; k < b.length; k++) if (!Object.is(a[k], b[k])) return false;
  }
  return true;
}

/** A typed-array view of a larger non-shared buffer is copied, so posting it does not clone the whole buffer. */
function compact(v: ArrayBufferView): ArrayBufferView {
  if (v.buffer instanceof SharedArrayBuffer || (v.byteOffset === 0 && v.byteLength === v.buffer.byteLength)) return v;
  return (v as Float32Array).slice();
}

/**
 * Runs kernel calls synchronously on a worker (the host's) that owns gpu.js's `webgpu` mode, and keeps
 * tensor storage there: an op output that fills its array stays in a GPU buffer (`DeviceCopies`)
 * until the host reads it (`toHost`, the `Residency` of device `webgpu`).
 */
export class WebgpuWorkerRuntime implements Residency {
  readonly mode = 'webgpu';
  readonly device = 'webgpu';
  private readonly counted: WebgpuTransfers = { calls: 0, uploads: 0, uploadBytes: 0, readbacks: 0, readbackBytes: 0 };
  private readonly worker: BridgeWorker;
  private readonly control = new Int32Array(new SharedArrayBuffer(8));
  private readonly error = new SharedArrayBuffer(ERROR_BYTES);
  private readonly built = new Map<string, string>();
  private readonly tables = new Map<string, KeptTable>();
  private tableBytes = 0;
  private nextId = 1;
  private disposed = false;
  private readonly copies = new DeviceCopies({
    read: (id, into) => this.read(id, into),
    free: (ids) => this.free(ids),
  });

  /**
   * @param resident keep op outputs that fill their arrays on the GPU (for the tensor ops, with
   * this runtime installed as their `Residency`); otherwise every output is written into the
   * caller's array, as in every other mode.
   * @param start starts the worker (by default the host's: Node's worker threads, else a Web Worker).
   */
  constructor(private readonly resident: boolean, start: StartBridgeWorker = isNode ? startNodeWebgpuWorker : startBrowserWebgpuWorker) {
    this.worker = start(SERVE_SOURCE, { control: this.control.buffer as SharedArrayBuffer, error: this.error });
  }

  /** Run one op (blocks the calling thread); the GPU buffers it used are released when it returns. */
  runOp(op: KernelOp): void {
    const bufs: OpBuffers = { uploads: [], outputs: new Map(), ids: [] };
    try {
      drive(op, (c) => this.run(c, bufs));
    } finally {
      if (bufs.ids.length > 0) this.free(bufs.ids);
    }
  }

  private run(c: KernelCall, bufs: OpBuffers): Float32Array {
    if (this.disposed) throw this.fail(c.name, 'the kernel set was disposed');
    const spec = c.spec();
    const cells = outputCells(spec) * (spec.components ?? 1);
    // An output that fills the array it goes to stays on the GPU; one that fills part of it is
    // read back into the host copy, which must then be current.
    const w = c.writes;
    const resident = this.resident && w !== undefined && (c.at ?? 0) === 0 && w.length === cells;
    if (w !== undefined && !resident) this.copies.toHost(w);
    const read = c.read !== false && !resident;
    const result = read ? new SharedArrayBuffer(cells * 4) : null;
    const key = `${c.name}|${c.key}`;
    const uploads: { id: number; data: ArrayBufferView }[] = [];
    const bound = (v: unknown, dims: readonly number[]): unknown => {
      const out = bufs.outputs.get(v as object);
      if (out !== undefined) return { buffer: out, dims: [...dims] };
      const view = v as ArrayBufferView;
      const copy = this.copies.exact(view);
      if (copy !== undefined) return { buffer: copy, dims: [...dims] };
      this.copies.toHost(view);
      let up = bufs.uploads.find((u) => u.view.buffer === view.buffer && u.view.byteOffset === view.byteOffset
        && u.view.byteLength === view.byteLength && u.view.constructor === view.constructor);
      if (up === undefined) {
        up = { view, id: this.nextId++ };
        bufs.uploads.push(up);
        bufs.ids.push(up.id);
        uploads.push({ id: up.id, data: compact(view) });
      }
      return { buffer: up.id, dims: [...dims] };
    };
    const usedTables = new Set<string>();
    const table = (t: HostTable): unknown => {
      let kept = this.tables.get(t.key);
      this.tables.delete(t.key);
      if (kept === undefined || !sameInputs(kept.inputs, t.inputs)) {
        if (kept !== undefined) { this.free([kept.id]); this.tableBytes -= kept.bytes; }
        const data = t.make();
        kept = { inputs: t.inputs.map((v) => Float64Array.from(v)), id: this.nextId++, bytes: data.byteLength };
        uploads.push({ id: kept.id, data });
        this.tableBytes += kept.bytes;
      }
      this.tables.set(t.key, kept);
      usedTables.add(t.key);
      return { buffer: kept.id, dims: [...t.dims] };
    };
    const args = c.args.map((a) => {
      if (a instanceof HostTable) return table(a);
      if (a instanceof Input) return bound(a.value, a.size);
      if (ArrayBuffer.isView(a) || bufs.outputs.has(a as object)) return bound(a, [(a as { length: number }).length]);
      return a;
    });
    if (usedTables.size > 0) this.evictTables(usedTables);
    const id = this.nextId++;
    if (!resident) bufs.ids.push(id);
    this.call(c.name, { type: 'run', key, source: spec.source, settings: kernelSettings(spec), args, id, read, uploads, result });
    this.counted.calls++;
    for (const u of uploads) { this.counted.uploads++; this.counted.uploadBytes += u.data.byteLength; }
    if (read) { this.counted.readbacks++; this.counted.readbackBytes += result!.byteLength; }
    this.built.delete(key);
    this.built.set(key, 'webgpu');
    while (this.built.size > CACHE_LIMIT) this.built.delete(this.built.keys().next().value as string);
    // The op is about to overwrite `writes` (or has, on the GPU): its uploaded copies are stale from now on.
    if (w !== undefined) bufs.uploads = bufs.uploads.filter((u) => !overlaps(u.view, w));
    if (resident) this.copies.replace(w, id);
    // An output left on the GPU is represented by a stand-in with its length only (a `DeviceArray`).
    const out = read ? new Float32Array(result!) : Object.freeze({ length: cells });
    bufs.outputs.set(out, id);
    return out as Float32Array;
  }

  /** Free the least recently used host tables beyond TABLE_LIMIT tables or TABLE_BYTES bytes, never those of the call at hand. */
  private evictTables(inUse: ReadonlySet<string>): void {
    for (const [key, t] of this.tables) {
      if (this.tables.size <= TABLE_LIMIT && this.tableBytes <= TABLE_BYTES) return;
      if (inUse.has(key)) continue;
      this.tables.delete(key);
      this.tableBytes -= t.bytes;
      this.free([t.id]);
    }
  }

  /** Post one message and wait for the worker's answer (blocks the calling thread). */
  private call(name: string, message: Record<string, unknown>): void {
    Atomics.store(this.control, CTL_STATE, 0);
    this.worker.postMessage(message);
    if (Atomics.wait(this.control, CTL_STATE, 0, CALL_TIMEOUT_MS) === 'timed-out') {
      throw this.fail(name, `the webgpu worker did not answer within ${CALL_TIMEOUT_MS / 1000} s`);
    }
    if (Atomics.load(this.control, CTL_STATE) !== 1) {
      const n = Atomics.load(this.control, CTL_ERROR_LENGTH);
      const text = new TextDecoder().decode(new Uint8Array(this.error, 0, n).slice());
      if (isDeviceLost(text)) throw deviceLostError(new Error(text));
      throw this.fail(name, `gpu.js failed: ${text}`);
    }
  }

  /** Release worker buffers (no answer awaited). */
  private free(ids: number[]): void {
    if (!this.disposed) this.worker.postMessage({ type: 'free', ids });
  }

  /** Read buffer `id` into `into` (a readback). */
  private read(id: number, into: Float32Array): void {
    if (this.disposed) throw this.fail('read', 'the kernel set was disposed while tensors were on the GPU');
    const result = new SharedArrayBuffer(into.byteLength);
    this.call('read', { type: 'read', id, result });
    into.set(new Float32Array(result));
    this.counted.readbacks++;
    this.counted.readbackBytes += into.byteLength;
  }

  /** Make the host copy of the storage under `a` current (reading it back if the GPU holds newer values). */
  toHost(a: ArrayBufferView): void {
    this.copies.toHost(a);
  }

  /** Memory of the cpu device was recycled: free the GPU buffers of what it held. */
  recycled(addr: number, bytes: number): void {
    this.copies.recycled(addr, bytes);
  }

  /** The transfers of every kernel call so far (a copy). */
  transfers(): WebgpuTransfers {
    return { ...this.counted };
  }

  /** The kernels built so far (each verified in the worker to have run in `webgpu`). */
  builtKernels(): Record<string, string> {
    return Object.fromEntries(this.built);
  }

  /** Stop the worker (its device and kernels go with it). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.worker.terminate();
  }

  private fail(kernel: string, reason: string): GpujsBackendError {
    return new GpujsBackendError({ requestedMode: 'webgpu', actualMode: 'webgpu', kernel, reason });
  }
}
