// The GGUF header (version 2 and 3, little-endian), parsed from bytes and validated:
//
//   magic "GGUF" · u32 version · u64 tensor_count · u64 kv_count
//   kv_count × (string key · u32 value_type · value)
//   tensor_count × (string name · u32 n_dims · n_dims × u64 ne · u32 ggml_type · u64 offset)
//   padding to `general.alignment` (default 32) · tensor data
//
// Strings are u64 length + UTF-8 bytes; arrays are u32 element type + u64 count + elements.
// `ne[0]` is the innermost (contiguous) dimension, so a PyTorch weight [out, in] has ne = [in, out].

import { GgufFormatError, GgufQuantTypeError, GgufTruncatedError } from './errors';
import { ggmlTypeById, rowBytes, type GgmlType } from './types';

/** GGUF metadata value type ids. */
export const GGUF_VALUE_TYPE = {
  u8: 0, i8: 1, u16: 2, i16: 3, u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9, u64: 10, i64: 11, f64: 12,
} as const;

/** A scalar GGUF value type name. */
export type GgufScalarType = Exclude<keyof typeof GGUF_VALUE_TYPE, 'array'>;

/** A metadata value as read: numbers (64-bit integers as numbers, exact up to 2^53), booleans, strings, and arrays of them. */
export type GgufValue = number | boolean | string | readonly number[] | readonly boolean[] | readonly string[];

/** One tensor of the tensor table. */
export interface GgufTensorInfo {
  /** Tensor name (e.g. `blk.0.attn_q.weight`). */
  readonly name: string;
  /** Dimensions in ggml order (ne[0] innermost). */
  readonly dims: readonly number[];
  /** Dimensions in row-major (PyTorch) order: dims reversed. */
  readonly shape: readonly number[];
  /** Storage type. */
  readonly type: GgmlType;
  /** Byte offset from the start of the file. */
  readonly offset: number;
  /** Byte size. */
  readonly bytes: number;
}

/** A parsed GGUF header. */
export interface GgufHeader {
  /** Format version (2 or 3). */
  readonly version: number;
  /** Metadata in file order. */
  readonly metadata: ReadonlyMap<string, GgufValue>;
  /** Stored value type of each metadata key (element type for arrays, as `array<f32>`). */
  readonly metadataTypes: ReadonlyMap<string, string>;
  /** Tensors in file order. */
  readonly tensors: readonly GgufTensorInfo[];
  /** `general.alignment`. */
  readonly alignment: number;
  /** Byte offset of the tensor data section. */
  readonly dataOffset: number;
}

/** Thrown internally when the bytes given end before the header does but the file is longer. */
export class NeedMoreBytes extends Error {}

const MAX_DIMS = 4;
const TYPE_NAMES = Object.fromEntries(Object.entries(GGUF_VALUE_TYPE).map(([k, v]) => [v, k])) as Record<number, string>;
const SCALAR_BYTES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

class Cursor {
  pos = 0;
  private readonly view: DataView;
  private readonly utf8 = new TextDecoder('utf-8', { fatal: true });
  constructor(private readonly bytes: Uint8Array, private readonly fileSize: number, private readonly file: string | undefined) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number, what: string): void {
    if (this.pos + n <= this.bytes.length) return;
    if (this.pos + n <= this.fileSize) throw new NeedMoreBytes();
    throw new GgufTruncatedError(`file ends inside ${what} (needs ${this.pos + n} bytes, has ${this.fileSize})`, this.ctx());
  }
  ctx(extra: { key?: string; tensor?: string } = {}): { file?: string; key?: string; tensor?: string } {
    return { ...(this.file !== undefined ? { file: this.file } : {}), ...extra };
  }
  u32(what: string): number { this.need(4, what); const v = this.view.getUint32(this.pos, true); this.pos += 4; return v; }
  u64(what: string): number {
    this.need(8, what);
    const v = this.view.getBigUint64(this.pos, true);
    this.pos += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufFormatError(`${what} ${v} is too large`, this.ctx());
    return Number(v);
  }
  string(what: string): string {
    const n = this.u64(`${what} length`);
    this.need(n, what);
    let s: string;
    try { s = this.utf8.decode(this.bytes.subarray(this.pos, this.pos + n)); } catch { throw new GgufFormatError(`${what} is not valid UTF-8`, this.ctx()); }
    this.pos += n;
    return s;
  }
  scalar(type: number, key: string): number | boolean | string {
    if (type === GGUF_VALUE_TYPE.string) return this.string(`value of ${key}`);
    const n = SCALAR_BYTES[type];
    if (n === undefined) throw new GgufFormatError(`unknown value type ${type}`, this.ctx({ key }));
    this.need(n, `value of ${key}`);
    const v = this.view, p = this.pos;
    this.pos += n;
    switch (type) {
      case 0: return v.getUint8(p);
      case 1: return v.getInt8(p);
      case 2: return v.getUint16(p, true);
      case 3: return v.getInt16(p, true);
      case 4: return v.getUint32(p, true);
      case 5: return v.getInt32(p, true);
      case 6: return v.getFloat32(p, true);
      case 7: {
        const b = v.getUint8(p);
        if (b > 1) throw new GgufFormatError(`bool value ${b} is neither 0 nor 1`, this.ctx({ key }));
        return b === 1;
      }
      case 10: case 11: {
        const big = type === 10 ? v.getBigUint64(p, true) : v.getBigInt64(p, true);
        if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < -BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufFormatError(`64-bit value ${big} is not exactly representable`, this.ctx({ key }));
        return Number(big);
      }
      default: return v.getFloat64(p, true);
    }
  }
}

