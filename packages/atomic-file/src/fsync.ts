// fsync for directories and trees. A rename is durable only once the directory holding it is
// fsynced; a file's bytes only once the file is.

import fs from 'node:fs';
import path from 'node:path';

/** fsync a directory so that renames inside it survive a power loss (best effort where the platform cannot). */
export function fsyncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic there.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** fsync every regular file under `dir` (recursively), then the directories themselves. */
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
