/**
 * Starting a GEMM worker on the host's threads: a `worker_threads` Worker in Node, a Web Worker
 * in a browser (which needs cross-origin isolation to share the wasm memory). Both run
 * {@link WORKER_MAIN_SOURCE}, started from inline source; only the delivery of the start data
 * differs (Node's `workerData`, a first message in a browser).
 */
import { isNode, nodeBuiltin } from '../../../host';
import { WORKER_MAIN_SOURCE, type KernelSet } from './jobs';
import type { WasmMemory, WasmModule } from '../../../wasm/api';

/** What a GEMM worker is started with. */
export interface GemmWorkerData {
  module: WasmModule;
  memory: WasmMemory;
  control: SharedArrayBuffer;
  /** The worker's index in the scratch table (1.., the calling thread is 0). */
  thread: number;
  /** The kernel sets of call jobs (set k of a job record is sets[k]). */
  sets: KernelSet[];
}

/** A started GEMM worker. */
export interface GemmWorker {
  terminate(): void;
}

interface NodeWorkerThreads {
  Worker: new (source: string, options: { eval: true; workerData: unknown }) => {
    unref(): void;
    on(event: 'error', listener: (e: unknown) => void): void;
    terminate(): Promise<number>;
  };
}

interface WebWorker {
  postMessage(data: unknown): void;
  terminate(): void;
  addEventListener(type: 'error', listener: (e: { message?: string }) => void): void;
}

interface WebWorkerHost {
  Worker?: new (url: string) => WebWorker;
  Blob: new (parts: string[], options: { type: string }) => unknown;
  URL: { createObjectURL(blob: unknown): string };
}

/** The Web Worker script (a blob URL, made once: a worker may fetch it after `new Worker` returns). */
let webWorkerUrl: string | null = null;

/** Whether this host can start GEMM workers at all. */
export function workersAvailable(): boolean {
  return isNode || typeof (globalThis as WebWorkerHost).Worker === 'function';
}

/** Start a worker running the GEMM job loop; `onError` gets the message of an uncaught error. */
export function startGemmWorker(data: GemmWorkerData, onError: (message: string) => void): GemmWorker {
  const threads = nodeBuiltin<NodeWorkerThreads>('node:worker_threads');
  if (threads !== null) {
    const source = `'use strict';\n(${WORKER_MAIN_SOURCE})(require('node:worker_threads').workerData);\n`;
    const w = new threads.Worker(source, { eval: true, workerData: data });
    w.unref();
    w.on('error', (e) => onError(e instanceof Error ? e.message : String(e)));
    return { terminate: () => void w.terminate() };
  }
  const host = globalThis as unknown as WebWorkerHost;
  if (typeof host.Worker !== 'function') throw new Error('this runtime has no Worker');
  if (webWorkerUrl === null) {
    const source = `'use strict';\nself.onmessage = (e) => { self.onmessage = null; (${WORKER_MAIN_SOURCE})(e.data); };\n`;
    webWorkerUrl = host.URL.createObjectURL(new host.Blob([source], { type: 'text/javascript' }));
  }
  const w = new host.Worker(webWorkerUrl);
  w.addEventListener('error', (e) => onError(e.message ?? 'a GEMM worker failed to start'));
  w.postMessage(data);
  return { terminate: () => w.terminate() };
}
