// Crash-safe file writes: write a temporary sibling, fsync it, rename it over the target, fsync
// the directory. A reader sees either the old contents or the new ones, never a torn file, and
// after a power loss the new file is there or the old one is.

import fs from 'node:fs';
import path from 'node:path';
import { fsyncDirectory } from './fsync';

/** What {@link writeFileAtomic} writes: text (UTF-8), bytes, or a producer that streams bytes through `write`. */
export type FileContents = string | Uint8Array | ((write: (bytes: Uint8Array) => void) => void);

/** What {@link writeFileAtomicAsync} writes: text (UTF-8), bytes, or a producer that streams bytes through `write`. */
export type AsyncFileContents = string | Uint8Array | ((write: (bytes: Uint8Array) => Promise<void>) => Promise<void>);

/** Options of {@link writeFileAtomic} and {@link writeFileAtomicAsync}. */
export interface AtomicWriteOptions {
  /** fsync the file before the rename and the directory after it (default `true`; turn off only for scratch files). */
  readonly fsync?: boolean;
}

/** Bytes written per `write` call: large buffers go down in pieces the kernel takes at once. */
const CHUNK = 1 << 24;

let counter = 0;

/**
 * A fresh temporary sibling name for `target`: `.<name>.<tag>-<pid>-<time>-<n>` in the same
 * directory (so the rename is atomic), hidden, and unique within and across processes.
 */
export function tempSibling(target: string, tag = 'tmp'): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${tag}-${process.pid}-${Date.now().toString(36)}-${counter++}`);
}

/**
 * Rename the complete temporary file `tmp` over `target`, then fsync the directory: the last
 * step of a writer that streams into `tmp` itself (and has fsynced it).
 */
export function renameIntoPlace(tmp: string, target: string, options: AtomicWriteOptions = {}): void {
  fs.renameSync(tmp, target);
  if (options.fsync !== false) fsyncDirectory(path.dirname(target));
}

const bytesOf = (data: string | Uint8Array): Uint8Array => (typeof data === 'string' ? Buffer.from(data, 'utf8') : data);

/**
 * Write `contents` to `file` atomically: temporary sibling, write, fsync, rename, fsync of the
 * directory. On failure (of the producer, or of any step: a full disk, say) the temporary file is
 * removed, `file` keeps its previous contents, and the error is rethrown as it came.
 */
export function writeFileAtomic(file: string, contents: FileContents, options: AtomicWriteOptions = {}): void {
  const tmp = tempSibling(file);
  let fd: number | undefined;
  try {
    fd = fs.openSync(tmp, 'wx');
    const target = fd;
    const write = (bytes: Uint8Array): void => {
      for (let done = 0; done < bytes.length; ) done += fs.writeSync(target, bytes, done, Math.min(bytes.length - done, CHUNK));
    };
    if (typeof contents === 'function') contents(write);
    else write(bytesOf(contents));
    if (options.fsync !== false) fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = undefined;
    renameIntoPlace(tmp, file, options);
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
}

/** {@link writeFileAtomic} without blocking the event loop while the bytes are written. */
export async function writeFileAtomicAsync(file: string, contents: AsyncFileContents, options: AtomicWriteOptions = {}): Promise<void> {
  const tmp = tempSibling(file);
  let handle: fs.promises.FileHandle | undefined;
  try {
    handle = await fs.promises.open(tmp, 'wx');
    const target = handle;
    const write = async (bytes: Uint8Array): Promise<void> => {
      for (let done = 0; done < bytes.length; ) done += (await target.write(bytes, done, Math.min(bytes.length - done, CHUNK))).bytesWritten;
    };
    if (typeof contents === 'function') await contents(write);
    else await write(bytesOf(contents));
    if (options.fsync !== false) await handle.sync();
    const open = handle;
    handle = undefined;
    await open.close();
    await fs.promises.rename(tmp, file);
    if (options.fsync !== false) fsyncDirectory(path.dirname(file));
  } catch (e) {
    if (handle !== undefined) await handle.close().catch(() => undefined);
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}
