// The owner of a run directory: `<out>/run.lock` holds the pid and host of the process training
// into it, created exclusively (O_EXCL). A second run into the same directory is refused while the
// owner lives; a lock left by a process that is gone (same host, pid no longer running) is stale
// and taken over.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { OutputWriteError, RunLockedError } from './errors';

/** Name of the lock file inside a run directory. */
export const LOCK_FILE = 'run.lock';

interface LockOwner {
  readonly pid: number;
  readonly host: string;
}

function readOwner(file: string): LockOwner | null {
  try {
    const v = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<LockOwner>;
    return typeof v.pid === 'number' && typeof v.host === 'string' ? { pid: v.pid, host: v.host } : null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A held lock; {@link RunLock.release} removes the file. */
export class RunLock {
  private constructor(readonly file: string) {}

  /**
   * Take the lock of run directory `dir` (which must exist).
   * @param onStale - told when a stale lock (its process is gone) is taken over
   * @throws RunLockedError when a live process (or one on another host) holds it
   */
  static acquire(dir: string, onStale: (owner: LockOwner) => void = () => {}): RunLock {
    const file = path.join(dir, LOCK_FILE);
    const me = `${JSON.stringify({ pid: process.pid, host: os.hostname(), started: new Date().toISOString() })}\n`;
    for (let attempt = 0; ; attempt++) {
      try {
        fs.writeFileSync(file, me, { flag: 'wx' });
        return new RunLock(file);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) {
          if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new RunLockedError(file, readOwner(file) ?? { pid: -1, host: 'unknown' });
          throw new OutputWriteError(file, e);
        }
      }
      const owner = readOwner(file);
      // An unreadable lock is a write in progress (or a damaged file): treat it as held.
      if (owner === null || owner.host !== os.hostname() || (owner.pid !== process.pid && alive(owner.pid)) || owner.pid === process.pid) {
        throw new RunLockedError(file, owner ?? { pid: -1, host: 'unknown' });
      }
      onStale(owner);
      fs.rmSync(file, { force: true });
    }
  }

  /** Remove the lock file. */
  release(): void {
    fs.rmSync(this.file, { force: true });
  }
}
