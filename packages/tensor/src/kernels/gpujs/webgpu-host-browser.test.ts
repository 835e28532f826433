// The browser host of the webgpu bridge, run here in Node with a stand-in for the browser's
// `Worker`, `Blob` and `URL.createObjectURL`: what it refuses (no Worker, no gpu.js URL), each as a
// WebgpuUnavailableError naming what to do, and the worker it starts — the prelude that loads gpu.js
// and the shared serving loop, with the control buffers and gpu.js's URL as the first message.
// The real thing runs in headless Chromium: tooling/browser/src/parity.test.ts.
import { afterEach, expect, test } from 'vitest';
import { setGpujsScriptUrl, startBrowserWebgpuWorker } from './webgpu-host-browser';
import { WebgpuUnavailableError } from './webgpu';
import { SERVE_SOURCE } from './webgpu-worker';

const g = globalThis as unknown as Record<string, unknown>;
const saved = { Worker: g['Worker'], Blob: g['Blob'], location: g['location'] };
const data = { control: new SharedArrayBuffer(8), error: new SharedArrayBuffer(16) };

afterEach(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete g[k];
    else g[k] = v;
  }
});

test('without a Worker constructor it says so', () => {
  delete g['Worker'];
  expect(() => startBrowserWebgpuWorker(SERVE_SOURCE, data)).toThrow(WebgpuUnavailableError);
  expect(() => startBrowserWebgpuWorker(SERVE_SOURCE, data)).toThrow(/no Worker/);
});

test('before setGpujsScriptUrl it names the call to make', () => {
  g['Worker'] = class {};
  expect(() => startBrowserWebgpuWorker(SERVE_SOURCE, data)).toThrow(WebgpuUnavailableError);
  expect(() => startBrowserWebgpuWorker(SERVE_SOURCE, data)).toThrow(/serve gpu\.js\/dist\/gpu-browser\.min\.js and call setGpujsScriptUrl/);
});

test('starts a Web Worker on the prelude and the serving loop, posting the buffers and gpu.js\'s URL', async () => {
  const started: { url: string; posted: unknown[] }[] = [];
  const sources = new Map<string, string>();
  g['Worker'] = class {
    readonly posted: unknown[] = [];
    constructor(url: string) { started.push({ url, posted: this.posted }); }
    postMessage(m: unknown) { this.posted.push(m); }
    terminate() {}
  };
  g['location'] = { href: 'https://example.org/app/worker.js' };
  const createObjectURL = URL.createObjectURL;
  URL.createObjectURL = (b: Blob) => {
    const url = `blob:${sources.size}`;
    void b.text().then((t) => sources.set(url, t));
    return url;
  };
  try {
    setGpujsScriptUrl('../vendor/gpu-browser.min.js');
    startBrowserWebgpuWorker(SERVE_SOURCE, data);
  } finally {
    URL.createObjectURL = createObjectURL;
  }
  expect(started).toHaveLength(1);
  expect(started[0]!.posted).toEqual([{ ...data, gpujsUrl: 'https://example.org/vendor/gpu-browser.min.js' }]);
  await new Promise((r) => setTimeout(r, 0));
  const source = sources.get(started[0]!.url)!;
  expect(source).toContain('importScripts(data.gpujsUrl)');
  expect(source).toContain(SERVE_SOURCE);
  // The worker's script is valid JavaScript.
  expect(() => new Function(source)).not.toThrow();
});
