import { closeSync, fstatSync, fsyncSync, openSync, readFileSync, readSync, rmSync, writeSync } from 'node:fs';
import type { Document, DocumentSource, TokenEncoder } from '../document';
import { DataError, DataWriteError, DocumentReadError, EmptyCorpusError, InvalidOptionError, MegatronFormatError, TokenError } from '../errors';
import { checkInteger } from '../packing/packer';
import { LITTLE_ENDIAN } from '../shards/format';
import { renameIntoPlace, tempSibling } from '@apertus/atomic-file';
import { writeDataFile } from '../shards/writer';

/**
 * Megatron-LM indexed dataset (`megatron/core/datasets/indexed_dataset.py`), the
 * `.bin` + `.idx` pair Apertus pretrained from. Layout of `<prefix>.idx`
 * (little-endian):
 *
 * ```
 * 9 bytes   magic "MMIDIDX\x00\x00"
 * u64       version = 1
 * u8        dtype code (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16)
 * u64       sequence count S
 * u64       document count D (entries of the document index, i.e. documents + 1)
 * i32 × S   sequence lengths (tokens)
 * i64 × S   sequence pointers (byte offsets into .bin)
 * i64 × D   document index: sequence index where each document starts, then S
 * ```
 *
 * `<prefix>.bin` is the raw token array. The Apertus tokenizer step writes one
 * sequence per document (`<s> text </s>`), int32 when the vocabulary exceeds 65536
 * ids (code 4), else uint16 (code 8).
 */

/** 9-byte magic at the start of every `.idx` file. */
export const MEGATRON_INDEX_MAGIC = Uint8Array.from([0x4d, 0x4d, 0x49, 0x44, 0x49, 0x44, 0x58, 0x00, 0x00]);

/** NumPy dtypes of Megatron's `DType` enum, by code. */
export const MEGATRON_DTYPE_CODES = Object.freeze({
  uint8: 1,
  int8: 2,
  int16: 3,
  int32: 4,
  int64: 5,
  float64: 6,
  float32: 7,
  uint16: 8,
} as const);

/** A Megatron dtype name. */
export type MegatronDType = keyof typeof MEGATRON_DTYPE_CODES;

/** Token dtypes this writer produces (what Megatron/Apertus preprocessing writes). */
export type MegatronTokenDType = 'uint16' | 'int32';

const SIZES: Record<MegatronDType, number> = { uint8: 1, int8: 1, int16: 2, int32: 4, int64: 8, float64: 8, float32: 4, uint16: 2 };

/** Apertus' rule (pretrain-data `token_size`): 4-byte ids when the vocabulary exceeds 65536, else uint16. */
export function megatronDTypeForVocab(vocabSize: number): MegatronTokenDType {
  return vocabSize > 65536 ? 'int32' : 'uint16';
}

/** Options of {@link MegatronDatasetWriter}. */
export interface MegatronWriterOptions {
  /** Token dtype; default from `vocabSize` via {@link megatronDTypeForVocab}. */
  readonly dtype?: MegatronTokenDType;
  /** Vocabulary size: ids are checked against it and it picks the dtype. */
  readonly vocabSize?: number;
  /** Tokens buffered before each `.bin` write (default 2^20). */
  readonly bufferTokens?: number;
}

function le(bytes: Uint8Array, size: number): Uint8Array {
  if (LITTLE_ENDIAN || size === 1) return bytes;
  const b = Buffer.from(bytes);
  if (size === 2) b.swap16();
  else if (size === 4) b.swap32();
  else b.swap64();
  return new Uint8Array(b);
}

/**
 * Streaming writer of a Megatron `.bin`/`.idx` pair (same bytes as Megatron's
 * `IndexedDatasetBuilder`). `.bin` is streamed to a temporary file; the index
 * (12 bytes per sequence + 8 per document) is kept in memory and written on
 * `close()`, then both files are renamed into place.
 */
export class MegatronDatasetWriter {
  /** Token dtype. */
  readonly dtype: MegatronTokenDType;
  private readonly binTmp: string;
  private readonly fd: number;
  private readonly buffer: Uint16Array | Int32Array;
  private fill = 0;
  private bytesWritten = 0;
  private lengths = new Int32Array(1024);
  private sequences = 0;
  private docIndex = new Float64Array(1024);
  private docEntries = 1; // document index starts with 0
  private open = true;
  private readonly limit: number;
  private current = 0;

