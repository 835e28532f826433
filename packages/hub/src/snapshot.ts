// A model of the Hub in the local cache: resolve the revision to a commit, list the commit's files,
// choose the model's files (select.ts), download the missing ones (fetch-file.ts) into the cache
// layout (cache.ts), and answer with the snapshot folder — as Python huggingface_hub's
// snapshot_download does, so that each reuses the other's files:
// - online: one request resolves the revision (the revision may have moved); the listing of a commit
//   is read from `trees/<commit>.json` when cached, else fetched and recorded; files already in the
//   snapshot, or whose blob another snapshot holds, are not downloaded again. A revision given as a
//   commit id needs no request at all once its files are cached.
// - offline (HF_HUB_OFFLINE=1), or when the Hub cannot be reached or refuses the revision lookup:
//   the commit `refs/<revision>` records, with the files its snapshot holds; an error naming the
//   cache when they are not all there.

import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { isCommit, RepoCache } from './cache';
import { hubSettings, type HubSettings } from './env';
import { HubAccessError, HubHttpError, HubNotFoundError, HubOfflineError } from './errors';
import { downloadFile, expectedContent, type DownloadProgress, type Hashes } from './fetch-file';
import { listRepoFiles, resolveRevision, HubUnreachableError, type HubClient } from './http';
import { selectModelFiles, shardFiles, type ModelFiles, type RepoFile } from './select';
import { DEFAULT_REVISION, type HubModelId } from './spec';

/** Options of the Hub functions (each defaults to the environment, see {@link hubSettings}). */
export interface HubOptions extends Partial<HubSettings> {
  /** Environment to read the settings from. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The fetch to use. Default the global one. */
  readonly fetch?: typeof fetch;
  /** Cancels the download (the bytes received stay, to resume from). */
  readonly signal?: AbortSignal;
  /** Called as bytes arrive. */
  readonly onProgress?: (p: DownloadProgress) => void;
  /** First retry delay after a dropped connection, in ms (doubling). Default 500. */
  readonly retryDelayMs?: number;
}

/** A model of the Hub, present in the cache. */
export interface HubSnapshot {
  /** `owner/name`. */
  readonly repo: string;
  /** The revision asked for (`main` by default). */
  readonly revision: string;
  /** The commit it resolved to. */
  readonly commit: string;
  /** `<cache>/models--owner--name/snapshots/<commit>`. */
  readonly dir: string;
  /** The model's files (for a sharded checkpoint, its shards included). */
  readonly model: ModelFiles;
  /** The local path to load: the snapshot folder, or the GGUF file in it. */
  readonly path: string;
  /** True when the Hub gave nothing: offline, unreachable, or everything cached for a commit id. */
  readonly fromCache: boolean;
}

/** node:crypto's hashes. */
export const NODE_HASHES: Hashes = {
  sha256: () => nodeHasher('sha256'),
  sha1: () => nodeHasher('sha1'),
};

function nodeHasher(algorithm: string) {
  const h = createHash(algorithm);
  return { update: (b: Uint8Array) => void h.update(b), hex: () => h.digest('hex') };
}

/** The files of a snapshot folder as a listing (sizes only), for a cache without `trees/`. */
function listSnapshot(dir: string): RepoFile[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[])
    .map((p) => ({ p: p.split(path.sep).join('/'), st: fs.statSync(path.join(dir, p), { throwIfNoEntry: false }) }))
    .filter(({ st }) => st?.isFile() === true)
    .map(({ p, st }) => ({ path: p, size: st!.size, blobId: '', lfs: null }));
}

/** The commit of `revision` in the cache, with the error to throw when there is none. */
function cachedCommit(cache: RepoCache, revision: string, why: string, cause?: unknown): string {
  const commit = isCommit(revision) ? revision : cache.readRef(revision);
  if (commit === null || !fs.existsSync(cache.snapshotDir(commit))) {
    throw new HubOfflineError(cache.repo, `${why}, and the Hugging Face cache (${cache.cacheDir}) has no snapshot of ${revision}`, cause !== undefined ? { cause } : undefined);
  }
  return commit;
}

/** Whether a failed revision lookup may fall back to the cache (as huggingface_hub does). */
const cacheMayAnswer = (e: unknown): boolean => e instanceof HubUnreachableError || e instanceof HubAccessError || (e instanceof HubHttpError && e.status >= 500);

/**
 * Bring the model `id` into the Hugging Face cache (see the file header) and answer with where it is.
 * @throws HubNotFoundError, HubAccessError (gated: names HF_TOKEN), HubNoWeightsError,
 * HubOfflineError (offline or unreachable, and not cached), HubDownloadError
 */
