// Lazy file reader: opening reads only the 8-byte length and the header; each tensor is then
// read on demand with a positioned read, so a 16 GB checkpoint is never loaded whole.

import * as fs from 'node:fs';
import { toTypedArray } from './dtype.js';
import { SafetensorsIoError, SafetensorsNotFoundError, SafetensorsTruncatedError } from './errors.js';
import { checkRange, parseHeader, readHeaderSize, type SafetensorsHeader, type TensorInfo } from './header.js';
import type { Tensor, TensorReader } from './reader.js';

/** Largest single read/write call (Node caps one call at 2^31 - 1 bytes). */
export const IO_CHUNK = 1 << 30;

function ioError(op: string, file: string, cause: unknown): SafetensorsIoError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new SafetensorsIoError('Io', `${op} failed: ${detail}`, { file, cause });
}

function readFullySync(fd: number, into: Uint8Array, position: number, file: string): number {
  let done = 0;
  while (done < into.length) {
    let n: number;
    try {
      n = fs.readSync(fd, into, done, Math.min(into.length - done, IO_CHUNK), position + done);
    } catch (cause) {
      throw ioError('read', file, cause);
    }
    if (n === 0) break;
    done += n;
  }
  return done;
}

function readAsyncCall(fd: number, into: Uint8Array, offset: number, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    fs.read(fd, into, offset, length, position, (err, n) => (err ? reject(err) : resolve(n)));
  });
}

async function readFullyAsync(fd: number, into: Uint8Array, position: number, file: string): Promise<number> {
  let done = 0;
  while (done < into.length) {
    let n: number;
    try {
      n = await readAsyncCall(fd, into, done, Math.min(into.length - done, IO_CHUNK), position + done);
    } catch (cause) {
      throw ioError('read', file, cause);
    }
    if (n === 0) break;
    done += n;
  }
  return done;
}

/**
 * A safetensors file opened for lazy reading. Tensor data comes back in fresh, aligned buffers
 * (never views of a shared buffer). `bytesRead` counts every byte read from disk, header included.
 *
 * @example
 * ```ts
 * const f = SafetensorsFile.open('model.safetensors');
 * const t = f.read('model.embed_tokens.weight'); // only this tensor's bytes are read
 * f.close();
 * ```
 */
export class SafetensorsFile implements TensorReader {
  /** Total bytes read from the file so far (8-byte length + header + tensor bytes). */
  bytesRead = 0;
  private fd: number | null;
  private pending = 0;
  private closing = false;

  private constructor(
    /** Path the file was opened from. */
    readonly path: string,
    fd: number,
    /** The parsed, validated header. */
    readonly header: SafetensorsHeader,
    /** File size in bytes at open time. */
    readonly fileSize: number,
    headerBytesRead: number,
  ) {
    this.fd = fd;
    this.bytesRead = headerBytesRead;
  }

