// A Hub model in a browser: the same revision → commit → listing → model files → checked, resumable
// downloads as in Node (fetch-file.ts), stored in the Cache API (`caches.open('apertus-hub')`, or
// any cache with match/put/delete), which a page and its workers share and which survives reloads.
// The Cache API holds whole responses, so a file is stored as parts of at most 16 MiB
// (`<resolve URL>?apertus-part=<k>`) and, once checked, a manifest (`<resolve URL>?apertus-file`);
// a download cut off resumes after the last stored part. The revision's commit
// (`…/revision/<rev>?apertus-ref`) and the commit's listing (`…/tree/<commit>?apertus-tree`) are
// cached too, so an offline page (`offline: true`, or the Hub unreachable) loads what it has.
// The Cache API rather than the origin private file system: it works in windows and workers of
// every browser alike (OPFS writes from a window need createWritable, missing in some), and the
// stored parts read back as Blobs without copying.

import { sha1 } from '@noble/hashes/legacy';
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex } from '@noble/hashes/utils';
import { HubAccessError, HubHttpError, HubOfflineError } from './errors';
import { downloadFile, expectedContent, type DownloadProgress, type DownloadSink, type Hashes } from './fetch-file';
import { DEFAULT_ENDPOINT, HubUnreachableError, listRepoFiles, resolveRevision, resolveUrl, type HubClient } from './http';
import { selectModelFiles, shardFiles, type ModelFiles, type RepoFile } from './select';
import { DEFAULT_REVISION, type HubModelId } from './spec';

/** The part of the Cache API this module uses (a `Cache` of `caches.open(name)`). */
export interface ResponseCache {
  match(request: string): Promise<Response | undefined>;
  put(request: string, response: Response): Promise<void>;
  delete(request: string): Promise<boolean>;
}

/** Options of {@link downloadModelToCache}. */
export interface BrowserHubOptions {
  /** Base URL of the Hub. Default https://huggingface.co. */
  readonly endpoint?: string;
  /** Bearer token (a gated model's), or null. */
  readonly token?: string | null;
  /** Use the cache only. */
  readonly offline?: boolean;
  /** The cache. Default `caches.open('apertus-hub')`. */
  readonly cache?: ResponseCache;
  readonly fetch?: typeof fetch;
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: DownloadProgress) => void;
  /** First retry delay after a dropped connection, in ms. Default 500. */
  readonly retryDelayMs?: number;
}

/** A Hub model present in the browser cache. */
export interface BrowserSnapshot {
  readonly repo: string;
  readonly revision: string;
  readonly commit: string;
  readonly model: ModelFiles;
  /** A file of the snapshot as a Blob (null when it is not a downloaded model file). */
  file(path: string): Promise<Blob | null>;
}

/** Name of the cache the browser downloads go to. */
export const BROWSER_CACHE_NAME = 'apertus-hub';
const PART_BYTES = 16 << 20;

/** @noble/hashes' SHA-256 and SHA-1 (incremental, no Node). */
export const NOBLE_HASHES: Hashes = {
  sha256: () => wrap(sha256.create()),
  sha1: () => wrap(sha1.create()),
};
function wrap(h: { update(b: Uint8Array): unknown; digest(): Uint8Array }) {
  return { update: (b: Uint8Array) => void h.update(b), hex: () => bytesToHex(h.digest()) };
}

/** The stored parts of a file: `<url>?apertus-part=0`, `1`, … up to the first missing one. */
async function parts(cache: ResponseCache, url: string): Promise<Blob[]> {
  const out: Blob[] = [];
  for (let k = 0; ; k++) {
    const r = await cache.match(`${url}?apertus-part=${k}`);
    if (r === undefined) return out;
    out.push(await r.blob());
  }
}

/** A download sink writing parts of at most 16 MiB into the cache. */
function cacheSink(cache: ResponseCache, url: string): DownloadSink {
  let stored: Blob[] | null = null;
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  const load = async () => (stored ??= await parts(cache, url));
  const flush = async () => {
    if (pendingBytes === 0) return;
    const have = await load();
    const blob = new Blob(pending as unknown as ConstructorParameters<typeof Blob>[0]);
    await cache.put(`${url}?apertus-part=${have.length}`, new Response(blob));
    have.push(blob);
    pending = [];
    pendingBytes = 0;
  };
  return {
    stored: async () => (await load()).reduce((n, b) => n + b.size, 0) + pendingBytes,
    write: async (bytes) => {
      pending.push(bytes.slice());
      pendingBytes += bytes.length;
      if (pendingBytes >= PART_BYTES) await flush();
    },
    async *read() {
      for (const b of await load()) yield new Uint8Array(await b.arrayBuffer());
    },
    clear: async () => {
      const have = await load();
      for (let k = 0; k < have.length; k++) await cache.delete(`${url}?apertus-part=${k}`);
      stored = [];
      pending = [];
      pendingBytes = 0;
    },
    close: flush,
  };
}

