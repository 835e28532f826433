/**
 * The `webgpu` kernels behind a synchronous KernelSet: a worker owns gpu.js in `webgpu` mode;
 * the calling thread drives the op generators as usual and, for each kernel call, posts it to the
 * worker and sleeps in `Atomics.wait` until the worker has run it on the GPU and written its
 * output into shared memory. The kernel texts and settings are the ones every other mode uses;
 * the worker checks, like `GpujsRuntime`, that each kernel really ran in `webgpu`.
 *
 * This file is the bridge's protocol, the same on every host: the worker's serving loop
 * ({@link SERVE_SOURCE}) and the calling side ({@link WebgpuWorkerRuntime}). How a worker is
 * started and how it gets gpu.js and `navigator.gpu` is the host's part: `webgpu-host-node.ts`
 * (a `worker_threads` Worker, Dawn from the `webgpu` package) and `webgpu-host-browser.ts` (a
 * Web Worker, the browser's own `navigator.gpu`).
 */
import { Input } from 'gpu.js';
import { isNode } from '../../host';
import { GpujsBackendError } from './errors';
import { type KernelCall, kernelSettings, outputCells } from './runtime';
import { deviceLostError, isDeviceLost } from './webgpu';
import { startBrowserWebgpuWorker } from './webgpu-host-browser';
import { startNodeWebgpuWorker } from './webgpu-host-node';

/** Control words: the call's state (0 running, 1 done, 2 failed) and the error text's length. */
const CTL_STATE = 0;
const CTL_ERROR_LENGTH = 1;
const ERROR_BYTES = 4096;
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
 * The worker's side of the protocol: build (and cache) each posted kernel with gpu.js in
 * `webgpu` mode, run it, check it ran in `webgpu`, copy its output into the posted shared
 * buffer, then set the state word and wake the caller.
 */
export const SERVE_SOURCE = `(gpujsLoaded, workerData, listen) => {
const ctl = new Int32Array(workerData.control);
const errorBytes = new Uint8Array(workerData.error);
const kernels = new Map();
let gpujs;
let gpu;
const ready = (async () => {
  gpujs = await gpujsLoaded;
  gpu = new gpujs.GPU({ mode: 'webgpu' });
  if (!gpu.Kernel || gpu.Kernel.mode !== 'webgpu') throw new Error('gpu.js chose ' + (gpu.Kernel && gpu.Kernel.mode) + ' instead of webgpu');
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
function leaf(v, end) {
  while (Array.isArray(v)) v = v[end ? v.length - 1 : 0];
  return v;
}
listen(async (m) => {
  let k;
  try {
    await ready;
    k = kernels.get(m.key);
    if (k === undefined) {
      k = gpu.createKernel(m.source, m.settings);
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
    const args = m.args.map((a) => (a !== null && typeof a === 'object' && a.input === true ? gpujs.input(a.value, a.size) : a));
    const res = await k(...args);
    const ran = k.kernel.constructor.mode;
    if (ran !== 'webgpu' || k.kernel.fallbackReason) {
      throw new Error('gpu.js fell back silently to ' + ran + (k.kernel.fallbackReason ? ': ' + k.kernel.fallbackReason : ''));
    }
    const out = new Float32Array(m.result);
    const first = leaf(res, false);
    const last = leaf(res, true);
    if (!(first instanceof Float32Array) || first.buffer !== last.buffer || last.byteOffset + last.byteLength - first.byteOffset !== out.byteLength) {
      throw new Error('gpu.js returned an output that is not ' + out.length + ' contiguous floats');
    }
    out.set(new Float32Array(first.buffer, first.byteOffset, out.length));
    finish(1);
  } catch (e) {
    if (k !== undefined && !k.kernel.built) kernels.delete(m.key);
    finish(2, e && e.message ? e.message : (e && e.constructor ? e.constructor.name + ' ' : '') + String(e) + (e && e.stack ? ' ' + e.stack : ''));
  }
});
}`;

