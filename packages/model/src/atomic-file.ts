// Crash-safe file writes: write a temporary sibling, fsync it, rename it over the target, fsync
// the directory. A reader sees either the old contents or the new ones, never a torn file.

import fs from 'node:fs';
import path from 'node:path';

let counter = 0;

/** A fresh temporary sibling name for `target` (same directory, so `rename` is atomic). */
export function tempSibling(target: string, tag = 'tmp'): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${tag}-${process.pid}-${Date.now().toString(36)}-${counter++}`);
}

/** fsync a directory so that renames inside it survive a power loss (best effort where unsupported). */
export function fsyncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // Some platforms cannot fsync directories; the rename is still atomic there.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Write `data` to `file` atomically: temporary sibling, fsync, rename, fsync of the directory.
 * On failure the temporary file is removed, `file` keeps its previous contents, and the error
 * is rethrown.
 */
export function writeFileAtomic(file: string, data: string | Uint8Array): void {
  const tmp = tempSibling(file);
  let fd: number | undefined;
  try {
    fd = fs.openSync(tmp, 'wx');
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let done = 0;
    while (done < bytes.length) done += fs.writeSync(fd, bytes, done, bytes.length - done);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = undefined;
    fs.renameSync(tmp, file);
  } catch (e) {
    if (fd !== undefined) {
      try {
        fs.closeSync(fd);
      } catch {
        // already closed or invalid; the original error is what matters
      }
    }
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  fsyncDirectory(path.dirname(file));
}

/** fsync every regular file under `dir` (recursively) and the directories themselves. */
export function fsyncTree(dir: string): void {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) fsyncTree(p);
    else if (entry.isFile()) {
      const fd = fs.openSync(p, 'r');
      try {
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    }
  }
  fsyncDirectory(dir);
}
