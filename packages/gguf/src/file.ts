// A GGUF file opened for lazy reads: the header is parsed (reading only as many bytes as it
// takes), tensors are read one at a time when asked for.

import fs from 'node:fs';
import { GgufError, GgufIoError } from './errors';
import { NeedMoreBytes, parseHeader, type GgufHeader, type GgufTensorInfo, type GgufValue } from './header';

const FIRST_READ = 1 << 20;

function readAt(fd: number, bytes: Uint8Array, position: number, file: string): void {
  let done = 0;
  while (done < bytes.length) {
    const n = fs.readSync(fd, bytes, done, bytes.length - done, position + done);
    if (n === 0) throw new GgufIoError(`short read at byte ${position + done}`, { file });
    done += n;
  }
}

/** An open GGUF file. */
export class GgufFile implements GgufHeader {
  readonly version: number;
  readonly metadata: ReadonlyMap<string, GgufValue>;
  readonly metadataTypes: ReadonlyMap<string, string>;
  readonly tensors: readonly GgufTensorInfo[];
  readonly alignment: number;
  readonly dataOffset: number;
  /** Path of the file. */
  readonly path: string;
  /** Size in bytes. */
  readonly size: number;
  private fd: number | null;
  private readonly byName: Map<string, GgufTensorInfo>;

  private constructor(path: string, fd: number, size: number, header: GgufHeader) {
    this.path = path;
    this.fd = fd;
    this.size = size;
    this.version = header.version;
    this.metadata = header.metadata;
    this.metadataTypes = header.metadataTypes;
    this.tensors = header.tensors;
    this.alignment = header.alignment;
    this.dataOffset = header.dataOffset;
    this.byName = new Map(header.tensors.map((t) => [t.name, t]));
  }

  /** Open and validate a file (typed errors name the file and the key or tensor at fault). */
  static open(path: string): GgufFile {
    let fd: number;
    try { fd = fs.openSync(path, 'r'); } catch (e) { throw new GgufIoError(`cannot open (${(e as Error).message})`, { file: path, cause: e }); }
    try {
      const size = fs.fstatSync(fd).size;
      for (let n = Math.min(size, FIRST_READ); ; n = Math.min(size, n * 4)) {
        const bytes = new Uint8Array(n);
        readAt(fd, bytes, 0, path);
        try {
          return new GgufFile(path, fd, size, parseHeader(bytes, size, path));
        } catch (e) {
          if (!(e instanceof NeedMoreBytes)) throw e;
        }
      }
    } catch (e) {
      fs.closeSync(fd);
      if (e instanceof GgufError) throw e;
      throw new GgufIoError(`cannot read (${(e as Error).message})`, { file: path, cause: e });
    }
  }

  /** Whether the file has a tensor of that name. */
  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The table entry of a tensor (GgufError naming it when absent). */
  info(name: string): GgufTensorInfo {
    const t = this.byName.get(name);
    if (!t) throw new GgufError('no such tensor', { file: this.path, tensor: name });
    return t;
  }

  /** The stored bytes of a tensor (a fresh copy, read now). */
  read(name: string): Uint8Array {
    const t = this.info(name);
    if (this.fd === null) throw new GgufIoError('file is closed', { file: this.path, tensor: name });
    const bytes = new Uint8Array(t.bytes);
    readAt(this.fd, bytes, t.offset, this.path);
    return bytes;
  }

  /** Close the file descriptor (reads fail afterwards). */
  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}
