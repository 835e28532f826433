// Parse and validate a safetensors header.
//
// Layout (huggingface/safetensors README "Format"):
//   bytes 0..8        N, unsigned 64-bit little-endian
//   bytes 8..8+N      UTF-8 JSON object, starts with '{', may be right-padded with whitespace
//                     { "__metadata__": {str: str}?, name: {dtype, shape, data_offsets: [begin, end]} }
//   bytes 8+N..       data buffer; offsets are relative to its start, `end` exclusive
//
// Rules enforced (reference `Metadata::validate` + `read_metadata`, plus duplicate keys):
//   N <= 100_000_000, 8 + N <= file size, header starts with '{', is UTF-8 and JSON;
//   sorted by offsets, tensors are contiguous from 0 (no holes, no overlaps, begin <= end);
//   numel * bits fits in u64, is a whole number of bytes, and equals (end - begin) * 8;
//   8 + N + last_end == file size.

import { DTYPE_INFO, isDtype, type Dtype } from './dtype.js';
import {
  SafetensorsDtypeError,
  SafetensorsHeaderError,
  SafetensorsOffsetError,
  SafetensorsShapeError,
  SafetensorsSizeError,
  SafetensorsTrailingDataError,
  SafetensorsTruncatedError,
} from './errors.js';
import { JsonNumber, jsonSafeUint, parseJson, type JsonValue } from './json.js';

/** Largest header the reader accepts, in bytes (reference `MAX_HEADER_SIZE`). */
export const MAX_HEADER_SIZE = 100_000_000;

/** Key of the optional string-to-string metadata map in the header. */
export const METADATA_KEY = '__metadata__';

/** Everything the header says about one tensor. */
export interface TensorInfo {
  /** Tensor name (header key). */
  readonly name: string;
  /** Element type. */
  readonly dtype: Dtype;
  /** Dimensions, row-major; `[]` is a scalar. */
  readonly shape: readonly number[];
  /** `[begin, end)` byte range relative to the start of the data buffer. */
  readonly dataOffsets: readonly [number, number];
  /** `end - begin`, equal to `numel * bits / 8`. */
  readonly byteLength: number;
  /** Number of elements (product of `shape`). */
  readonly numel: number;
}

/** `[begin, end)` must be a byte range inside tensor `info` (SafetensorsOffsetError naming it otherwise). */
export function checkRange(info: TensorInfo, begin: number, end: number, file?: string): void {
  if (!(Number.isInteger(begin) && Number.isInteger(end) && begin >= 0 && begin <= end && end <= info.byteLength)) {
    throw new SafetensorsOffsetError('InvalidOffset', `byte range [${begin}, ${end}) is not inside the tensor's ${info.byteLength} bytes`, { ...(file !== undefined ? { file } : {}), tensor: info.name });
  }
}

/** A parsed, validated header. */
export interface SafetensorsHeader {
  /** `N`, the JSON header length in bytes (padding included). */
  readonly headerSize: number;
  /** Absolute file offset of the data buffer: `8 + N`. */
  readonly dataStart: number;
  /** Length of the data buffer: the last tensor's `end` (0 when there are no tensors). */
  readonly dataSize: number;
  /** The `__metadata__` map, or `null` when the header has none. */
  readonly metadata: Readonly<Record<string, string>> | null;
  /** Tensors in data-offset order (the order they lie in the file). */
  readonly tensors: ReadonlyMap<string, TensorInfo>;
}

/** Options of {@link parseHeader}. */
export interface ParseHeaderOptions {
  /** File name used in error messages. */
  readonly file?: string;
  /**
   * Total size of the file the header comes from. Defaults to `bytes.length`, i.e. `bytes` is the
   * whole file. Pass it when `bytes` holds only the first `8 + N` bytes (lazy reading).
   */
  readonly fileSize?: number;
}

/**
 * Read the 8-byte little-endian header length `N` and check it against {@link MAX_HEADER_SIZE}
 * and the file size. Throws `SafetensorsTruncatedError` (`HeaderTooSmall`, `InvalidHeaderLength`)
 * or `SafetensorsHeaderError` (`HeaderTooLarge`).
 */
export function readHeaderSize(prefix: Uint8Array, fileSize: number, file?: string): number {
  if (prefix.length < 8 || fileSize < 8) {
    throw new SafetensorsTruncatedError('HeaderTooSmall', `file is ${Math.min(prefix.length, fileSize)} bytes, shorter than the 8-byte header length`, { file });
  }
  const n = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_SIZE)) {
    throw new SafetensorsHeaderError('HeaderTooLarge', `header length ${n} exceeds the limit of ${MAX_HEADER_SIZE} bytes`, { file });
  }
  const size = Number(n);
  if (8 + size > fileSize) {
    throw new SafetensorsTruncatedError('InvalidHeaderLength', `header length ${size} runs past the end of the ${fileSize}-byte file`, { file });
  }
  return size;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Parse and fully validate a safetensors header. `bytes` starts at file offset 0 and holds at
 * least `8 + N` bytes; by default it is the whole file. Throws only `SafetensorsError` subclasses.
 */
