// In-memory reader: the whole file is already a Uint8Array (or Node Buffer).

import { toTypedArray } from './dtype.js';
import { SafetensorsNotFoundError } from './errors.js';
import { checkRange, parseHeader, type SafetensorsHeader, type TensorInfo } from './header.js';
import type { Tensor, TensorReader } from './reader.js';

/**
 * A validated safetensors file held in memory. `readBytes` returns zero-copy views into the
 * given bytes; `read` is zero-copy when the tensor's absolute address is aligned to its element
 * size and copies into a fresh aligned buffer otherwise.
 */
export class SafetensorsBuffer implements TensorReader {
  /** The parsed header. */
  readonly header: SafetensorsHeader;

  /** Parse and validate `bytes` (the complete file); `file` labels errors. */
  constructor(
    readonly bytes: Uint8Array,
    readonly file?: string,
  ) {
    this.header = parseHeader(bytes, { file });
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
    if (info === undefined) throw new SafetensorsNotFoundError('TensorNotFound', 'no such tensor', { file: this.file, tensor: name });
    return info;
  }

  /** Zero-copy view of the tensor's bytes. */
  readBytes(name: string): Uint8Array {
    const info = this.info(name);
    const start = this.header.dataStart + info.dataOffsets[0];
    return this.bytes.subarray(start, start + info.byteLength);
  }

  /** Bytes `[begin, end)` of the tensor (a zero-copy view). */
  readBytesRange(name: string, begin: number, end: number): Uint8Array {
    const info = this.info(name);
    checkRange(info, begin, end, this.file);
    const start = this.header.dataStart + info.dataOffsets[0];
    return this.bytes.subarray(start + begin, start + end);
  }

  /** The tensor as its typed array (zero-copy when aligned). */
  read(name: string): Tensor {
    const info = this.info(name);
    return { dtype: info.dtype, shape: info.shape, data: toTypedArray(info.dtype, this.readBytes(name)) } as Tensor;
  }

  /** Same as {@link SafetensorsBuffer.readBytes}, as a promise. */
  readBytesAsync(name: string): Promise<Uint8Array> {
    return new Promise((resolve) => resolve(this.readBytes(name)));
  }

  /** Same as {@link SafetensorsBuffer.read}, as a promise. */
  readAsync(name: string): Promise<Tensor> {
    return new Promise((resolve) => resolve(this.read(name)));
  }

  /** Nothing to release in memory. */
  close(): void {}
}

/** Parse a complete in-memory safetensors file (validated); `file` labels errors. */
export function deserialize(bytes: Uint8Array, file?: string): SafetensorsBuffer {
  return new SafetensorsBuffer(bytes, file);
}
