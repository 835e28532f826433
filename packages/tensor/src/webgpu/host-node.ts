/**
 * The device thread in Node: a `worker_threads` Worker whose prelude loads Dawn (the optional
 * `webgpu` package, resolved from this package) as `navigator.gpu` and then runs `serveDevice`.
 * Dawn's toggle `disable_workgroup_init` is on: the kernels never read workgroup memory they have
 * not written.
 * Node's modules come through `nodeBuiltin`, so a browser bundle never sees them.
 */
import { nodeBuiltin } from '../host';
import type { DeviceThread, DeviceThreadInit } from './host';

interface NodeHost {
  createRequire(from: string): { resolve(id: string): string };
  pathToFileURL(path: string): { href: string };
  Worker: new (source: string, options: { eval: true; workerData: unknown }) => {
    unref(): void; postMessage(m: unknown, transfer?: ArrayBuffer[]): void; terminate(): Promise<number>; on(event: string, f: (m: unknown) => void): void;
  };
}

const PRELUDE = `'use strict';
const { workerData, parentPort } = require('node:worker_threads');
(async () => {
  let webgpu;
  try {
    webgpu = await import(workerData.webgpuUrl);
  } catch (e) {
    parentPort.postMessage({ t: 'error', missing: 'webgpu-package', message: String(e && e.message || e) });
    return;
  }
  for (const [k, v] of Object.entries(webgpu.globals)) if (!(k in globalThis)) globalThis[k] = v;
  // Every kernel writes workgroup memory before reading it, so Dawn's zero-initialisation of it
  // is skipped (on SwiftShader it costs milliseconds per workgroup: 8 KB took 6 ms).
  const gpu = webgpu.create(['enable-dawn-features=disable_workgroup_init']);
  const d = workerData.init;
  SERVE({ gpu, control: d.control, error: d.error, features: d.features, limitCaps: d.limitCaps,
    listen: (h) => parentPort.on('message', h), post: (m) => parentPort.postMessage(m) });
})().catch((e) => parentPort.postMessage({ t: 'error', message: String(e && e.message || e) }));
`;

/** Start the device thread as a worker thread (unref'd: it never keeps the process alive). */
export function startNodeDeviceThread(serve: string, init: DeviceThreadInit): DeviceThread {
  const host: NodeHost = {
    createRequire: nodeBuiltin<NodeHost>('node:module')!.createRequire,
    pathToFileURL: nodeBuiltin<NodeHost>('node:url')!.pathToFileURL,
    Worker: nodeBuiltin<NodeHost>('node:worker_threads')!.Worker,
  };
  let webgpuUrl = '';
  try {
    webgpuUrl = host.pathToFileURL(host.createRequire(import.meta.url).resolve('webgpu')).href;
  } catch (e) {
    webgpuUrl = `unresolved:${e instanceof Error ? e.message : String(e)}`;
  }
  const w = new host.Worker(PRELUDE.replace('SERVE', `(${serve})`), { eval: true, workerData: { init, webgpuUrl } });
  w.unref();
  return {
    post: (m, transfer) => w.postMessage(m, transfer),
    onMessage: (f) => w.on('message', f),
    terminate: () => void w.terminate(),
  };
}