async function cachedJson<T>(cache: ResponseCache, key: string): Promise<T | null> {
  const r = await cache.match(key);
  return r === undefined ? null : ((await r.json()) as T);
}
const putJson = (cache: ResponseCache, key: string, value: unknown) => cache.put(key, new Response(JSON.stringify(value), { headers: { 'content-type': 'application/json' } }));

/**
 * Bring the model `id` into the browser cache (see the file header) and answer with its files.
 * @throws the Hub's typed errors, as in Node (HubAccessError names HF_TOKEN for a gated model)
 */
export async function downloadModelToCache(id: HubModelId, options: BrowserHubOptions = {}): Promise<BrowserSnapshot> {
  const endpoint = (options.endpoint ?? DEFAULT_ENDPOINT).replace(/\/+$/, '');
  const client: HubClient = { endpoint, token: options.token ?? null, ...(options.fetch ? { fetch: options.fetch } : {}), ...(options.signal ? { signal: options.signal } : {}) };
  const cache = options.cache ?? (await (globalThis as unknown as { caches: { open(name: string): Promise<ResponseCache> } }).caches.open(BROWSER_CACHE_NAME));
  const { repo } = id;
  const revision = id.revision ?? DEFAULT_REVISION;
  const refKey = `${endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}?apertus-ref`;
  let commit: string | null = null;
  let cacheOnly: string | null = options.offline ? 'offline' : null;
  if (cacheOnly === null) {
    try {
      commit = (await resolveRevision(client, repo, revision)).commit;
      await putJson(cache, refKey, commit);
    } catch (e) {
      if (!(e instanceof HubUnreachableError || e instanceof HubAccessError || (e instanceof HubHttpError && e.status >= 500))) throw e;
      cacheOnly = (e as Error).message.replace(`${repo}: `, '');
      commit = await cachedJson<string>(cache, refKey);
      if (commit === null) throw e instanceof HubAccessError ? e : new HubOfflineError(repo, `${cacheOnly}, and the browser cache has no snapshot of ${revision}`, { cause: e });
    }
  } else commit = await cachedJson<string>(cache, refKey);
  if (commit === null) throw new HubOfflineError(repo, `${cacheOnly}, and the browser cache has no snapshot of ${revision}`);
  const treeKey = `${endpoint}/api/models/${repo}/tree/${commit}?apertus-tree`;
  let listing = await cachedJson<RepoFile[]>(cache, treeKey);
  if (listing === null) {
    if (cacheOnly !== null) throw new HubOfflineError(repo, `${cacheOnly}, and the browser cache has no listing of commit ${commit}`);
    listing = await listRepoFiles(client, repo, commit);
    await putJson(cache, treeKey, listing);
  }
  const byPath = new Map(listing.map((f) => [f.path, f]));
  const url = (file: string) => resolveUrl(endpoint, repo, commit!, file);
  const done = async (file: string) => (await cache.match(`${url(file)}?apertus-file`)) !== undefined;
  let model: ModelFiles = selectModelFiles(repo, listing, id.quant);
  const names = (m: ModelFiles) => (m.format === 'gguf' ? [m.file] : [...m.files]);
  let bytes = 0;
  const total = () => names(model).reduce((n, f) => n + (byPath.has(f) ? expectedContent(byPath.get(f)!).size : 0), 0);
  const fetchAll = async (files: readonly string[]) => {
    for (const file of files) {
      const entry = byPath.get(file)!;
      const size = expectedContent(entry).size;
      if (!(await done(file))) {
        if (cacheOnly !== null) throw new HubOfflineError(repo, `${cacheOnly}, and the browser cache lacks ${file} of commit ${commit}`);
        await downloadFile(client, repo, commit!, entry, cacheSink(cache, url(file)), NOBLE_HASHES, {
          onBytes: (fileBytes) => options.onProgress?.({ repo, file, fileBytes, fileTotal: size, bytes: bytes + fileBytes, total: total() }),
          ...(options.retryDelayMs !== undefined ? { retryDelayMs: options.retryDelayMs } : {}),
        });
        await putJson(cache, `${url(file)}?apertus-file`, { size });
      }
      bytes += size;
    }
  };
  const read = async (file: string): Promise<Blob | null> => (names(model).includes(file) && (await done(file)) ? new Blob(await parts(cache, url(file))) : null);
  await fetchAll(names(model));
  if (model.format === 'safetensors' && model.index !== null) {
    const shards = shardFiles(repo, await (await read(model.index))!.text());
    const files = model.files;
    model = { ...model, files: [...files, ...shards.filter((f) => !files.includes(f))] };
    await fetchAll(shards);
  }
  return { repo, revision, commit, model, file: read };
}
