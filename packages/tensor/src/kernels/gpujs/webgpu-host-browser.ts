/**
 * The webgpu bridge's browser host: a Web Worker (from a blob URL) whose prelude loads gpu.js's
 * browser build with `importScripts` from the URL the page gives ({@link setGpujsScriptUrl});
 * `navigator.gpu` is the browser's own. The calling thread sleeps in `Atomics.wait`, so it must
 * itself be a Web Worker (a window's main thread may not block), in a cross-origin isolated page
 * (the control words are a SharedArrayBuffer).
 */
import { canBlock, canShareMemory } from '../../host';
import { WebgpuUnavailableError } from './webgpu';
import type { BridgeData, BridgeWorker } from './webgpu-worker';

interface WebWorkerHost {
  Worker?: new (url: string) => { postMessage(m: unknown): void; terminate(): void };
  Blob: new (parts: string[], options: { type: string }) => unknown;
  URL: { createObjectURL(blob: unknown): string };
  location?: { href: string };
}

let gpujsScriptUrl: string | null = null;

/**
 * Where the page serves gpu.js's browser build (`gpu.js/dist/gpu-browser.min.js`), relative to
 * the calling script's location; the webgpu worker loads it from there.
 */
export function setGpujsScriptUrl(url: string): void {
  const base = (globalThis as WebWorkerHost).location?.href;
  gpujsScriptUrl = base === undefined ? url : new URL(url, base).href;
}

const PRELUDE = `'use strict';
self.onmessage = (e) => {
  const data = e.data;
  const gpujs = new Promise((resolve) => { importScripts(data.gpujsUrl); resolve(self.GPU); });
`;

/** Start the bridge worker as a Web Worker; throws `WebgpuUnavailableError` where it cannot work. */
export function startBrowserWebgpuWorker(serve: string, data: BridgeData): BridgeWorker {
  const host = globalThis as unknown as WebWorkerHost;
  const unavailable = (detail: string, install: string) => new WebgpuUnavailableError('adapter', detail, install);
  if (!canBlock) throw unavailable('the synchronous webgpu kernels wait in Atomics.wait, which a window\'s main thread may not', 'run the model in a Web Worker');
  if (!canShareMemory()) throw unavailable('no SharedArrayBuffer (the page is not cross-origin isolated)', 'serve the page with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp');
  if (typeof host.Worker !== 'function') throw unavailable('this runtime has no Worker', 'use a browser with Web Workers');
  if (gpujsScriptUrl === null) throw unavailable('no URL of gpu.js\'s browser build', 'serve gpu.js/dist/gpu-browser.min.js and call setGpujsScriptUrl(url) first');
  const source = `${PRELUDE}  (${serve})(gpujs, data, (handler) => { self.onmessage = (m) => handler(m.data); });\n};\n`;
  const w = new host.Worker(host.URL.createObjectURL(new host.Blob([source], { type: 'text/javascript' })));
  w.postMessage({ ...data, gpujsUrl: gpujsScriptUrl });
  return w;
}
