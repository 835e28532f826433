// The safetensors dtype table: names, bit sizes, and the JS typed array each one is read as.
//
// The order of `DTYPES` is the order of the reference `Dtype` enum (huggingface/safetensors
// `safetensors/src/tensor.rs`). The reference writer sorts tensors by *descending enum order*
// ("descending dtype alignment") and then by name, so this order is part of the byte layout.

import { SafetensorsDtypeError, SafetensorsSizeError } from './errors.js';

/** Every dtype name the format defines, in the reference enum order (ascending alignment). */
export const DTYPES = [
  'BOOL',
  'F4',
  'F6_E2M3',
  'F6_E3M2',
  'U8',
  'I8',
  'F8_E5M2',
  'F8_E4M3',
  'F8_E8M0',
  'F8_E4M3FNUZ',
  'F8_E5M2FNUZ',
  'I16',
  'U16',
  'F16',
  'BF16',
  'I32',
  'U32',
  'F32',
  'C64',
  'F64',
  'I64',
  'U64',
] as const;

/** A safetensors dtype name, e.g. `"BF16"`. */
export type Dtype = (typeof DTYPES)[number];

/**
 * The typed array a tensor of each dtype is returned as.
 * 16-bit floats (`F16`, `BF16`) are raw bits in a `Uint16Array` (conversion to f32 belongs to
 * `@apertus/tensor`); `C64` is interleaved `[re0, im0, re1, im1, ...]` in a `Float32Array`;
 * `BOOL`, the fp8 kinds and the sub-byte kinds (`F4`, `F6_*`, packed) are raw `Uint8Array` bytes.
 */
export interface DtypeArrayMap {
  BOOL: Uint8Array;
  F4: Uint8Array;
  F6_E2M3: Uint8Array;
  F6_E3M2: Uint8Array;
  U8: Uint8Array;
  I8: Int8Array;
  F8_E5M2: Uint8Array;
  F8_E4M3: Uint8Array;
  F8_E8M0: Uint8Array;
  F8_E4M3FNUZ: Uint8Array;
  F8_E5M2FNUZ: Uint8Array;
  I16: Int16Array;
  U16: Uint16Array;
  F16: Uint16Array;
  BF16: Uint16Array;
  I32: Int32Array;
  U32: Uint32Array;
  F32: Float32Array;
  C64: Float32Array;
  F64: Float64Array;
  I64: BigInt64Array;
  U64: BigUint64Array;
}

/** Any typed array a tensor can be returned as. */
export type TensorArray = DtypeArrayMap[Dtype];

/** Description of one dtype. */
export interface DtypeInfo {
  /** The dtype name as written in headers. */
  readonly name: Dtype;
  /** Bits per element (4, 6, 8, 16, 32 or 64; `BOOL` takes 8, `C64` 64). */
  readonly bits: number;
  /** Position in the reference enum; the writer orders tensors by descending `rank`. */
  readonly rank: number;
  /** Byte size of one element of the returned typed array (1, 2, 4 or 8). */
  readonly arrayElementBytes: 1 | 2 | 4 | 8;
}

type ArrayCtor = {
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): TensorArray;
  readonly BYTES_PER_ELEMENT: number;
};

const BITS: Record<Dtype, number> = {
  BOOL: 8,
  F4: 4,
  F6_E2M3: 6,
  F6_E3M2: 6,
  U8: 8,
  I8: 8,
  F8_E5M2: 8,
  F8_E4M3: 8,
  F8_E8M0: 8,
  F8_E4M3FNUZ: 8,
  F8_E5M2FNUZ: 8,
  I16: 16,
  U16: 16,
  F16: 16,
  BF16: 16,
  I32: 32,
  U32: 32,
  F32: 32,
  C64: 64,
  F64: 64,
  I64: 64,
  U64: 64,
};

const CTORS: Record<Dtype, ArrayCtor> = {
  BOOL: Uint8Array,
  F4: Uint8Array,
  F6_E2M3: Uint8Array,
  F6_E3M2: Uint8Array,
  U8: Uint8Array,
  I8: Int8Array,
  F8_E5M2: Uint8Array,
  F8_E4M3: Uint8Array,
  F8_E8M0: Uint8Array,
  F8_E4M3FNUZ: Uint8Array,
  F8_E5M2FNUZ: Uint8Array,
  I16: Int16Array,
  U16: Uint16Array,
  F16: Uint16Array,
  BF16: Uint16Array,
  I32: Int32Array,
  U32: Uint32Array,
  F32: Float32Array,
  C64: Float32Array,
  F64: Float64Array,
  I64: BigInt64Array,
  U64: BigUint64Array,
};

/** Bit size, enum rank and array element size of every dtype. */
export const DTYPE_INFO: Readonly<Record<Dtype, DtypeInfo>> = Object.freeze(
  Object.fromEntries(
    DTYPES.map((name, rank) => [
      name,
      Object.freeze({
        name,
        bits: BITS[name],
        rank,
        arrayElementBytes: CTORS[name].BYTES_PER_ELEMENT as 1 | 2 | 4 | 8,
      }),
    ]),
  ) as Record<Dtype, DtypeInfo>,
);

const DTYPE_SET: ReadonlySet<string> = new Set(DTYPES);

/** True when `value` is one of the dtype names in {@link DTYPES}. */
export function isDtype(value: unknown): value is Dtype {
  return typeof value === 'string' && DTYPE_SET.has(value);
}

const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * View raw little-endian tensor bytes as the dtype's typed array ({@link DtypeArrayMap}).
 * Zero-copy when `bytes.byteOffset` is a multiple of the element size, otherwise the bytes are
 * copied into a fresh (aligned) buffer. Throws a `SafetensorsSizeError` when the byte length is
 * not a whole number of array elements, or a `SafetensorsDtypeError` on a big-endian host (the format is little-endian).
 */
export function toTypedArray<D extends Dtype>(dtype: D, bytes: Uint8Array): DtypeArrayMap[D] {
  const ctor = CTORS[dtype];
  const size = ctor.BYTES_PER_ELEMENT;
  if (bytes.byteLength % size !== 0) {
    throw new SafetensorsSizeError(
      'InvalidTensorView',
      `${bytes.byteLength} bytes is not a whole number of ${dtype} elements (${size} bytes each)`,
    );
  }
  if (size > 1 && !LITTLE_ENDIAN_HOST) {
    throw new SafetensorsDtypeError('BigEndianHost', 'safetensors data is little-endian; this host is big-endian');
  }
  let source = bytes;
  if (bytes.byteOffset % size !== 0) {
    source = new Uint8Array(bytes.byteLength);
    source.set(bytes);
  }
  return new ctor(source.buffer, source.byteOffset, source.byteLength / size) as DtypeArrayMap[D];
}