function readValue(c: Cursor, key: string, types: Map<string, string>): GgufValue {
  const type = c.u32(`value type of ${key}`);
  if (type !== GGUF_VALUE_TYPE.array) {
    if (TYPE_NAMES[type] === undefined) throw new GgufFormatError(`unknown value type ${type}`, c.ctx({ key }));
    types.set(key, TYPE_NAMES[type]!);
    return c.scalar(type, key);
  }
  const elem = c.u32(`array type of ${key}`);
  if (elem === GGUF_VALUE_TYPE.array || TYPE_NAMES[elem] === undefined) throw new GgufFormatError(`unsupported array element type ${elem}`, c.ctx({ key }));
  const count = c.u64(`array length of ${key}`);
  // Every element takes at least one byte (eight for a string): reject impossible counts before allocating.
  c.need(count * (elem === GGUF_VALUE_TYPE.string ? 8 : SCALAR_BYTES[elem]!), `array ${key}`);
  types.set(key, `array<${TYPE_NAMES[elem]}>`);
  const out: (number | boolean | string)[] = new Array(count);
  for (let i = 0; i < count; i++) out[i] = c.scalar(elem, key);
  return out as GgufValue;
}

/**
 * Parse and validate a GGUF header from the first `bytes.length` bytes of a file of `fileSize`
 * bytes. Throws `NeedMoreBytes` when the header continues past `bytes` (read more and call again),
 * and typed errors for everything malformed: GgufTruncatedError, GgufFormatError,
 * GgufQuantTypeError (naming the tensor).
 */
export function parseHeader(bytes: Uint8Array, fileSize: number, file?: string): GgufHeader {
  const c = new Cursor(bytes, fileSize, file);
  c.need(4, 'the magic');
  if (bytes[0] !== 0x47 || bytes[1] !== 0x47 || bytes[2] !== 0x55 || bytes[3] !== 0x46) throw new GgufFormatError('not a GGUF file (magic is not "GGUF")', c.ctx());
  c.pos = 4;
  const version = c.u32('the version');
  if (version !== 2 && version !== 3) throw new GgufFormatError(`unsupported GGUF version ${version} (2 or 3)`, c.ctx());
  const nTensors = c.u64('the tensor count');
  const nKv = c.u64('the metadata count');
  const metadata = new Map<string, GgufValue>();
  const types = new Map<string, string>();
  for (let i = 0; i < nKv; i++) {
    const key = c.string(`metadata key #${i}`);
    if (metadata.has(key)) throw new GgufFormatError('duplicate metadata key', c.ctx({ key }));
    metadata.set(key, readValue(c, key, types));
  }
  const alignment = metadata.get('general.alignment') ?? 32;
  if (typeof alignment !== 'number' || !Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new GgufFormatError(`alignment ${String(alignment)} is not a power of two`, c.ctx({ key: 'general.alignment' }));
  }
  const raw: { name: string; dims: number[]; type: GgmlType; rel: number; bytes: number }[] = [];
  const names = new Set<string>();
  for (let i = 0; i < nTensors; i++) {
    const name = c.string(`tensor name #${i}`);
    if (names.has(name)) throw new GgufFormatError('duplicate tensor name', c.ctx({ tensor: name }));
    names.add(name);
    const nDims = c.u32(`dimension count of ${name}`);
    if (nDims < 1 || nDims > MAX_DIMS) throw new GgufFormatError(`${nDims} dimensions (1 to ${MAX_DIMS})`, c.ctx({ tensor: name }));
    const dims: number[] = [];
    let numel = 1;
    for (let d = 0; d < nDims; d++) {
      const ne = c.u64(`dimension ${d} of ${name}`);
      if (ne < 1) throw new GgufFormatError(`dimension ${d} is ${ne}`, c.ctx({ tensor: name }));
      dims.push(ne);
      numel *= ne;
    }
    if (!Number.isSafeInteger(numel)) throw new GgufFormatError(`element count of [${dims}] overflows`, c.ctx({ tensor: name }));
    const typeId = c.u32(`type of ${name}`);
    const type = ggmlTypeById(typeId);
    if (!type) throw new GgufQuantTypeError(`unknown or unsupported ggml type ${typeId} (F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q6_K)`, c.ctx({ tensor: name }));
    if (dims[0]! % type.blockSize !== 0) throw new GgufFormatError(`row length ${dims[0]} is not a multiple of the ${type.name} block size ${type.blockSize}`, c.ctx({ tensor: name }));
    const rel = c.u64(`offset of ${name}`);
    if (rel % alignment !== 0) throw new GgufFormatError(`offset ${rel} is not aligned to ${alignment}`, c.ctx({ tensor: name }));
    raw.push({ name, dims, type, rel, bytes: rowBytes(type, dims[0]!) * (numel / dims[0]!) });
  }
  const dataOffset = Math.ceil(c.pos / alignment) * alignment;
  // Tensors must not overlap (in offset order) and must end inside the file.
  const sorted = [...raw].sort((a, b) => a.rel - b.rel);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!, cur = sorted[i]!;
    if (prev.rel + prev.bytes > cur.rel) throw new GgufFormatError(`data overlaps tensor "${prev.name}"`, c.ctx({ tensor: cur.name }));
  }
  for (const t of raw) {
    if (dataOffset + t.rel + t.bytes > fileSize) {
      throw new GgufTruncatedError(`data [${dataOffset + t.rel}, ${dataOffset + t.rel + t.bytes}) ends past the end of the file (${fileSize} bytes)`, c.ctx({ tensor: t.name }));
    }
  }
  const tensors = raw.map((t) => ({ name: t.name, dims: t.dims, shape: [...t.dims].reverse(), type: t.type, offset: dataOffset + t.rel, bytes: t.bytes }));
  return { version, metadata, metadataTypes: types, tensors, alignment, dataOffset };
}
