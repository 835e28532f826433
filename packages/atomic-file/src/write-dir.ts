// Crash-safe directory writes: fill a temporary sibling directory, fsync the tree, swap it in for
// the target (an existing one is moved aside first and removed after), fsync the parent. A crash
// never leaves a half-written directory at the target (between the two renames of a replacement
// the old one waits under its `.old-` name).

import fs from 'node:fs';
import path from 'node:path';
import { fsyncDirectory, fsyncTree } from './fsync';
import { tempSibling } from './write-file';

/**
 * Fill a fresh temporary directory with `fill(tmp)`, then put it at `dir`. On failure the
 * temporary directory is removed, `dir` is as it was, and the error is rethrown as it came.
 */
export function writeDirAtomic(dir: string, fill: (tmp: string) => void): void {
  const tmp = tempSibling(dir);
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  fs.mkdirSync(tmp);
  try {
    fill(tmp);
    fsyncTree(tmp);
    if (fs.existsSync(dir)) {
      const old = tempSibling(dir, 'old');
      fs.renameSync(dir, old);
      fs.renameSync(tmp, dir);
      fs.rmSync(old, { recursive: true, force: true });
    } else {
      fs.renameSync(tmp, dir);
    }
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  fsyncDirectory(path.dirname(dir));
}