export async function downloadModel(id: HubModelId, options: HubOptions = {}): Promise<HubSnapshot> {
  const s = hubSettings(options.env ?? process.env, options);
  const client: HubClient = { endpoint: s.endpoint, token: s.token, ...(options.fetch ? { fetch: options.fetch } : {}), ...(options.signal ? { signal: options.signal } : {}) };
  const { repo } = id;
  const revision = id.revision ?? DEFAULT_REVISION;
  const cache = new RepoCache(s.cacheDir, repo);
  let commit: string;
  let requests = false;
  // Why the cache alone answers (null: online).
  let cacheOnly: string | null = s.offline ? 'HF_HUB_OFFLINE is set' : null;
  if (cacheOnly !== null) commit = cachedCommit(cache, revision, cacheOnly);
  else if (isCommit(revision) && fs.existsSync(cache.snapshotDir(revision))) commit = revision;
  else {
    try {
      requests = true;
      commit = (await resolveRevision(client, repo, revision)).commit;
      cache.writeRef(revision, commit);
    } catch (e) {
      if (!cacheMayAnswer(e)) throw e;
      requests = false; // the answer comes from the cache alone
      cacheOnly = (e as Error).message.replace(`${repo}: `, '');
      try {
        commit = cachedCommit(cache, revision, cacheOnly, e);
      } catch (offline) {
        throw e instanceof HubAccessError ? e : offline;
      }
    }
  }
  const dir = cache.snapshotDir(commit);
  // The listing: recorded for the commit, else asked for (online), else what the snapshot holds.
  let listing = cache.readTree(commit);
  if (listing === null && cacheOnly === null) {
    requests = true;
    listing = await listRepoFiles(client, repo, commit);
    cache.writeTree(commit, listing);
  }
  listing ??= listSnapshot(dir);
  let model: ModelFiles = selectModelFiles(repo, listing, id.quant);
  const wanted = (m: ModelFiles): string[] => (m.format === 'gguf' ? [m.file] : [...m.files]);
  const byPath = new Map(listing.map((f) => [f.path, f]));
  const total = () => wanted(model).reduce((n, f) => n + (byPath.get(f) ? expectedContent(byPath.get(f)!).size : 0), 0);
  let done = 0;
  const fetchAll = async (files: readonly string[]) => {
    for (const file of files) {
      if (cache.has(commit, file)) {
        done += fs.statSync(cache.pointer(commit, file)).size;
        continue;
      }
      if (cacheOnly !== null) throw new HubOfflineError(repo, `${cacheOnly}, and the cached snapshot ${commit} lacks ${file} (${cache.root})`);
      const entry = byPath.get(file);
      if (entry === undefined) throw new HubNotFoundError(repo, 'file', `not in the listing of commit ${commit}`, file);
      requests = true;
      await fetchOne(cache, client, commit, entry, options, (fileBytes) => options.onProgress?.({ repo, file, fileBytes, fileTotal: expectedContent(entry).size, bytes: done + fileBytes, total: total() }));
      done += expectedContent(entry).size;
    }
  };
  await fetchAll(wanted(model));
  if (model.format === 'safetensors' && model.index !== null) {
    const shards = shardFiles(repo, fs.readFileSync(cache.pointer(commit, model.index), 'utf8'));
    const files = model.files;
    model = { ...model, files: [...files, ...shards.filter((f) => !files.includes(f))] };
    await fetchAll(shards);
  }
  return { repo, revision, commit, dir, model, path: model.format === 'gguf' ? cache.pointer(commit, model.file) : dir, fromCache: !requests };
}

/** Download one file into its blob (unless another process or snapshot already has it) and link it. */
async function fetchOne(cache: RepoCache, client: HubClient, commit: string, file: RepoFile, options: HubOptions, onBytes: (n: number) => void): Promise<void> {
  const etag = file.lfs ? file.lfs.sha256 : file.blobId;
  if (!fs.existsSync(cache.blob(etag))) {
    const release = await cache.lock(etag, options.signal);
    try {
      if (!fs.existsSync(cache.blob(etag))) {
        await downloadFile(client, cache.repo, commit, file, cache.incomplete(etag), NODE_HASHES, { onBytes, ...(options.retryDelayMs !== undefined ? { retryDelayMs: options.retryDelayMs } : {}) });
        cache.commitBlob(etag);
      }
    } finally {
      release();
    }
  }
  onBytes(expectedContent(file).size);
  cache.link(commit, file.path, etag);
}
