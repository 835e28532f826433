// Downloading one file of a repository into a sink (a file on disk in Node, cache entries in a
// browser), resumable and checked:
// - resume: the sink keeps what earlier attempts stored; the request asks for the rest with
//   `Range: bytes=<stored>-`. A connection dropped mid-file (or a 5xx/429 answer, or a server that
//   closes early) is retried from the bytes received, after 0.5 s, 1 s, 2 s, …; five attempts in a
//   row that bring no byte give up (the stored bytes stay for the next run). A server that answers
//   a range with the whole file (200) restarts the sink.
// - check: the size must be the listing's; the content must hash to the listing's id: SHA-256 for
//   LFS files (the Hub's `lfs.oid`, also its `X-Linked-Etag`), git's blob SHA-1
//   (`sha1("blob <size>\0" + content)`, the Hub's ETag) for the others. A file that does not check
//   out is dropped from the sink and reported; nothing unchecked ever becomes a blob.

import { HubDownloadError, HubHttpError } from './errors';
import { hubFetch, HubUnreachableError, resolveUrl, type HubClient } from './http';
import type { RepoFile } from './select';

/** Progress of a model download (Node and browser alike). */
export interface DownloadProgress {
  /** `owner/name`. */
  readonly repo: string;
  /** The file being downloaded (path in the repository). */
  readonly file: string;
  /** Its bytes stored so far (resumed bytes included) and its size. */
  readonly fileBytes: number;
  readonly fileTotal: number;
  /** Bytes of the model's files present so far (files found in the cache count whole) and their total. */
  readonly bytes: number;
  readonly total: number;
}

/** An incremental hash. */
export interface Hasher {
  update(bytes: Uint8Array): void;
  /** The digest as lower-case hex (ends the hash). */
  hex(): string;
}

/** The hash functions a platform provides. */
export interface Hashes {
  sha256(): Hasher;
  sha1(): Hasher;
}

/** Where a download's bytes go. */
export interface DownloadSink {
  /** Bytes stored so far (an earlier attempt's, to resume from). */
  stored(): Promise<number>;
  /** Append bytes. */
  write(bytes: Uint8Array): Promise<void>;
  /** The stored bytes, in order (to hash them before resuming). */
  read(): AsyncIterable<Uint8Array>;
  /** Drop everything stored. */
  clear(): Promise<void>;
  /** Release what the sink holds open (it may be written again later). */
  close(): Promise<void>;
}

/** Options of {@link downloadFile}. */
export interface DownloadFileOptions {
  /** Called as bytes arrive with the bytes stored so far (resumed bytes included). */
  onBytes?: (stored: number) => void;
  /** First retry delay in ms (doubling each time). Default 500. */
  retryDelayMs?: number;
  /** Attempts in a row without progress before giving up. Default 5. */
  maxStalls?: number;
}

/** The bytes and hash a repository file must have. */
export function expectedContent(file: RepoFile): { size: number; hash: 'sha256' | 'sha1'; hex: string } {
  return file.lfs ? { size: file.lfs.size, hash: 'sha256', hex: file.lfs.sha256.toLowerCase() } : { size: file.size, hash: 'sha1', hex: file.blobId.toLowerCase() };
}

function newHasher(hashes: Hashes, file: RepoFile): Hasher {
  const want = expectedContent(file);
  if (want.hash === 'sha256') return hashes.sha256();
  const h = hashes.sha1();
  h.update(new TextEncoder().encode(`blob ${want.size}\0`));
  return h;
}

const sleep = (ms: number, signal?: AbortSignal) => new Promise<void>((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => {
    clearTimeout(t);
    reject(signal.reason);
  }, { once: true });
});

/** Whether a failed attempt may be retried (network, dropped body, 5xx, 429). */
function transient(e: unknown): boolean {
  return e instanceof HubUnreachableError || (e instanceof HubHttpError && (e.status >= 500 || e.status === 429)) || (e instanceof TypeError);
}

/**
 * Download `file` of `repo` at `commit` into `sink`, resuming from what it stores, and check it
 * (see the file header).
 * @throws HubDownloadError (size or hash differs, or the attempts stall), or the Hub's typed errors
 */
export async function downloadFile(client: HubClient, repo: string, commit: string, file: RepoFile, sink: DownloadSink, hashes: Hashes, options: DownloadFileOptions = {}): Promise<void> {
  try {
    await download(client, repo, commit, file, sink, hashes, options);
  } finally {
    await sink.close();
  }
}

async function download(client: HubClient, repo: string, commit: string, file: RepoFile, sink: DownloadSink, hashes: Hashes, options: DownloadFileOptions): Promise<void> {
  const want = expectedContent(file);
  const url = resolveUrl(client.endpoint, repo, commit, file.path);
  const fail = (message: string, cause?: unknown) => new HubDownloadError(repo, file.path, message, cause !== undefined ? { cause } : undefined);
  let hasher = newHasher(hashes, file);
  let offset = await sink.stored();
  if (offset > want.size) {
    await sink.clear();
    offset = 0;
  }
  for await (const chunk of sink.read()) hasher.update(chunk);
  let stalls = 0;
  let delay = options.retryDelayMs ?? 500;
  while (offset < want.size) {
    const before = offset;
    try {
      const res = await hubFetch(client, url, { repo, revision: commit, file: file.path }, { headers: { 'accept-encoding': 'identity', ...(offset > 0 ? { range: `bytes=${offset}-` } : {}) } });
      if (offset > 0 && res.status === 200) {
        await sink.clear();
        hasher = newHasher(hashes, file);
        offset = 0;
      } else if (offset > 0) {
        const start = /^bytes (\d+)-/.exec(res.headers.get('content-range') ?? '')?.[1];
        if (res.status !== 206 || Number(start) !== offset) {
          await res.body?.cancel();
          throw fail(`asked for bytes ${offset}- and got HTTP ${res.status} ${res.headers.get('content-range') ?? 'without Content-Range'}`);
        }
      }
      if (res.body === null) throw fail(`HTTP ${res.status} without a body`);
      options.onBytes?.(offset);
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        if (offset + chunk.length > want.size) throw fail(`larger than the ${want.size} bytes the Hub lists`);
        await sink.write(chunk);
        hasher.update(chunk);
        offset += chunk.length;
        options.onBytes?.(offset);
      }
    } catch (e) {
      if (e instanceof HubDownloadError || !transient(e) || client.signal?.aborted) throw e;
      stalls = offset > before ? 0 : stalls + 1;
      if (stalls >= (options.maxStalls ?? 5)) throw fail(`no progress after ${stalls} attempts at byte ${offset} of ${want.size} (${(e as Error).message}); run again to resume`, e);
      await sleep(offset > before ? 0 : delay, client.signal);
      if (offset === before) delay *= 2;
      continue;
    }
    if (offset < want.size) {
      // The server ended the body early without an error: resume like after a dropped connection.
      stalls = offset > before ? 0 : stalls + 1;
      if (stalls >= (options.maxStalls ?? 5)) throw fail(`the Hub keeps ending the file at byte ${offset} of ${want.size}; run again to resume`);
    }
  }
  const got = hasher.hex();
  if (got !== want.hex) {
    await sink.clear();
    throw fail(`${want.hash} ${got} differs from the Hub's ${want.hex} (the download was discarded)`);
  }
}