  /** @param prefix Path prefix: writes `<prefix>.bin` and `<prefix>.idx`. */
  constructor(
    readonly prefix: string,
    options: MegatronWriterOptions = {},
  ) {
    if (typeof prefix !== 'string' || prefix === '') throw new InvalidOptionError('prefix', 'must be a non-empty path');
    if (options.vocabSize !== undefined) checkInteger('vocabSize', options.vocabSize, 1, 2 ** 31);
    this.dtype = options.dtype ?? (options.vocabSize !== undefined ? megatronDTypeForVocab(options.vocabSize) : 'int32');
    if (this.dtype !== 'uint16' && this.dtype !== 'int32') {
      throw new InvalidOptionError('dtype', `expected "uint16" or "int32", got ${JSON.stringify(this.dtype)}`);
    }
    this.limit = Math.min(options.vocabSize ?? Infinity, this.dtype === 'uint16' ? 65536 : 2 ** 31);
    const bufferTokens = checkInteger('bufferTokens', options.bufferTokens ?? 2 ** 20, 1, 2 ** 28);
    this.buffer = this.dtype === 'uint16' ? new Uint16Array(bufferTokens) : new Int32Array(bufferTokens);
    this.binTmp = tempSibling(`${prefix}.bin`);
    try {
      this.fd = openSync(this.binTmp, 'w');
    } catch (cause) {
      throw new DataWriteError(`${prefix}.bin`, 'cannot create Megatron .bin file', { cause });
    }
    this.docIndex[0] = 0;
  }

  private flush(): void {
    if (this.fill === 0) return;
    const size = this.buffer.BYTES_PER_ELEMENT;
    const bytes = le(new Uint8Array(this.buffer.buffer, 0, this.fill * size), size);
    try {
      writeSync(this.fd, bytes, 0, bytes.length, this.bytesWritten);
    } catch (cause) {
      this.abort();
      throw new DataWriteError(`${this.prefix}.bin`, 'write failed', { cause });
    }
    this.bytesWritten += bytes.length;
    this.fill = 0;
  }

  private check(): void {
    if (!this.open) throw new DataError(`Megatron writer ${this.prefix}: already closed`);
  }

  /** Append tokens to the current sequence (streaming; the sequence is closed by {@link endSequence}). */
  pushTokens(tokens: ArrayLike<number>): void {
    this.check();
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (!Number.isInteger(t) || t < 0 || t >= this.limit) {
        this.abort();
        throw new TokenError(this.docEntries - 1, t, `token ${String(t)} does not fit ${this.dtype} / the vocabulary (< ${this.limit})`);
      }
      this.buffer[this.fill++] = t;
      if (this.fill === this.buffer.length) this.flush();
    }
    this.current += tokens.length;
    if (this.current > 2 ** 31 - 1) {
      this.abort();
      throw new TokenError(this.docEntries - 1, NaN, 'sequence longer than 2^31 - 1 tokens (int32 length field)');
    }
  }

  /** Close the current sequence (Megatron `add_item`). */
  endSequence(): void {
    this.check();
    if (this.sequences === this.lengths.length) {
      const grown = new Int32Array(this.lengths.length * 2);
      grown.set(this.lengths);
      this.lengths = grown;
    }
    this.lengths[this.sequences++] = this.current;
    this.current = 0;
  }

  /** Mark the end of a document made of the sequences since the previous one (Megatron `end_document`). */
  endDocument(): void {
    this.check();
    if (this.current > 0) this.endSequence();
    if (this.docEntries === this.docIndex.length) {
      const grown = new Float64Array(this.docIndex.length * 2);
      grown.set(this.docIndex);
      this.docIndex = grown;
    }
    this.docIndex[this.docEntries++] = this.sequences;
  }

  /** One document stored as one sequence (what the Apertus tokenizer step does). */
  addDocument(tokens: ArrayLike<number>): void {
    this.pushTokens(tokens);
    this.endSequence();
    this.endDocument();
  }

  /** Documents ended so far. */
  get numDocuments(): number {
    return this.docEntries - 1;
  }

  /** Write `<prefix>.idx`, move both files into place. Throws {@link EmptyCorpusError} without documents. */
  close(): { bin: string; idx: string } {
    this.check();
    if (this.current > 0) throw new DataError(`Megatron writer ${this.prefix}: close() inside an unfinished sequence`);
    if (this.docEntries === 1) {
      this.abort();
      throw new EmptyCorpusError(`${this.prefix}.idx`, 'no document was written');
    }
    this.flush();
    try {
      fsyncSync(this.fd);
    } catch (cause) {
      this.abort();
      throw new DataWriteError(`${this.prefix}.bin`, 'fsync failed', { cause });
    }
    closeSync(this.fd);
    this.open = false;
    const S = this.sequences;
    const D = this.docEntries;
    const idx = Buffer.alloc(9 + 8 + 1 + 8 + 8 + 4 * S + 8 * S + 8 * D);
    let o = 0;
    idx.set(MEGATRON_INDEX_MAGIC, o);
    o += 9;
    idx.writeBigUInt64LE(1n, o);
    o += 8;
    idx.writeUInt8(MEGATRON_DTYPE_CODES[this.dtype], o);
    o += 1;
    idx.writeBigUInt64LE(BigInt(S), o);
    o += 8;
    idx.writeBigUInt64LE(BigInt(D), o);
    o += 8;
    for (let i = 0; i < S; i++, o += 4) idx.writeInt32LE(this.lengths[i]!, o);
    const size = this.buffer.BYTES_PER_ELEMENT;
    let pointer = 0;
    for (let i = 0; i < S; i++, o += 8) {
      idx.writeBigInt64LE(BigInt(pointer), o);
      pointer += this.lengths[i]! * size;
    }
    for (let i = 0; i < D; i++, o += 8) idx.writeBigInt64LE(BigInt(this.docIndex[i]!), o);
    const bin = `${this.prefix}.bin`;
    const idxPath = `${this.prefix}.idx`;
    try {
      renameIntoPlace(this.binTmp, bin);
    } catch (cause) {
      rmSync(this.binTmp, { force: true });
      throw new DataWriteError(bin, 'cannot move the .bin into place', { cause });
    }
    writeDataFile(idxPath, idx);
    return { bin, idx: idxPath };
  }

  /** Discard everything written (removes the temporary `.bin`). */
  abort(): void {
    if (!this.open) return;
    this.open = false;
    closeSync(this.fd);
    rmSync(this.binTmp, { force: true });
  }
}

