// A GGUF file opened for lazy reads: the header is parsed (reading only as many bytes as it
// takes), tensors are read one at a time when asked for. The bytes come from a source: bytes in
// memory (`GgufFile.fromBytes`: a browser's File or fetch response) or, in Node, a file
// descriptor (`openGgufFile` in open.ts).

import { GgufError, GgufIoError } from './errors';
import { NeedMoreBytes, parseHeader, type GgufHeader, type GgufTensorInfo, type GgufValue } from './header';

const FIRST_READ = 1 << 20;

/** Where a GGUF file's bytes are read from. */
export interface GgufByteSource {
  /** Size in bytes. */
  readonly size: number;
  /** Fill `bytes` from byte `position` on (GgufIoError when the source ends first). */
  readAt(bytes: Uint8Array, position: number): void;
  /** Release the source (reads fail afterwards). */
  close(): void;
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
  private source: GgufByteSource | null;
  private readonly byName: Map<string, GgufTensorInfo>;

  private constructor(path: string, source: GgufByteSource, header: GgufHeader) {
    this.path = path;
    this.source = source;
    this.size = source.size;
    this.version = header.version;
    this.metadata = header.metadata;
    this.metadataTypes = header.metadataTypes;
    this.tensors = header.tensors;
    this.alignment = header.alignment;
    this.dataOffset = header.dataOffset;
    this.byName = new Map(header.tensors.map((t) => [t.name, t]));
  }

  /**
   * Validate the file read from `source` (typed errors name `path` and the key or tensor at
   * fault); the source is closed when that fails.
   */
  static fromSource(source: GgufByteSource, path: string): GgufFile {
    try {
      const size = source.size;
      for (let n = Math.min(size, FIRST_READ); ; n = Math.min(size, n * 4)) {
        const bytes = new Uint8Array(n);
        source.readAt(bytes, 0);
        try {
          return new GgufFile(path, source, parseHeader(bytes, size, path));
        } catch (e) {
          if (!(e instanceof NeedMoreBytes)) throw e;
        }
      }
    } catch (e) {
      source.close();
      if (e instanceof GgufError) throw e;
      throw new GgufIoError(`cannot read (${(e as Error).message})`, { file: path, cause: e });
    }
  }

  /** A file held in memory (e.g. a browser's `File` or `fetch` response, read into bytes); `name` names it in errors. */
  static fromBytes(bytes: Uint8Array, name: string): GgufFile {
    let data: Uint8Array | null = bytes;
    return GgufFile.fromSource({
      size: bytes.length,
      readAt(out, position) {
        if (data === null) throw new GgufIoError('file is closed', { file: name });
        if (position + out.length > data.length) throw new GgufIoError(`short read at byte ${data.length}`, { file: name });
        out.set(data.subarray(position, position + out.length));
      },
      close() {
        data = null;
      },
    }, name);
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
    if (this.source === null) throw new GgufIoError('file is closed', { file: this.path, tensor: name });
    const bytes = new Uint8Array(t.bytes);
    this.source.readAt(bytes, t.offset);
    return bytes;
  }

  /** Close the source (reads fail afterwards). */
  close(): void {
    this.source?.close();
    this.source = null;
  }
}