/** A kernel argument as posted to the worker: gpu.js `Input`s as plain objects, views compacted. */
function wire(a: unknown): unknown {
  if (a instanceof Input) return { input: true, value: compact(a.value as unknown as ArrayBufferView), size: a.size };
  if (ArrayBuffer.isView(a)) return compact(a);
  return a;
}

/** A typed-array view of a larger buffer is copied, so posting it does not clone the whole buffer. */
function compact(v: ArrayBufferView): ArrayBufferView {
  if (v.buffer instanceof SharedArrayBuffer || (v.byteOffset === 0 && v.byteLength === v.buffer.byteLength)) return v;
  return (v as Float32Array).slice();
}

/**
 * What the kernel calls so far moved between JavaScript memory and the GPU: every call is one
 * round trip (its array arguments uploaded, its output read back), as tensors live in JavaScript
 * memory. Scalars (sizes, eps, offsets) are not counted.
 */
export interface WebgpuTransfers {
  /** Kernel calls, each a round trip. */
  calls: number;
  /** Bytes of array arguments uploaded. */
  uploadBytes: number;
  /** Bytes of outputs read back. */
  readbackBytes: number;
}

/** Bytes of the array data in a kernel argument (a typed array or a gpu.js `Input`), else 0. */
function argBytes(a: unknown): number {
  const v = a instanceof Input ? (a.value as unknown as ArrayBufferView) : a;
  return ArrayBuffer.isView(v) ? v.byteLength : 0;
}

/** Runs kernel calls synchronously on a worker (the host's) that owns gpu.js's `webgpu` mode. */
export class WebgpuWorkerRuntime {
  readonly mode = 'webgpu';
  private readonly counted: WebgpuTransfers = { calls: 0, uploadBytes: 0, readbackBytes: 0 };
  private readonly worker: BridgeWorker;
  private readonly control = new Int32Array(new SharedArrayBuffer(8));
  private readonly error = new SharedArrayBuffer(ERROR_BYTES);
  private readonly built = new Map<string, string>();
  private disposed = false;

  /** Start the worker on `start` (by default the host's: Node's worker threads, else a Web Worker). */
  constructor(start: StartBridgeWorker = isNode ? startNodeWebgpuWorker : startBrowserWebgpuWorker) {
    this.worker = start(SERVE_SOURCE, { control: this.control.buffer as SharedArrayBuffer, error: this.error });
  }

  /** Run one kernel call on the GPU and return its flat output (blocks the calling thread). */
  run(c: KernelCall): Float32Array {
    if (this.disposed) throw this.fail(c.name, 'the kernel set was disposed');
    const spec = c.spec();
    const result = new SharedArrayBuffer(outputCells(spec) * (spec.components ?? 1) * 4);
    const key = `${c.name}|${c.key}`;
    Atomics.store(this.control, CTL_STATE, 0);
    this.worker.postMessage({ key, source: spec.source, settings: kernelSettings(spec), args: c.args.map(wire), result });
    if (Atomics.wait(this.control, CTL_STATE, 0, CALL_TIMEOUT_MS) === 'timed-out') {
      throw this.fail(c.name, `the webgpu worker did not answer within ${CALL_TIMEOUT_MS / 1000} s`);
    }
    if (Atomics.load(this.control, CTL_STATE) !== 1) {
      const n = Atomics.load(this.control, CTL_ERROR_LENGTH);
      const text = new TextDecoder().decode(new Uint8Array(this.error, 0, n).slice());
      if (isDeviceLost(text)) throw deviceLostError(new Error(text));
      throw this.fail(c.name, `gpu.js failed: ${text}`);
    }
    this.counted.calls++;
    for (const a of c.args) this.counted.uploadBytes += argBytes(a);
    this.counted.readbackBytes += result.byteLength;
    this.built.delete(key);
    this.built.set(key, 'webgpu');
    while (this.built.size > CACHE_LIMIT) this.built.delete(this.built.keys().next().value as string);
    return new Float32Array(result);
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
