// Serialization: lay out tensors the way the reference writer does (`prepare()` in
// huggingface/safetensors `tensor.rs`) so our files are byte-identical to theirs:
//   1. sort by descending dtype rank (reference enum order), then by name (code point order);
//   2. assign contiguous offsets from 0;
//   3. header JSON = {"__metadata__":{...},"name":{"dtype":..,"shape":[..],"data_offsets":[b,e]},...}
//      with no whitespace, then right-padded with spaces to a multiple of 8 bytes so the data
//      buffer starts 8-aligned.

import { DTYPE_INFO, isDtype, type Dtype } from './dtype.js';
import {
  SafetensorsDtypeError,
  SafetensorsHeaderError,
  SafetensorsShapeError,
  SafetensorsSizeError,
  SafetensorsWriteError,
} from './errors.js';
import { MAX_HEADER_SIZE, METADATA_KEY } from './header.js';

/** One tensor to write. `data` holds exactly `numel * bits / 8` little-endian bytes. */
export interface TensorEntry {
  /** Element type. */
  readonly dtype: Dtype;
  /** Dimensions, row-major; `[]` for a scalar. */
  readonly shape: readonly number[];
  /**
   * The bytes, as any typed array / DataView over them, or a function producing them when the
   * writer reaches this tensor (lets multi-GB checkpoints be written one tensor at a time).
   */
  readonly data: ArrayBufferView | (() => ArrayBufferView);
}

/** Tensors to write: a plain object, a `Map`, or any iterable of `[name, entry]` pairs. */
export type TensorEntries = Readonly<Record<string, TensorEntry>> | Iterable<readonly [string, TensorEntry]>;

/**
 * `__metadata__` to write. `undefined` writes `{"format":"pt"}` (what Transformers expects); an
 * object is merged over that default (so `{ format: 'mlx' }` overrides it); `null` writes no
 * `__metadata__` at all.
 */
export type MetadataInput = Readonly<Record<string, string>> | null | undefined;

/** A tensor with its place in the data buffer. */
export interface PlannedTensor {
  /** Tensor name. */
  readonly name: string;
  /** The caller's entry. */
  readonly entry: TensorEntry;
  /** Byte size, `numel * bits / 8`. */
  readonly byteLength: number;
  /** Offset of the first byte within the data buffer. */
  readonly begin: number;
}

/** The complete layout of a file, before any tensor bytes are touched. */
export interface SerializationPlan {
  /** The 8-byte length followed by the padded JSON header. */
  readonly header: Uint8Array;
  /** Tensors in write order. */
  readonly tensors: readonly PlannedTensor[];
  /** Length of the data buffer. */
  readonly dataSize: number;
  /** Total file size, `header.length + dataSize`. */
  readonly fileSize: number;
}

const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** `[name, entry]` pairs of any {@link TensorEntries}. */
export function entryList(entries: TensorEntries): Array<readonly [string, TensorEntry]> {
  return Symbol.iterator in entries
    ? [...(entries as Iterable<readonly [string, TensorEntry]>)]
    : Object.entries(entries as Record<string, TensorEntry>);
}

/** Apply the {@link MetadataInput} defaults and check every key and value is a well-formed string. */
export function resolveMetadata(metadata: MetadataInput, file?: string): Record<string, string> | null {
  if (metadata === null) return null;
  const out: Record<string, string> = { format: 'pt', ...metadata };
  for (const [key, value] of Object.entries(out)) {
    if (typeof value !== 'string' || LONE_SURROGATE.test(key) || LONE_SURROGATE.test(value)) {
      throw new SafetensorsWriteError('InvalidMetadata', `${METADATA_KEY}[${JSON.stringify(key)}] must be a well-formed string`, { file });
    }
  }
  return out;
}

/**
 * Validate one entry and return its byte size: known dtype, shape of non-negative safe integers,
 * a whole number of bytes (sub-byte dtypes), and, when `data` is given eagerly, a matching byte length.
 */
export function entryByteLength(name: string, entry: TensorEntry, file?: string): number {
  const at = { file, tensor: name };
  if (typeof name !== 'string' || name === METADATA_KEY || LONE_SURROGATE.test(name)) {
    throw new SafetensorsWriteError('InvalidTensorName', `tensor name must be a well-formed string other than ${METADATA_KEY}`, at);
  }
  if (!isDtype(entry.dtype)) throw new SafetensorsDtypeError('UnknownDtype', `unknown dtype ${JSON.stringify(entry.dtype)}`, at);
  if (!Array.isArray(entry.shape) || !entry.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new SafetensorsShapeError('InvalidShape', 'shape must be an array of non-negative safe integers', at);
  }
  const numel = entry.shape.reduce((a: number, b: number) => a * b, 1);
  const bits = numel * DTYPE_INFO[entry.dtype].bits;
  if (!Number.isSafeInteger(bits)) {
    throw new SafetensorsSizeError('ValidationOverflow', `shape [${entry.shape.join(', ')}] ${entry.dtype} is too large`, at);
  }
  if (bits % 8 !== 0) {
    throw new SafetensorsSizeError('MisalignedSlice', `${numel} ${entry.dtype} elements take ${bits} bits, which does not end on a byte boundary`, at);
  }
  if (typeof entry.data !== 'function') checkDataLength(name, entry, bits / 8, entry.data, file);
  return bits / 8;
}