/** Options of {@link writeMegatronDataset}. */
export interface WriteMegatronOptions extends MegatronWriterOptions {
  /** Beginning-of-document id prepended to every document (Apertus `<s>` = 1). */
  readonly bodId: number;
  /** End-of-document id appended to every document (Apertus `</s>` = 2). */
  readonly eodId: number;
  /** Tokenizer for text documents. */
  readonly encoder?: TokenEncoder;
}

/**
 * Write documents as a Megatron dataset the way the Apertus pipeline does:
 * each document is `BoD + encode(text) + EoD`, stored as one sequence.
 */
export async function writeMegatronDataset(
  prefix: string,
  documents: DocumentSource<Document | ArrayLike<number>>,
  options: WriteMegatronOptions,
): Promise<{ bin: string; idx: string; documents: number }> {
  checkInteger('bodId', options.bodId, 0);
  checkInteger('eodId', options.eodId, 0);
  const writer = new MegatronDatasetWriter(prefix, options);
  try {
    for await (const doc of documents) {
      let tokens: ArrayLike<number>;
      if (typeof (doc as Document).text === 'string') {
        if (options.encoder === undefined) throw new InvalidOptionError('encoder', 'required to write text documents');
        tokens = options.encoder.encode((doc as Document).text);
      } else tokens = doc as ArrayLike<number>;
      writer.pushTokens([options.bodId]);
      writer.pushTokens(tokens);
      writer.pushTokens([options.eodId]);
      writer.endSequence();
      writer.endDocument();
    }
    const n = writer.numDocuments;
    return { ...writer.close(), documents: n };
  } catch (e) {
    writer.abort();
    throw e;
  }
}

/** Typed array returned for a sequence, by dtype. */
export type MegatronArray = Uint8Array | Int8Array | Int16Array | Int32Array | Float64Array | Float32Array | Uint16Array;

/**
 * Reader of a Megatron `.bin`/`.idx` pair (for tests and tooling): validates the
 * index against the `.bin` size and reads sequences on demand.
 */
export class MegatronIndexedDataset {
  private constructor(
    /** Path prefix. */
    readonly prefix: string,
    /** Element dtype. */
    readonly dtype: MegatronDType,
    /** Tokens per sequence. */
    readonly sequenceLengths: Int32Array,
    /** Byte offset of each sequence in `.bin`. */
    readonly sequencePointers: Float64Array,
    /** Document index (sequence index of each document start, then the sequence count). */
    readonly documentIndices: Float64Array,
    private fd: number,
  ) {}