export function parseHeader(bytes: Uint8Array, options: ParseHeaderOptions = {}): SafetensorsHeader {
  const file = options.file;
  const fileSize = options.fileSize ?? bytes.length;
  const n = readHeaderSize(bytes, fileSize, file);
  if (8 + n > bytes.length) {
    throw new SafetensorsTruncatedError('InvalidHeaderLength', `header length ${n} runs past the ${bytes.length} bytes given`, { file });
  }
  const raw = bytes.subarray(8, 8 + n);
  let text: string;
  try {
    text = UTF8.decode(raw);
  } catch {
    throw new SafetensorsHeaderError('InvalidHeader', 'header is not valid UTF-8', { file });
  }
  if (raw[0] !== 0x7b) {
    throw new SafetensorsHeaderError('InvalidHeaderStart', "header must start with '{'", { file });
  }
  const root = parseJson(text, { file, what: 'header' });
  if (!(root instanceof Map)) {
    throw new SafetensorsHeaderError('InvalidHeaderDeserialization', 'header is not a JSON object', { file });
  }

  let metadata: Record<string, string> | null = null;
  const entries: RawEntry[] = [];
  for (const [name, value] of root) {
    if (name === METADATA_KEY) metadata = readMetadata(value, file);
    else entries.push(readEntry(name, value, file));
  }

  // Reference order of checks: sort by (begin, end), then sweep in that order.
  // Writers emit offset order, so usually there is nothing to sort (Array#sort is stable).
  const inOrder = entries.every((e, i) => i === 0 || entries[i - 1]!.begin < e.begin || (entries[i - 1]!.begin === e.begin && entries[i - 1]!.end <= e.end));
  const sorted = inOrder ? entries : [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let cursor = 0;
  const byOffset: TensorInfo[] = [];
  for (const entry of sorted) {
    const { name, begin, end } = entry;
    if (begin !== cursor) {
      const what = begin > cursor ? `a hole: bytes [${cursor}, ${begin}) belong to no tensor` : `an overlap with bytes before offset ${cursor}`;
      throw new SafetensorsOffsetError('InvalidOffset', `data_offsets [${begin}, ${end}] leave ${what}`, { file, tensor: name });
    }
    byOffset.push(checkByteSize(entry, file));
    cursor = end;
  }

  const dataStart = 8 + n;
  const fileEnd = dataStart + cursor;
  if (fileEnd > fileSize) {
    throw new SafetensorsTruncatedError('MetadataIncompleteBuffer', `tensor data ends at byte ${fileEnd} but the file has ${fileSize} bytes`, {
      file,
      tensor: byOffset[byOffset.length - 1]?.name,
    });
  }
  if (fileEnd < fileSize) {
    throw new SafetensorsTrailingDataError('MetadataIncompleteBuffer', `${fileSize - fileEnd} bytes after the last tensor (data ends at byte ${fileEnd})`, { file });
  }

  return {
    headerSize: n,
    dataStart,
    dataSize: cursor,
    metadata,
    tensors: new Map(byOffset.map((info) => [info.name, info])),
  };
}

function readMetadata(value: JsonValue, file: string | undefined): Record<string, string> | null {
  if (value === null) return null; // the reference reads `"__metadata__": null` as absent
  if (!(value instanceof Map)) {
    throw new SafetensorsHeaderError('InvalidMetadata', `${METADATA_KEY} must be an object of strings`, { file });
  }
  for (const [key, v] of value) {
    if (typeof v !== 'string') {
      throw new SafetensorsHeaderError('InvalidMetadata', `${METADATA_KEY}[${JSON.stringify(key)}] must be a string`, { file });
    }
  }
  return Object.fromEntries(value as Map<string, string>);
}

/** An entry as written in the header, dims still exact (u64) before the size checks. */
interface RawEntry {
  readonly name: string;
  readonly dtype: Dtype;
  readonly shape: readonly bigint[];
  readonly begin: number;
  readonly end: number;
}

const U64_MAX = (1n << 64n) - 1n;

/** A JSON number that is an unsigned 64-bit integer written without sign, fraction or exponent. */
function jsonU64(value: JsonValue | undefined): bigint | undefined {
  if (!(value instanceof JsonNumber) || !/^(?:0|[1-9][0-9]{0,19})$/.test(value.text)) return undefined;
  const n = BigInt(value.text);
  return n <= U64_MAX ? n : undefined;
}

function readEntry(name: string, value: JsonValue, file: string | undefined): RawEntry {
  const at = { file, tensor: name };
  if (!(value instanceof Map)) {
    throw new SafetensorsHeaderError('InvalidEntry', 'entry must be an object with dtype, shape and data_offsets', at);
  }
  const dtype = value.get('dtype');
  if (!isDtype(dtype)) {
    const shown = dtype === undefined ? 'missing' : typeof dtype === 'string' ? JSON.stringify(dtype) : 'not a string';
    throw new SafetensorsDtypeError('UnknownDtype', `dtype is ${shown}; expected one of the safetensors dtypes`, at);
  }
  const shapeValue = value.get('shape');
  const shape = Array.isArray(shapeValue) ? shapeValue.map(jsonU64) : undefined;
  if (shape === undefined || shape.some((d) => d === undefined)) {
    throw new SafetensorsShapeError('InvalidShape', 'shape must be an array of unsigned 64-bit integers', at);
  }
  const offsets = value.get('data_offsets');
  if (!Array.isArray(offsets) || offsets.length !== 2) {
    throw new SafetensorsOffsetError('InvalidOffset', 'data_offsets must be an array [begin, end]', at);
  }
  const begin = jsonSafeUint(offsets[0]);
  const end = jsonSafeUint(offsets[1]);
  if (begin === undefined || end === undefined) {
    throw new SafetensorsOffsetError('InvalidOffset', 'data_offsets must be non-negative integers at most 2^53 - 1', at);
  }
  if (begin > end) {
    throw new SafetensorsOffsetError('InvalidOffset', `data_offsets begin ${begin} > end ${end}`, at);
  }
  return { name, dtype, shape: shape as bigint[], begin, end };
}

/**
 * Check `(end - begin) * 8 == numel * bits`, with the reference's u64 overflow rule
 * (`ValidationOverflow`) and sub-byte rule (`MisalignedSlice`), and build the `TensorInfo`.
 */
function checkByteSize(entry: RawEntry, file: string | undefined): TensorInfo {
  const byteLength = entry.end - entry.begin;
  const dtypeBits = DTYPE_INFO[entry.dtype].bits;
  // Fast path in doubles: exact while every partial product stays at most 2^47 (bits < 2^53).
  let small = 1;
  for (const d of entry.shape) {
    small = d <= 0xffffffffn ? small * Number(d) : Number.POSITIVE_INFINITY;
    if (small > 2 ** 47) break; // leave overflow rules (checked in order, like the reference) to the exact path
  }
  if (small <= 2 ** 47 && (small * dtypeBits) % 8 === 0 && (small * dtypeBits) / 8 === byteLength) {
    return { name: entry.name, dtype: entry.dtype, shape: entry.shape.map(Number), dataOffsets: [entry.begin, entry.end], byteLength, numel: small };
  }
  const at = { file, tensor: entry.name };
  const shown = `[${entry.shape.join(', ')}] ${entry.dtype}`;
  let numel = 1n;
  for (const d of entry.shape) {
    numel *= d;
    if (numel > U64_MAX) throw new SafetensorsSizeError('ValidationOverflow', `element count of shape ${shown} overflows 64 bits`, at);
  }
  const bits = numel * BigInt(dtypeBits);
  if (bits > U64_MAX) throw new SafetensorsSizeError('ValidationOverflow', `bit size of shape ${shown} overflows 64 bits`, at);
  if (bits % 8n !== 0n) {
    throw new SafetensorsSizeError('MisalignedSlice', `${numel} ${entry.dtype} elements take ${bits} bits, which does not end on a byte boundary`, at);
  }
  if (bits / 8n !== BigInt(byteLength)) {
    throw new SafetensorsSizeError('TensorInvalidInfo', `data_offsets span ${byteLength} bytes but shape ${shown} needs ${bits / 8n}`, at);
  }
  // Only an empty tensor can get here with a dimension above 2^53 - 1; JS numbers cannot hold it.
  if (entry.shape.some((d) => d > BigInt(Number.MAX_SAFE_INTEGER))) {
    throw new SafetensorsShapeError('InvalidShape', `shape ${shown} has a dimension above 2^53 - 1`, at);
  }
  return {
    name: entry.name,
    dtype: entry.dtype,
    shape: entry.shape.map(Number),
    dataOffsets: [entry.begin, entry.end],
    byteLength,
    numel: Number(numel),
  };
}
