// The browser path in Node: downloadModelToCache against the loopback Hub with an in-memory cache
// of the Cache API's shape (Node has fetch, Response and Blob, not `caches`); the page itself is
// exercised in Chromium by tooling/browser.

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { downloadModelToCache, type ResponseCache } from './browser-download';
import { HubAccessError, HubOfflineError } from './errors';
import { parseHubId } from './spec';
import { startHubServer, type HubServer } from './testing';

const WEIGHTS = new Uint8Array(randomBytes(250_000));
let hub: HubServer;

/** A Cache API stand-in: responses kept as bytes by URL. */
function memoryCache(): ResponseCache & { keys: () => string[] } {
  const m = new Map<string, { body: ArrayBuffer; headers: Headers }>();
  return {
    keys: () => [...m.keys()],
    match: async (k) => {
      const e = m.get(k);
      return e === undefined ? undefined : new Response(e.body.slice(0), { headers: e.headers });
    },
    put: async (k, r) => void m.set(k, { body: await r.arrayBuffer(), headers: r.headers }),
    delete: async (k) => m.delete(k),
  };
}

beforeAll(async () => {
  hub = await startHubServer({
    repos: {
      'acme/tiny': { files: { 'config.json': '{"a": 1}', 'model.safetensors': WEIGHTS, 'tokenizer.json': '{}' } },
      'acme/gated': { files: { 'config.json': '{}', 'model.safetensors': WEIGHTS }, gated: { granted: ['hf_granted'] } },
    },
  });
});
afterAll(() => hub.close());

test('files are stored as parts plus a manifest, read back as Blobs; a second load is one request, offline none', async () => {
  const cache = memoryCache();
  const snap = await downloadModelToCache(parseHubId('acme/tiny')!, { endpoint: hub.url, cache });
  const commit = hub.commit('acme/tiny');
  expect(snap).toMatchObject({ repo: 'acme/tiny', revision: 'main', commit, model: { format: 'safetensors', files: ['config.json', 'model.safetensors', 'tokenizer.json'] } });
  expect(new Uint8Array(await (await snap.file('model.safetensors'))!.arrayBuffer())).toEqual(WEIGHTS);
  expect(await (await snap.file('config.json'))!.text()).toBe('{"a": 1}');
  expect(await snap.file('README.md')).toBeNull();
  const base = `${hub.url}/acme/tiny/resolve/${commit}/model.safetensors`;
  expect(cache.keys()).toEqual(expect.arrayContaining([`${base}?apertus-part=0`, `${base}?apertus-file`, `${hub.url}/api/models/acme/tiny/revision/main?apertus-ref`, `${hub.url}/api/models/acme/tiny/tree/${commit}?apertus-tree`]));
  hub.requests.length = 0;
  await downloadModelToCache(parseHubId('acme/tiny')!, { endpoint: hub.url, cache });
  expect(hub.requests.map((r) => r.url.split('?')[0])).toEqual(['/api/models/acme/tiny/revision/main']);
  hub.requests.length = 0;
  const offline = await downloadModelToCache(parseHubId('acme/tiny')!, { endpoint: hub.url, cache, offline: true });
  expect(new Uint8Array(await (await offline.file('model.safetensors'))!.arrayBuffer())).toEqual(WEIGHTS);
  expect(hub.requests).toEqual([]);
  await expect(downloadModelToCache(parseHubId('acme/tiny')!, { endpoint: hub.url, cache: memoryCache(), offline: true })).rejects.toThrow(new HubOfflineError('acme/tiny', 'offline, and the browser cache has no snapshot of main'));
});

test('a dropped connection resumes within the load; a stopped load resumes from its stored parts', async () => {
  hub.dropAt('model.safetensors', 100_000);
  const cache = memoryCache();
  const snap = await downloadModelToCache(parseHubId('acme/tiny')!, { endpoint: hub.url, cache, retryDelayMs: 10 });
  expect(new Uint8Array(await (await snap.file('model.safetensors'))!.arrayBuffer())).toEqual(WEIGHTS);
  const stop = new AbortController();
  const second = memoryCache();
  await expect(downloadModelToCache(parseHubId('acme/tiny')!, { endpoint: hub.url, cache: second, signal: stop.signal, onProgress: (p) => p.fileBytes > 60_000 && stop.abort() })).rejects.toThrow();
  hub.requests.length = 0;
  const resumed = await downloadModelToCache(parseHubId('acme/tiny')!, { endpoint: hub.url, cache: second });
  expect(new Uint8Array(await (await resumed.file('model.safetensors'))!.arrayBuffer())).toEqual(WEIGHTS);
  const range = hub.requests.find((r) => r.url.startsWith('/_cdn/'))!.range;
  expect(Number(/^bytes=(\d+)-$/.exec(range ?? '')?.[1])).toBeGreaterThan(60_000);
});

test('a gated model without a token names HF_TOKEN; with one it loads', async () => {
  const e = await downloadModelToCache(parseHubId('acme/gated')!, { endpoint: hub.url, cache: memoryCache() }).catch((x: unknown) => x);
  expect(e).toBeInstanceOf(HubAccessError);
  expect((e as Error).message).toContain('set HF_TOKEN');
  const snap = await downloadModelToCache(parseHubId('acme/gated')!, { endpoint: hub.url, cache: memoryCache(), token: 'hf_granted' });
  expect((await snap.file('model.safetensors'))!.size).toBe(WEIGHTS.length);
});
