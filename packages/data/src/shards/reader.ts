import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import path from 'node:path';
import { DocumentReadError, InvalidOptionError, ShardFormatError } from '../errors';
import type { ShardDType, ShardHeader, ShardManifest } from './format';
import { LITTLE_ENDIAN, MANIFEST_FORMAT, SHARD_FORMAT, SHARD_HEADER_BYTES, SHARD_MAGIC, align8, itemSize } from './format';

function readExactly(fd: number, file: string, bytes: number, position: number, field: string): Uint8Array {
  const out = new Uint8Array(bytes);
  let done = 0;
  while (done < bytes) {
    const n = readSync(fd, out, done, bytes - done, position + done);
    if (n === 0) throw new ShardFormatError(file, field, `file ends before byte ${position + bytes}`);
    done += n;
  }
  return out;
}

function fixEndian(bytes: Uint8Array, size: number): Uint8Array {
  if (LITTLE_ENDIAN) return bytes;
  const b = Buffer.from(bytes);
  if (size === 2) b.swap16();
  else if (size === 4) b.swap32();
  else b.swap64();
  return new Uint8Array(b);
}

function isCount(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

/** Validate a parsed shard header object; throws {@link ShardFormatError} naming the field. */
function checkHeader(file: string, h: Record<string, unknown>): ShardHeader {
  const bad = (field: string, msg: string): never => {
    throw new ShardFormatError(file, field, msg);
  };
  if (h.format !== SHARD_FORMAT) bad('format', `expected "${SHARD_FORMAT}", got ${JSON.stringify(h.format)}`);
  if (h.version !== 1) bad('version', `unsupported version ${JSON.stringify(h.version)}`);
  if (h.dtype !== 'uint16' && h.dtype !== 'uint32') bad('dtype', `expected "uint16" or "uint32", got ${JSON.stringify(h.dtype)}`);
  for (const f of ['vocabSize', 'bodId', 'eodId', 'numTokens', 'numDocuments', 'tokensOffset', 'indexOffset', 'shardIndex', 'firstToken', 'firstDocument']) {
    if (!isCount(h[f])) bad(f, `expected a non-negative integer, got ${JSON.stringify(h[f])}`);
  }
  const header = h as unknown as ShardHeader;
  if (header.tokensOffset !== SHARD_HEADER_BYTES) bad('tokensOffset', `expected ${SHARD_HEADER_BYTES}`);
  if (header.indexOffset !== align8(SHARD_HEADER_BYTES + header.numTokens * itemSize(header.dtype))) {
    bad('indexOffset', 'does not follow the token array');
  }
  if (header.bodId >= header.vocabSize || header.eodId >= header.vocabSize) bad('eodId', 'special ids outside the vocabulary');
  return header;
}

/**
 * One `.tokens` shard opened for random access: the header and the document
 * index are read (and validated) on open; tokens are read from disk on demand.
 */
export class TokenShard {
  private constructor(
    /** Path of the shard file. */
    readonly file: string,
    private fd: number,
    /** Parsed header. */
    readonly header: ShardHeader,
    /** Local token offset of each document start, plus `numTokens` at the end. */
    readonly documentStarts: Float64Array,
  ) {}

  /** Open and validate a shard; throws {@link DocumentReadError} or {@link ShardFormatError}. */
  static open(file: string): TokenShard {
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch (cause) {
      throw new DocumentReadError(file, 'cannot open token shard', { cause });
    }
    try {
      const size = fstatSync(fd).size;
      if (size < SHARD_HEADER_BYTES) throw new ShardFormatError(file, 'header', `file has ${size} bytes, less than the ${SHARD_HEADER_BYTES}-byte header`);
      const head = Buffer.from(readExactly(fd, file, SHARD_HEADER_BYTES, 0, 'header'));
      if (head.toString('latin1', 0, 8) !== SHARD_MAGIC) throw new ShardFormatError(file, 'magic', 'not an APTSHARD file');
      const jsonLength = head.readUInt32LE(8);
      if (jsonLength > SHARD_HEADER_BYTES - 12) throw new ShardFormatError(file, 'header', `JSON length ${jsonLength} exceeds the header`);
      let parsed: unknown;
      try {
        parsed = JSON.parse(head.toString('utf8', 12, 12 + jsonLength));
      } catch {
        throw new ShardFormatError(file, 'header', 'header is not valid JSON');
      }
      if (typeof parsed !== 'object' || parsed === null) throw new ShardFormatError(file, 'header', 'header is not an object');
      const header = checkHeader(file, parsed as Record<string, unknown>);
      const expected = header.indexOffset + 8 * (header.numDocuments + 1);
      if (size !== expected) throw new ShardFormatError(file, 'size', `file has ${size} bytes, header implies ${expected}`);
      const raw = fixEndian(readExactly(fd, file, 8 * (header.numDocuments + 1), header.indexOffset, 'index'), 8);
      const big = new BigUint64Array(raw.buffer, raw.byteOffset, header.numDocuments + 1);
      const starts = new Float64Array(header.numDocuments + 1);
      let prev = -1;
      for (let i = 0; i < big.length; i++) {
        const v = Number(big[i]!);
        if (v <= prev || v > header.numTokens) throw new ShardFormatError(file, 'index', `document start ${i} (${v}) is out of order`);
        starts[i] = prev = v;
      }
      if (starts[0] !== 0 && header.numDocuments > 0) throw new ShardFormatError(file, 'index', 'first document does not start at 0');
      if (starts[header.numDocuments] !== header.numTokens) throw new ShardFormatError(file, 'index', 'last entry is not numTokens');
      return new TokenShard(file, fd, header, starts);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /** Read local tokens `[start, end)` (clamped to the shard). */
  readTokens(start: number, end: number): Uint16Array | Uint32Array {
    const { numTokens, dtype, tokensOffset } = this.header;
    const s = Math.max(0, Math.min(start, numTokens));
    const e = Math.max(s, Math.min(end, numTokens));
    const size = itemSize(dtype);
    const bytes = fixEndian(readExactly(this.fd, this.file, (e - s) * size, tokensOffset + s * size, 'tokens'), size);
    return dtype === 'uint16'
      ? new Uint16Array(bytes.buffer, bytes.byteOffset, e - s)
      : new Uint32Array(bytes.buffer, bytes.byteOffset, e - s);
  }

  /** Close the file descriptor. */
  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

function upperBound(sorted: ArrayLike<number>, value: number, length = sorted.length): number {
  let lo = 0;
  let hi = length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The corpus token stream spread over several shards, addressed by global token
 * offset and global document ordinal.
 */
export class ShardedTokens {
  /** Token storage type. */
  readonly dtype: ShardDType;
  /** Vocabulary size. */
  readonly vocabSize: number;
  /** Beginning-of-document id. */
  readonly bodId: number;
  /** End-of-document id. */
  readonly eodId: number;
  /** Total tokens. */
  readonly numTokens: number;
  /** Total documents. */
  readonly numDocuments: number;
  private readonly firstTokens: Float64Array;

  private constructor(readonly shards: readonly TokenShard[]) {
    const h = shards[0]!.header;
    this.dtype = h.dtype;
    this.vocabSize = h.vocabSize;
    this.bodId = h.bodId;
    this.eodId = h.eodId;
    this.firstTokens = new Float64Array(shards.map((s) => s.header.firstToken));
    const last = shards[shards.length - 1]!.header;
    this.numTokens = last.firstToken + last.numTokens;
    this.numDocuments = last.firstDocument + last.numDocuments;
  }

  /**
   * Open a dataset from its manifest (`*.manifest.json`) or from a list of shard
   * files (ordered by their `shardIndex`). Shards must be contiguous and agree on
   * dtype, vocabulary and special ids.
   */
  static open(source: string | readonly string[]): ShardedTokens {
    let files: string[];
    let manifest: ShardManifest | undefined;
    if (typeof source === 'string') {
      let text: string;
      try {
        text = readFileSync(source, 'utf8');
      } catch (cause) {
        throw new DocumentReadError(source, 'cannot read shard manifest', { cause });
      }
      try {
        manifest = JSON.parse(text) as ShardManifest;
      } catch {
        throw new ShardFormatError(source, 'manifest', 'not valid JSON');
      }
      if (manifest.format !== MANIFEST_FORMAT) throw new ShardFormatError(source, 'format', `expected "${MANIFEST_FORMAT}"`);
      if (!Array.isArray(manifest.shards) || manifest.shards.length === 0) throw new ShardFormatError(source, 'shards', 'no shard listed');
      files = manifest.shards.map((s) => path.join(path.dirname(source), s.file));
    } else {
      files = [...source];
      if (files.length === 0) throw new ShardFormatError('<shards>', 'shards', 'no shard file given');
    }
    const shards: TokenShard[] = [];
    try {
      for (const f of files) shards.push(TokenShard.open(f));
      shards.sort((a, b) => a.header.shardIndex - b.header.shardIndex);
      const h0 = shards[0]!.header;
      let token = 0;
      let doc = 0;
      shards.forEach((s, i) => {
        const h = s.header;
        for (const f of ['dtype', 'vocabSize', 'bodId', 'eodId'] as const) {
          if (h[f] !== h0[f]) throw new ShardFormatError(s.file, f, `differs from ${shards[0]!.file}`);
        }
        if (h.shardIndex !== i) throw new ShardFormatError(s.file, 'shardIndex', `expected ${i}, got ${h.shardIndex}`);
        if (h.firstToken !== token) throw new ShardFormatError(s.file, 'firstToken', `expected ${token}, got ${h.firstToken}`);
        if (h.firstDocument !== doc) throw new ShardFormatError(s.file, 'firstDocument', `expected ${doc}, got ${h.firstDocument}`);
        const m = manifest?.shards[i];
        if (m !== undefined && (m.numTokens !== h.numTokens || m.numDocuments !== h.numDocuments)) {
          throw new ShardFormatError(s.file, 'numTokens', 'does not match the manifest');
        }
        token += h.numTokens;
        doc += h.numDocuments;
      });
      if (manifest !== undefined && (manifest.numTokens !== token || manifest.numDocuments !== doc)) {
        throw new ShardFormatError(source as string, 'numTokens', 'manifest totals do not match the shards');
      }
    } catch (e) {
      for (const s of shards) s.close();
      throw e;
    }
    return new ShardedTokens(shards);
  }

  private shardOf(token: number): number {
    return Math.max(0, upperBound(this.firstTokens, token) - 1);
  }

  /** Global tokens `[start, end)` (clamped to the stream), across shard boundaries. */
  readTokens(start: number, end: number): Int32Array {
    const s = Math.max(0, Math.min(start, this.numTokens));
    const e = Math.max(s, Math.min(end, this.numTokens));
    const out = new Int32Array(e - s);
    let pos = s;
    while (pos < e) {
      const k = this.shardOf(pos);
      const shard = this.shards[k]!;
      const first = shard.header.firstToken;
      const stop = Math.min(e, first + shard.header.numTokens);
      out.set(shard.readTokens(pos - first, stop - first), pos - s);
      pos = stop;
    }
    return out;
  }

  /** Global ordinal of the document containing global token `token`. */
  documentAt(token: number): number {
    const shard = this.shards[this.shardOf(token)]!;
    const local = token - shard.header.firstToken;
    return shard.header.firstDocument + upperBound(shard.documentStarts, local, shard.header.numDocuments) - 1;
  }

  /** Global token range `[start, end)` of document `doc` (BoD and EoD included). */
  documentRange(doc: number): [number, number] {
    let lo = 0;
    let hi = this.shards.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.shards[mid]!.header.firstDocument <= doc) lo = mid;
      else hi = mid - 1;
    }
    const shard = this.shards[lo]!;
    const local = doc - shard.header.firstDocument;
    if (doc < 0 || local >= shard.header.numDocuments || !Number.isInteger(doc)) {
      throw new InvalidOptionError('document', `${doc} is out of range [0, ${this.numDocuments})`);
    }
    const base = shard.header.firstToken;
    return [base + shard.documentStarts[local]!, base + shard.documentStarts[local + 1]!];
  }

  /** Tokens of document `doc`, BoD and EoD included. */
  readDocument(doc: number): Int32Array {
    const [s, e] = this.documentRange(doc);
    return this.readTokens(s, e);
  }

  /** Every document in order (streaming: one document in memory at a time). */
  *documents(): Generator<Int32Array> {
    for (let d = 0; d < this.numDocuments; d++) yield this.readDocument(d);
  }

  /** Close every shard. */
  close(): void {
    for (const s of this.shards) s.close();
  }
}
