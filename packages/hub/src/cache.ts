// The Hugging Face cache layout on disk, as Python huggingface_hub (and llama.cpp) read and write it:
//
//   <cache>/models--<owner>--<name>/
//     refs/<revision>            the commit a branch or tag was at when last resolved (40 hex digits, no newline)
//     snapshots/<commit>/<path>  relative symlinks to ../../blobs/<etag> (one more ../ per directory level)
//     blobs/<etag>               contents, named by the Hub's etag: SHA-256 for LFS files, the git blob id otherwise
//     trees/<commit>.json        the commit's file listing (huggingface_hub ≥ 1.x; format_version 1)
//   <cache>/.locks/models--<owner>--<name>/
//
// A download in progress is `blobs/<etag>.incomplete`, kept between runs to resume from, and held by
// `.locks/…/<etag>.incomplete.lock` (our pid) so that two processes never append to it together.
// huggingface_hub writes its own downloads to `<etag>.<random>.incomplete`, so the two never share one.
// Where symlinks cannot be made, the blob is copied into the snapshot (as huggingface_hub does).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { renameIntoPlace, writeFileAtomic } from '@apertus/atomic-file';
import type { DownloadSink } from './fetch-file';
import type { RepoFile } from './select';

const COMMIT = /^[0-9a-f]{40}$/;

/** `models--owner--name`: the folder of a model repository in the cache. */
export function repoFolderName(repo: string): string {
  return `models--${repo.replace(/\//g, '--')}`;
}

/** True for a 40-hex-digit commit id. */
export const isCommit = (s: string): boolean => COMMIT.test(s);

function writeAtomic(file: string, data: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  writeFileAtomic(file, data);
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** One model repository in a Hugging Face cache directory. */
export class RepoCache {
  /** `<cache>/models--owner--name`. */
  readonly root: string;
  private readonly locks: string;

  constructor(
    /** The hub cache directory. */
    readonly cacheDir: string,
    /** `owner/name`. */
    readonly repo: string,
  ) {
    this.root = path.join(cacheDir, repoFolderName(repo));
    this.locks = path.join(cacheDir, '.locks', repoFolderName(repo));
  }

  /** The commit `refs/<revision>` records, or null. */
  readRef(revision: string): string | null {
    try {
      const commit = fs.readFileSync(path.join(this.root, 'refs', revision), 'utf8').trim();
      return isCommit(commit) ? commit : null;
    } catch {
      return null;
    }
  }

  /** Record that `revision` is at `commit` (nothing to do for a commit id, or when already recorded). */
  writeRef(revision: string, commit: string): void {
    if (revision === commit || this.readRef(revision) === commit) return;
    writeAtomic(path.join(this.root, 'refs', revision), commit);
  }

  /** `snapshots/<commit>`. */
  snapshotDir(commit: string): string {
    return path.join(this.root, 'snapshots', commit);
  }

  /** `snapshots/<commit>/<file>`. */
  pointer(commit: string, file: string): string {
    return path.join(this.snapshotDir(commit), ...file.split('/'));
  }

  /** `blobs/<etag>`. */
  blob(etag: string): string {
    return path.join(this.root, 'blobs', etag);
  }

  /** True when the snapshot has `file` and it resolves to a file (a dangling link does not count). */
  has(commit: string, file: string): boolean {
    return fs.statSync(this.pointer(commit, file), { throwIfNoEntry: false })?.isFile() === true;
  }

  /** Put `file` into the snapshot of `commit` as a relative symlink to its blob (a copy where links fail). */
  link(commit: string, file: string, etag: string): void {
    const dst = this.pointer(commit, file);
    fs.mkdirSync(path.dirname(dst), { recursive: true });
    fs.rmSync(dst, { force: true });
    try {
      fs.symlinkSync(path.relative(path.dirname(dst), this.blob(etag)), dst);
    } catch {
      fs.copyFileSync(this.blob(etag), dst);
    }
  }

  /** The listing of `commit` recorded in `trees/<commit>.json`, or null. */
  readTree(commit: string): RepoFile[] | null {
    try {
      const j = JSON.parse(fs.readFileSync(path.join(this.root, 'trees', `${commit}.json`), 'utf8')) as { format_version?: unknown; files?: Record<string, { size?: unknown; blob_id?: unknown; lfs_sha256?: unknown; lfs_size?: unknown }> };
      if (j.format_version !== 1 || j.files === null || typeof j.files !== 'object') return null;
      return Object.entries(j.files).map(([p, f]) => ({
        path: p, size: Number(f.size), blobId: String(f.blob_id ?? ''),
        lfs: typeof f.lfs_sha256 === 'string' ? { sha256: f.lfs_sha256, size: Number(f.lfs_size ?? f.size) } : null,
      }));
    } catch {
      return null;
    }
  }

  /** Record the listing of `commit` (once: a commit's listing never changes). */
  writeTree(commit: string, files: readonly RepoFile[]): void {
    const file = path.join(this.root, 'trees', `${commit}.json`);
    if (fs.existsSync(file)) return;
    const entries = Object.fromEntries(files.map((f) => [f.path, { size: f.size, blob_id: f.blobId, ...(f.lfs ? { lfs_sha256: f.lfs.sha256, lfs_size: f.lfs.size } : {}) }]));
    writeAtomic(file, `${JSON.stringify({ format_version: 1, files: entries }, null, 2)}\n`);
  }

  /**
   * Hold the download of blob `etag` (waiting while another live process holds it); resolves with
   * the release function.
   */
  async lock(etag: string, signal?: AbortSignal): Promise<() => void> {
    const file = path.join(this.locks, `${etag}.incomplete.lock`);
    fs.mkdirSync(this.locks, { recursive: true });
    const me = `${process.pid}@${os.hostname()}`;
    for (;;) {
      try {
        fs.writeFileSync(file, me, { flag: 'wx' });
        return () => fs.rmSync(file, { force: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const holder = fs.readFileSync(file, { encoding: 'utf8', flag: 'r' }).trim();
      const [pid, host] = holder.split('@');
      if (host === os.hostname() && !alive(Number(pid))) {
        fs.rmSync(file, { force: true });
        continue;
      }
      signal?.throwIfAborted();
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** The resumable download of blob `etag`: `blobs/<etag>.incomplete`, renamed to the blob by {@link commitBlob}. */
  incomplete(etag: string): DownloadSink {
    const file = `${this.blob(etag)}.incomplete`;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    let fh: fs.promises.FileHandle | null = null;
    const close = async () => {
      await fh?.close();
      fh = null;
    };
    return {
      stored: async () => fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0,
      write: async (bytes) => {
        fh ??= await fs.promises.open(file, 'a');
        await fh.write(bytes);
      },
      read: () => (fs.existsSync(file) ? fs.createReadStream(file) : []) as AsyncIterable<Uint8Array>,
      clear: async () => {
        await close();
        await fs.promises.rm(file, { force: true });
      },
      close,
    };
  }

  /** The checked download of `etag` becomes its blob. */
  commitBlob(etag: string): void {
    const incomplete = `${this.blob(etag)}.incomplete`;
    const fd = fs.openSync(incomplete, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    renameIntoPlace(incomplete, this.blob(etag));
  }
}
