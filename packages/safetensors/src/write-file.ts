// Streaming, atomic file writer: the header, then each tensor's bytes in order, into
// `<path>.tmp-<pid>-<random>`; fsync; then rename over `path`. A crash leaves either the old
// file or the complete new one, never a truncated file. No buffer of the whole file is built.

import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { SafetensorsError, SafetensorsIoError } from './errors.js';
import { IO_CHUNK } from './file.js';
import { planSerialization, tensorBytes, type MetadataInput, type SerializationPlan, type TensorEntries } from './serialize.js';

/** Options of {@link writeFile}. */
export interface WriteFileOptions {
  /** `fsync` the file before the rename (default `true`; turn off only for scratch files). */
  readonly fsync?: boolean;
}

function ioError(op: string, file: string, cause: unknown): SafetensorsIoError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new SafetensorsIoError('Io', `${op} failed: ${detail}`, { file, cause });
}

/** Temporary sibling path used while writing `path`. */
export function tempPathFor(path: string): string {
  return `${path}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
}

function removeQuietly(path: string): void {
  try {
    fs.rmSync(path, { force: true });
  } catch {
    // best effort: the original error is what matters
  }
}

function writeAllSync(fd: number, bytes: Uint8Array, path: string): void {
  let done = 0;
  while (done < bytes.length) {
    try {
      done += fs.writeSync(fd, bytes, done, Math.min(bytes.length - done, IO_CHUNK));
    } catch (cause) {
      throw ioError('write', path, cause);
    }
  }
}

/** Write a planned file atomically (synchronous). */
export function writePlanSync(path: string, plan: SerializationPlan, options: WriteFileOptions = {}): void {
  const tmp = tempPathFor(path);
  let fd: number;
  try {
    fd = fs.openSync(tmp, 'wx');
  } catch (cause) {
    throw ioError('open', tmp, cause);
  }
  try {
    writeAllSync(fd, plan.header, path);
    for (const t of plan.tensors) writeAllSync(fd, tensorBytes(t, path), path);
    if (options.fsync !== false) {
      try {
        fs.fsyncSync(fd);
      } catch (cause) {
        throw ioError('fsync', path, cause);
      }
    }
    fs.closeSync(fd);
    fd = -1;
    try {
      fs.renameSync(tmp, path);
    } catch (cause) {
      throw ioError('rename', path, cause);
    }
  } catch (error) {
    if (fd >= 0) fs.closeSync(fd);
    removeQuietly(tmp);
    throw error instanceof SafetensorsError ? error : ioError('write', path, error);
  }
}

/** Write a planned file atomically without blocking the event loop. */
export async function writePlanAsync(path: string, plan: SerializationPlan, options: WriteFileOptions = {}): Promise<void> {
  const tmp = tempPathFor(path);
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(tmp, 'wx');
  } catch (cause) {
    throw ioError('open', tmp, cause);
  }
  let open = true;
  try {
    const writeAll = async (bytes: Uint8Array): Promise<void> => {
      let done = 0;
      while (done < bytes.length) {
        try {
          done += (await handle.write(bytes, done, Math.min(bytes.length - done, IO_CHUNK))).bytesWritten;
        } catch (cause) {
          throw ioError('write', path, cause);
        }
      }
    };
    await writeAll(plan.header);
    for (const t of plan.tensors) await writeAll(tensorBytes(t, path));
    if (options.fsync !== false) {
      try {
        await handle.sync();
      } catch (cause) {
        throw ioError('fsync', path, cause);
      }
    }
    open = false;
    await handle.close();
    try {
      await fs.promises.rename(tmp, path);
    } catch (cause) {
      throw ioError('rename', path, cause);
    }
  } catch (error) {
    if (open) await handle.close().catch(() => undefined);
    removeQuietly(tmp);
    throw error instanceof SafetensorsError ? error : ioError('write', path, error);
  }
}

/**
 * Write tensors to `path` as one safetensors file: validated first, then streamed (header, then
 * each tensor's bytes; lazy `data` producers are called one at a time), written to a temporary
 * sibling and renamed into place. See {@link MetadataInput} for the `__metadata__` default.
 */
export function writeFile(path: string, entries: TensorEntries, metadata?: MetadataInput, options?: WriteFileOptions): void {
  writePlanSync(path, planSerialization(entries, metadata, path), options);
}

/** Async {@link writeFile}. */
export async function writeFileAsync(path: string, entries: TensorEntries, metadata?: MetadataInput, options?: WriteFileOptions): Promise<void> {
  const plan = planSerialization(entries, metadata, path);
  await writePlanAsync(path, plan, options);
}