function checkDataLength(name: string, entry: TensorEntry, byteLength: number, data: unknown, file: string | undefined): Uint8Array {
  if (!ArrayBuffer.isView(data)) {
    throw new SafetensorsSizeError('InvalidTensorView', 'data must be a typed array or DataView', { file, tensor: name });
  }
  if (data.byteLength !== byteLength) {
    throw new SafetensorsSizeError(
      'InvalidTensorView',
      `shape [${entry.shape.join(', ')}] ${entry.dtype} needs ${byteLength} bytes but data has ${data.byteLength}`,
      { file, tensor: name },
    );
  }
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** The bytes of a planned tensor (calls a lazy producer), checked against the planned size. */
export function tensorBytes(t: PlannedTensor, file?: string): Uint8Array {
  const data = typeof t.entry.data === 'function' ? t.entry.data() : t.entry.data;
  return checkDataLength(t.name, t.entry, t.byteLength, data, file);
}

/** Order of the reference writer: descending dtype rank, then name in code point (UTF-8 byte) order. */
export function compareForWrite(a: readonly [string, Dtype], b: readonly [string, Dtype]): number {
  const rank = DTYPE_INFO[b[1]].rank - DTYPE_INFO[a[1]].rank;
  return rank !== 0 ? rank : compareCodePoints(a[0], b[0]);
}

/** Compare strings by Unicode code point, which is UTF-8 byte order (plain `<` compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointKey(x) - codePointKey(y);
  }
  return a.length - b.length;
}

// Surrogates (lead units of code points >= U+10000) must sort after U+E000..U+FFFF.
function codePointKey(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}

const UTF8 = new TextEncoder();

/** Validate everything and compute the layout and header bytes; no tensor bytes are read yet (lazy producers are not called). */
export function planSerialization(entries: TensorEntries, metadata: MetadataInput, file?: string): SerializationPlan {
  const list = entryList(entries);
  const seen = new Set<string>();
  const sized = list.map(([name, entry]) => {
    const byteLength = entryByteLength(name, entry, file);
    if (seen.has(name)) throw new SafetensorsWriteError('InvalidTensorName', 'duplicate tensor name', { file, tensor: name });
    seen.add(name);
    return { name, entry, byteLength };
  });
  sized.sort((a, b) => compareForWrite([a.name, a.entry.dtype], [b.name, b.entry.dtype]));

  const meta = resolveMetadata(metadata, file);
  const parts: string[] = [];
  if (meta !== null) {
    const kv = Object.entries(meta).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
    parts.push(`"${METADATA_KEY}":{${kv.join(',')}}`);
  }
  let offset = 0;
  const tensors: PlannedTensor[] = [];
  for (const t of sized) {
    const begin = offset;
    offset += t.byteLength;
    if (!Number.isSafeInteger(offset)) throw new SafetensorsSizeError('ValidationOverflow', 'total data size exceeds 2^53 - 1 bytes', { file, tensor: t.name });
    tensors.push({ name: t.name, entry: t.entry, byteLength: t.byteLength, begin });
    parts.push(
      `${JSON.stringify(t.name)}:{"dtype":"${t.entry.dtype}","shape":[${t.entry.shape.join(',')}],"data_offsets":[${begin},${offset}]}`,
    );
  }
  const text = `{${parts.join(',')}}`;
  // UTF-8 never takes fewer bytes than UTF-16 code units, so a long string is too large unencoded.
  const json = text.length > MAX_HEADER_SIZE ? { length: text.length } : UTF8.encode(text);
  const n = Math.ceil(json.length / 8) * 8;
  if (n > MAX_HEADER_SIZE || !(json instanceof Uint8Array)) {
    throw new SafetensorsHeaderError('HeaderTooLarge', `header would be ${n} bytes, over the ${MAX_HEADER_SIZE}-byte limit`, { file });
  }
  const header = new Uint8Array(8 + n).fill(0x20, 8 + json.length);
  new DataView(header.buffer).setBigUint64(0, BigInt(n), true);
  header.set(json, 8);
  return { header, tensors, dataSize: offset, fileSize: header.length + offset };
}

/**
 * Serialize tensors to one in-memory safetensors file, byte-identical to the reference writer
 * given the same metadata. See {@link MetadataInput} for the `__metadata__` default.
 */
export function serialize(entries: TensorEntries, metadata?: MetadataInput): Uint8Array {
  const plan = planSerialization(entries, metadata);
  const out = new Uint8Array(plan.fileSize);
  out.set(plan.header, 0);
  for (const t of plan.tensors) out.set(tensorBytes(t), plan.header.length + t.begin);
  return out;
}
