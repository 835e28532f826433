/**
 * The webgpu bridge's Node host: a `worker_threads` Worker whose prelude loads Dawn (the
 * optional `webgpu` package) as `navigator.gpu` and requires gpu.js, both resolved from this
 * package. Node's modules come through `nodeBuiltin`, so the browser bundle never sees them.
 */
import { nodeBuiltin } from '../../host';
import { GpujsBackendError } from './errors';
import type { BridgeData, BridgeWorker } from './webgpu-worker';

interface NodeHost {
  createRequire(from: string): { resolve(id: string): string };
  pathToFileURL(path: string): { href: string };
  Worker: new (source: string, options: { eval: true; workerData: unknown }) => { unref(): void; postMessage(m: unknown): void; terminate(): Promise<number> };
}

const PRELUDE = `'use strict';
const { workerData, parentPort } = require('node:worker_threads');
const gpujs = (async () => {
  const webgpu = await import(workerData.webgpuUrl);
  for (const [k, v] of Object.entries(webgpu.globals)) if (!(k in globalThis)) globalThis[k] = v;
  Object.defineProperty(globalThis, 'navigator', { value: { gpu: webgpu.create([]) }, configurable: true, writable: true });
  return require(workerData.gpujsPath);
})();
`;

/** Start the bridge worker as a worker thread (unref'd: it never keeps the process alive). */
export function startNodeWebgpuWorker(serve: string, data: BridgeData): BridgeWorker {
  const host: NodeHost = {
    createRequire: nodeBuiltin<NodeHost>('node:module')!.createRequire,
    pathToFileURL: nodeBuiltin<NodeHost>('node:url')!.pathToFileURL,
    Worker: nodeBuiltin<NodeHost>('node:worker_threads')!.Worker,
  };
  const require = host.createRequire(import.meta.url);
  let gpujsPath: string;
  let webgpuUrl: string;
  try {
    gpujsPath = require.resolve('gpu.js');
    webgpuUrl = host.pathToFileURL(require.resolve('webgpu')).href;
  } catch (e) {
    throw new GpujsBackendError({ requestedMode: 'webgpu', reason: `cannot resolve gpu.js and webgpu (${e instanceof Error ? e.message : String(e)})`, cause: e });
  }
  const source = `${PRELUDE}(${serve})(gpujs, workerData, (handler) => parentPort.on('message', handler));\n`;
  const w = new host.Worker(source, { eval: true, workerData: { ...data, gpujsPath, webgpuUrl } });
  w.unref();
  return { postMessage: (m) => w.postMessage(m), terminate: () => void w.terminate() };
}