  /** Open `path` and read and validate its header synchronously. */
  static open(path: string): SafetensorsFile {
    let fd: number;
    try {
      fd = fs.openSync(path, 'r');
    } catch (cause) {
      throw ioError('open', path, cause);
    }
    try {
      let size: number;
      try {
        size = fs.fstatSync(fd).size;
      } catch (cause) {
        throw ioError('stat', path, cause);
      }
      const prefix = new Uint8Array(8);
      const got = readFullySync(fd, prefix, 0, path);
      const n = readHeaderSize(prefix.subarray(0, got), size, path);
      const head = new Uint8Array(8 + n);
      head.set(prefix);
      const gotHeader = readFullySync(fd, head.subarray(8), 8, path);
      if (gotHeader < n) throw new SafetensorsTruncatedError('InvalidHeaderLength', `file ended inside the ${n}-byte header`, { file: path });
      const header = parseHeader(head, { file: path, fileSize: size });
      return new SafetensorsFile(path, fd, header, size, got + gotHeader);
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
  }

  /** Open `path` and read and validate its header without blocking the event loop. */
  static async openAsync(path: string): Promise<SafetensorsFile> {
    const fd = await new Promise<number>((resolve, reject) =>
      fs.open(path, 'r', (err, fd) => (err ? reject(ioError('open', path, err)) : resolve(fd))),
    );
    try {
      const size = await new Promise<number>((resolve, reject) =>
        fs.fstat(fd, (err, st) => (err ? reject(ioError('stat', path, err)) : resolve(st.size))),
      );
      const prefix = new Uint8Array(8);
      const got = await readFullyAsync(fd, prefix, 0, path);
      const n = readHeaderSize(prefix.subarray(0, got), size, path);
      const head = new Uint8Array(8 + n);
      head.set(prefix);
      const gotHeader = await readFullyAsync(fd, head.subarray(8), 8, path);
      if (gotHeader < n) throw new SafetensorsTruncatedError('InvalidHeaderLength', `file ended inside the ${n}-byte header`, { file: path });
      const header = parseHeader(head, { file: path, fileSize: size });
      return new SafetensorsFile(path, fd, header, size, got + gotHeader);
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
  }

  /** The `__metadata__` map, or `null` when the file has none. */
  get metadata(): Readonly<Record<string, string>> | null {
    return this.header.metadata;
  }

  /** Tensor names in file order. */
  keys(): string[] {
    return [...this.header.tensors.keys()];
  }

  /** True when the tensor exists. */
  has(name: string): boolean {
    return this.header.tensors.has(name);
  }

  /** Header information for `name`; throws `SafetensorsNotFoundError`. */
  info(name: string): TensorInfo {
    const info = this.header.tensors.get(name);
    if (info === undefined) throw new SafetensorsNotFoundError('TensorNotFound', 'no such tensor', { file: this.path, tensor: name });
    return info;
  }

  private openFd(name: string): number {
    if (this.fd === null || this.closing) throw new SafetensorsIoError('Closed', 'file is closed', { file: this.path, tensor: name });
    return this.fd;
  }

  private checkLength(info: TensorInfo, got: number): void {
    this.bytesRead += got;
    if (got < info.byteLength) {
      throw new SafetensorsTruncatedError('MetadataIncompleteBuffer', `file ended after ${got} of ${info.byteLength} bytes (was it truncated after opening?)`, {
        file: this.path,
        tensor: info.name,
      });
    }
  }

  /** Read the tensor's bytes into a fresh buffer (one positioned read, chunked above 1 GiB). */
  readBytes(name: string): Uint8Array {
    const info = this.info(name);
    const fd = this.openFd(name);
    const out = new Uint8Array(info.byteLength);
    this.checkLength(info, readFullySync(fd, out, this.header.dataStart + info.dataOffsets[0], this.path));
    return out;
  }

  /** Read bytes `[begin, end)` of the tensor (one positioned read). */
  readBytesRange(name: string, begin: number, end: number): Uint8Array {
    const info = this.info(name);
    checkRange(info, begin, end, this.path);
    const fd = this.openFd(name);
    const out = new Uint8Array(end - begin);
    const got = readFullySync(fd, out, this.header.dataStart + info.dataOffsets[0] + begin, this.path);
    this.bytesRead += got;
    if (got < out.length) throw new SafetensorsTruncatedError('MetadataIncompleteBuffer', `file ended after ${got} of ${out.length} bytes (was it truncated after opening?)`, { file: this.path, tensor: name });
    return out;
  }

  /** Read the tensor as its typed array. */
  read(name: string): Tensor {
    const info = this.info(name);
    return { dtype: info.dtype, shape: info.shape, data: toTypedArray(info.dtype, this.readBytes(name)) } as Tensor;
  }

  /** Async {@link SafetensorsFile.readBytes}; several may run at once. */
  async readBytesAsync(name: string): Promise<Uint8Array> {
    const info = this.info(name);
    const fd = this.openFd(name);
    const out = new Uint8Array(info.byteLength);
    this.pending++;
    let got: number;
    try {
      got = await readFullyAsync(fd, out, this.header.dataStart + info.dataOffsets[0], this.path);
    } finally {
      this.pending--;
      if (this.closing && this.pending === 0) this.release();
    }
    this.checkLength(info, got);
    return out;
  }

  /** Async {@link SafetensorsFile.read}. */
  async readAsync(name: string): Promise<Tensor> {
    const info = this.info(name);
    const bytes = await this.readBytesAsync(name);
    return { dtype: info.dtype, shape: info.shape, data: toTypedArray(info.dtype, bytes) } as Tensor;
  }

  /**
   * Close the file descriptor; idempotent. New reads fail at once; async reads already in
   * flight finish first and the descriptor is released after the last one.
   */
  close(): void {
    this.closing = true;
    if (this.pending === 0) this.release();
  }

  private release(): void {
    if (this.fd !== null) {
      const fd = this.fd;
      this.fd = null;
      fs.closeSync(fd);
    }
  }
}