  /** Open `<prefix>.idx` and `<prefix>.bin`. */
  static open(prefix: string): MegatronIndexedDataset {
    const idxPath = `${prefix}.idx`;
    const binPath = `${prefix}.bin`;
    let idx: Buffer;
    try {
      idx = readFileSync(idxPath);
    } catch (cause) {
      throw new DocumentReadError(idxPath, 'cannot read Megatron index', { cause });
    }
    const bad = (field: string, msg: string): never => {
      throw new MegatronFormatError(idxPath, field, msg);
    };
    if (idx.length < 34) bad('header', `${idx.length} bytes, shorter than the 34-byte header`);
    if (!idx.subarray(0, 9).equals(Buffer.from(MEGATRON_INDEX_MAGIC))) bad('magic', 'not an MMIDIDX index');
    if (idx.readBigUInt64LE(9) !== 1n) bad('version', `unsupported version ${idx.readBigUInt64LE(9)}`);
    const code = idx.readUInt8(17);
    const dtype = (Object.keys(MEGATRON_DTYPE_CODES) as MegatronDType[]).find((k) => MEGATRON_DTYPE_CODES[k] === code);
    if (dtype === undefined) return bad('dtype', `unknown dtype code ${code}`);
    const S = Number(idx.readBigUInt64LE(18));
    const D = Number(idx.readBigUInt64LE(26));
    const expected = 34 + 4 * S + 8 * S + 8 * D;
    if (idx.length !== expected) bad('size', `${idx.length} bytes, header implies ${expected}`);
    const lengths = new Int32Array(S);
    const pointers = new Float64Array(S);
    const docs = new Float64Array(D);
    let o = 34;
    for (let i = 0; i < S; i++, o += 4) {
      lengths[i] = idx.readInt32LE(o);
      if (lengths[i]! < 0) bad('sequence_lengths', `negative length at ${i}`);
    }
    for (let i = 0; i < S; i++, o += 8) pointers[i] = Number(idx.readBigInt64LE(o));
    for (let i = 0; i < D; i++, o += 8) docs[i] = Number(idx.readBigInt64LE(o));
    const size = SIZES[dtype];
    let expectPtr = 0;
    for (let i = 0; i < S; i++) {
      if (pointers[i] !== expectPtr) bad('sequence_pointers', `pointer ${i} is ${pointers[i]}, expected ${expectPtr}`);
      expectPtr += lengths[i]! * size;
    }
    for (let i = 0; i < D; i++) {
      if (docs[i]! < (i > 0 ? docs[i - 1]! : 0) || docs[i]! > S) bad('document_indices', `entry ${i} (${docs[i]}) out of order`);
    }
    let fd: number;
    try {
      fd = openSync(binPath, 'r');
    } catch (cause) {
      throw new DocumentReadError(binPath, 'cannot open Megatron .bin', { cause });
    }
    const binSize = fstatSync(fd).size;
    if (binSize !== expectPtr) {
      closeSync(fd);
      throw new MegatronFormatError(binPath, 'size', `${binSize} bytes, index implies ${expectPtr}`);
    }
    return new MegatronIndexedDataset(prefix, dtype, lengths, pointers, docs, fd);
  }

  /** Number of sequences. */
  get length(): number {
    return this.sequenceLengths.length;
  }

  /** Number of documents (document index entries − 1). */
  get numDocuments(): number {
    return Math.max(0, this.documentIndices.length - 1);
  }

  /** Sequence `i` as a typed array of the file's dtype (int64 is returned as Float64Array). */
  get(i: number): MegatronArray {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) {
      throw new InvalidOptionError('index', `sequence ${i} is out of range [0, ${this.length})`);
    }
    const n = this.sequenceLengths[i]!;
    const size = SIZES[this.dtype];
    const raw = new Uint8Array(n * size);
    let done = 0;
    while (done < raw.length) {
      const r = readSync(this.fd, raw, done, raw.length - done, this.sequencePointers[i]! + done);
      if (r === 0) throw new MegatronFormatError(`${this.prefix}.bin`, 'data', `truncated at sequence ${i}`);
      done += r;
    }
    const b = le(raw, size);
    switch (this.dtype) {
      case 'uint8':
        return b;
      case 'int8':
        return new Int8Array(b.buffer, b.byteOffset, n);
      case 'int16':
        return new Int16Array(b.buffer, b.byteOffset, n);
      case 'uint16':
        return new Uint16Array(b.buffer, b.byteOffset, n);
      case 'int32':
        return new Int32Array(b.buffer, b.byteOffset, n);
      case 'float32':
        return new Float32Array(b.buffer, b.byteOffset, n);
      case 'float64':
        return new Float64Array(b.buffer, b.byteOffset, n);
      case 'int64':
        return Float64Array.from(new BigInt64Array(b.buffer, b.byteOffset, n), (x) => Number(x));
    }
  }

  /** Close the `.bin` file. */
  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}
