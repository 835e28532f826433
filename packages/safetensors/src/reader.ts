// What every reader returns and offers: in-memory (`deserialize`), lazy single file
// (`SafetensorsFile`) and sharded checkpoints (`ShardedCheckpoint`) share this interface.

import type { Dtype, DtypeArrayMap } from './dtype.js';
import type { TensorInfo } from './header.js';

/**
 * A tensor read from a file: dtype, shape and data as the dtype's typed array.
 * A discriminated union on `dtype`, so `if (t.dtype === 'BF16') t.data` is a `Uint16Array`.
 */
export type Tensor = {
  [D in Dtype]: {
    /** Element type. */
    readonly dtype: D;
    /** Dimensions, row-major. */
    readonly shape: readonly number[];
    /** Elements (raw bits for F16/BF16, raw bytes for fp8 and sub-byte dtypes). */
    readonly data: DtypeArrayMap[D];
  };
}[Dtype];

/** Read access to a set of named tensors. */
export interface TensorReader {
  /** Tensor names (in file order for single files, index order for sharded checkpoints). */
  keys(): string[];
  /** True when the tensor exists. */
  has(name: string): boolean;
  /** Header information (dtype, shape, offsets, byte size); throws `SafetensorsNotFoundError`. */
  info(name: string): TensorInfo;
  /** The tensor's raw little-endian bytes. */
  readBytes(name: string): Uint8Array;
  /**
   * Bytes `[begin, end)` of the tensor's data (e.g. some of a matrix's rows, so that a tensor larger
   * than memory can be streamed); `SafetensorsOffsetError` (`InvalidOffset`) outside the tensor.
   */
  readBytesRange(name: string, begin: number, end: number): Uint8Array;
  /** The tensor as a typed array (see {@link Tensor}). */
  read(name: string): Tensor;
  /** Async {@link TensorReader.readBytes}. */
  readBytesAsync(name: string): Promise<Uint8Array>;
  /** Async {@link TensorReader.read}. */
  readAsync(name: string): Promise<Tensor>;
  /** Release file handles (no-op in memory). Reads after `close()` throw `SafetensorsIoError`. */
  close(): void;
}
