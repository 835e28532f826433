/**
 * The device thread in a browser: a Web Worker (from a blob URL) running `serveDevice` with the
 * browser's own `navigator.gpu`. The calling thread sleeps in `Atomics.wait` on reads, so it must
 * itself be a Web Worker (a window's main thread may not block), in a cross-origin isolated page
 * (the control words are a SharedArrayBuffer).
 */
import { canBlock, canShareMemory } from '../host';
import { WebgpuUnavailableError } from './errors';
import type { DeviceThread, DeviceThreadInit } from './host';

interface WebWorkerHost {
  Worker?: new (url: string) => { postMessage(m: unknown, transfer?: ArrayBuffer[]): void; terminate(): void; onmessage: ((e: { data: unknown }) => void) | null };
  Blob: new (parts: string[], options: { type: string }) => unknown;
  URL: { createObjectURL(blob: unknown): string };
}

/** Start the device thread as a Web Worker; throws `WebgpuUnavailableError` where it cannot work. */
export function startBrowserDeviceThread(serve: string, init: DeviceThreadInit): DeviceThread {
  const host = globalThis as unknown as WebWorkerHost;
  const unavailable = (detail: string, install: string) => new WebgpuUnavailableError('adapter', detail, install);
  if (!canBlock) throw unavailable('reads from the device wait in Atomics.wait, which a window\'s main thread may not', 'run the model in a Web Worker');
  if (!canShareMemory()) throw unavailable('no SharedArrayBuffer (the page is not cross-origin isolated)', 'serve the page with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp');
  if (typeof host.Worker !== 'function') throw unavailable('this runtime has no Worker', 'use a browser with Web Workers');
  const source = `'use strict';
self.onmessage = (e) => {
  const d = e.data;
  if (!self.navigator.gpu) { self.postMessage({ t: 'error', message: 'this browser has no navigator.gpu' }); return; }
  (${serve})({ gpu: self.navigator.gpu, control: d.control, error: d.error, features: d.features, limitCaps: d.limitCaps,
    listen: (h) => { self.onmessage = (m) => h(m.data); }, post: (m) => self.postMessage(m) });
};
`;
  const w = new host.Worker(host.URL.createObjectURL(new host.Blob([source], { type: 'text/javascript' })));
  w.postMessage(init);
  return {
    post: (m, transfer) => w.postMessage(m, transfer),
    onMessage: (f) => { w.onmessage = (e) => f(e.data); },
    terminate: () => w.terminate(),
  };
}
