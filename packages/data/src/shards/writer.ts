import { closeSync, fsyncSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { renameIntoPlace, tempSibling, writeFileAtomic } from '@apertus/atomic-file';
import type { Document, DocumentSource, TokenEncoder } from '../document';
import { DataError, DataWriteError, EmptyCorpusError, InvalidOptionError, TokenError } from '../errors';
import { checkInteger } from '../packing/packer';
import type { ManifestShard, ShardDType, ShardHeader, ShardManifest } from './format';
import {
  LITTLE_ENDIAN,
  MANIFEST_FORMAT,
  SHARD_FORMAT,
  SHARD_HEADER_BYTES,
  SHARD_MAGIC,
  align8,
  dtypeForVocab,
  itemSize,
} from './format';

/** Options of {@link ShardWriter}. */
export interface ShardWriterOptions {
  /** Output directory (created if missing). */
  readonly directory: string;
  /** File name prefix: shards are `<prefix>-00000.tokens`, the manifest `<prefix>.manifest.json` (default `shard`). */
  readonly prefix?: string;
  /** Vocabulary size (≤ 2^31); selects uint16 storage when ≤ 65536. */
  readonly vocabSize: number;
  /** Beginning-of-document id. */
  readonly bodId: number;
  /** End-of-document id. */
  readonly eodId: number;
  /** Start a new shard at the next document boundary once a shard has this many tokens (default 2^28). */
  readonly maxTokensPerShard?: number;
  /** Tokens buffered before each write (default 2^20). */
  readonly bufferTokens?: number;
}

/**
 * Write `data` to `file` atomically (@apertus/atomic-file: temporary sibling, fsync, rename, fsync
 * of the directory); {@link DataWriteError} naming the file on failure.
 */
export function writeDataFile(file: string, data: string | Uint8Array): void {
  try {
    writeFileAtomic(file, data);
  } catch (cause) {
    throw new DataWriteError(file, 'write failed', { cause });
  }
}

function bytesOf(view: Uint16Array | Uint32Array | BigUint64Array, count: number): Uint8Array {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, count * view.BYTES_PER_ELEMENT);
  if (LITTLE_ENDIAN) return bytes;
  const copy = Buffer.from(bytes);
  if (view.BYTES_PER_ELEMENT === 2) copy.swap16();
  else if (view.BYTES_PER_ELEMENT === 4) copy.swap32();
  else copy.swap64();
  return copy;
}

class OpenShard {
  readonly tmp: string;
  readonly fd: number;
  tokens = 0;
  starts = new Float64Array(1024);
  documents = 0;
  closed = false;
  constructor(
    readonly file: string,
    readonly index: number,
    readonly firstToken: number,
    readonly firstDocument: number,
  ) {
    this.tmp = tempSibling(file);
    try {
      this.fd = openSync(this.tmp, 'w');
    } catch (cause) {
      throw new DataWriteError(file, 'cannot create shard file', { cause });
    }
  }
  addStart(offset: number): void {
    if (this.documents === this.starts.length) {
      const grown = new Float64Array(this.starts.length * 2);
      grown.set(this.starts);
      this.starts = grown;
    }
    this.starts[this.documents++] = offset;
  }
}

/**
 * Streaming writer of token shards (format in `format.ts`). Documents go in
 * whole (`addDocument`) or in chunks (`beginDocument` / `pushTokens` /
 * `endDocument`); tokens are buffered and written as they come, so neither the
 * corpus nor a single document has to fit in memory (only the per-shard document
 * index, 8 bytes per document, is kept). Each shard and the manifest are written
 * to temporary files and renamed when complete.
 */
export class ShardWriter {
  /** Storage type chosen from the vocabulary size. */
  readonly dtype: ShardDType;
  private readonly directory: string;
  private readonly prefix: string;
  private readonly maxTokens: number;
  private readonly buffer: Uint16Array | Uint32Array;
  private bufferFill = 0;
  private shard: OpenShard | undefined;
  private readonly done: ManifestShard[] = [];
  private totalTokens = 0;
  private totalDocuments = 0;
  private inDocument = false;
  private state: 'open' | 'closed' | 'aborted' = 'open';

  constructor(readonly options: ShardWriterOptions) {
    const vocab = checkInteger('vocabSize', options.vocabSize, 1, 2 ** 31);
    checkInteger('bodId', options.bodId, 0, vocab - 1);
    checkInteger('eodId', options.eodId, 0, vocab - 1);
    if (options.bodId === options.eodId) throw new InvalidOptionError('eodId', 'must differ from bodId');
    this.maxTokens = checkInteger('maxTokensPerShard', options.maxTokensPerShard ?? 2 ** 28, 1);
    const bufferTokens = checkInteger('bufferTokens', options.bufferTokens ?? 2 ** 20, 1, 2 ** 28);
    this.prefix = options.prefix ?? 'shard';
    if (this.prefix === '' || /[\\/]/.test(this.prefix)) {
      throw new InvalidOptionError('prefix', `must be a non-empty file name without separators, got ${JSON.stringify(this.prefix)}`);
    }
    if (typeof options.directory !== 'string' || options.directory === '') {
      throw new InvalidOptionError('directory', 'must be a non-empty path');
    }
    this.directory = options.directory;
    try {
      mkdirSync(this.directory, { recursive: true });
    } catch (cause) {
      throw new DataWriteError(this.directory, 'cannot create output directory', { cause });
    }
    this.dtype = dtypeForVocab(vocab);
    this.buffer = this.dtype === 'uint16' ? new Uint16Array(bufferTokens) : new Uint32Array(bufferTokens);
  }

  /** Documents completed so far. */
  get numDocuments(): number {
    return this.totalDocuments;
  }

  /** Tokens written so far (BoD/EoD included). */
  get numTokens(): number {
    return this.totalTokens;
  }

  /** Path of the manifest written by {@link close}. */
  get manifestPath(): string {
    return path.join(this.directory, `${this.prefix}.manifest.json`);
  }

  private flush(): void {
    const shard = this.shard!;
    if (this.bufferFill === 0) return;
    const position = SHARD_HEADER_BYTES + (shard.tokens - this.bufferFill) * itemSize(this.dtype);
    try {
      writeSync(shard.fd, bytesOf(this.buffer, this.bufferFill), 0, this.bufferFill * itemSize(this.dtype), position);
    } catch (cause) {
      this.abort();
      throw new DataWriteError(shard.file, 'write failed', { cause });
    }
    this.bufferFill = 0;
  }

  private put(token: number): void {
    this.buffer[this.bufferFill++] = token;
    this.shard!.tokens++;
    this.totalTokens++;
    if (this.bufferFill === this.buffer.length) this.flush();
  }

  private finalizeShard(): void {
    const shard = this.shard!;
    this.flush();
    try {
      this.writeIndexAndHeader(shard);
    } catch (cause) {
      this.abort();
      throw new DataWriteError(shard.file, 'cannot finish shard', { cause });
    }
    this.done.push({
      file: path.basename(shard.file),
      numTokens: shard.tokens,
      numDocuments: shard.documents,
      firstToken: shard.firstToken,
      firstDocument: shard.firstDocument,
    });
    this.shard = undefined;
  }

  private writeIndexAndHeader(shard: OpenShard): void {
    const tokenBytes = shard.tokens * itemSize(this.dtype);
    const indexOffset = align8(SHARD_HEADER_BYTES + tokenBytes);
    const index = new BigUint64Array(shard.documents + 1);
    for (let i = 0; i < shard.documents; i++) index[i] = BigInt(shard.starts[i]!);
    index[shard.documents] = BigInt(shard.tokens);
    const pad = indexOffset - (SHARD_HEADER_BYTES + tokenBytes);
    if (pad > 0) writeSync(shard.fd, new Uint8Array(pad), 0, pad, SHARD_HEADER_BYTES + tokenBytes);
    writeSync(shard.fd, bytesOf(index, index.length), 0, index.length * 8, indexOffset);
    const header: ShardHeader = {
      format: SHARD_FORMAT,
      version: 1,
      dtype: this.dtype,
      vocabSize: this.options.vocabSize,
      bodId: this.options.bodId,
      eodId: this.options.eodId,
      numTokens: shard.tokens,
      numDocuments: shard.documents,
      tokensOffset: SHARD_HEADER_BYTES,
      indexOffset,
      shardIndex: shard.index,
      firstToken: shard.firstToken,
      firstDocument: shard.firstDocument,
    };
    const json = Buffer.from(JSON.stringify(header), 'utf8');
    const head = Buffer.alloc(SHARD_HEADER_BYTES, 0x20);
    head.write(SHARD_MAGIC, 0, 'latin1');
    head.writeUInt32LE(json.length, 8);
    json.copy(head, 12);
    writeSync(shard.fd, head, 0, head.length, 0);
    fsyncSync(shard.fd);
    closeSync(shard.fd);
    shard.closed = true;
    renameIntoPlace(shard.tmp, shard.file);
  }

  private checkOpen(): void {
    if (this.state !== 'open') throw new DataError(`shard writer: already ${this.state}`);
  }

  /** Start a document: opens a new shard when the current one is full, then writes BoD. */
  beginDocument(): void {
    this.checkOpen();
    if (this.inDocument) throw new DataError(`shard writer: document ${this.totalDocuments} is still open`);
    if (this.shard !== undefined && this.shard.tokens >= this.maxTokens) this.finalizeShard();
    if (this.shard === undefined) {
      const index = this.done.length;
      const file = path.join(this.directory, `${this.prefix}-${String(index).padStart(5, '0')}.tokens`);
      this.shard = new OpenShard(file, index, this.totalTokens, this.totalDocuments);
    }
    this.shard.addStart(this.shard.tokens);
    this.inDocument = true;
    this.put(this.options.bodId);
  }

  /**
   * Append text tokens to the open document. Ids must be integers in [0, vocabSize)
   * and differ from the EoD id; a bad id throws {@link TokenError} and aborts the
   * writer (the shard in progress is deleted, no manifest is written).
   */
  pushTokens(chunk: ArrayLike<number>): void {
    this.checkOpen();
    if (!this.inDocument) throw new DataError('shard writer: pushTokens() outside a document');
    const { vocabSize, eodId } = this.options;
    const shard = this.shard!;
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      const take = Math.min(this.buffer.length - this.bufferFill, n - i);
      for (let j = 0; j < take; j++) {
        const t = chunk[i + j]!;
        if (!(t >= 0 && t < vocabSize && Number.isInteger(t)) || t === eodId) {
          this.abort();
          throw t === eodId
            ? new TokenError(this.totalDocuments, t, `text token equals the EoD id ${eodId}`)
            : new TokenError(this.totalDocuments, t, `token ${String(t)} is not an integer in [0, ${vocabSize})`);
        }
        this.buffer[this.bufferFill + j] = t;
      }
      this.bufferFill += take;
      shard.tokens += take;
      this.totalTokens += take;
      i += take;
      if (this.bufferFill === this.buffer.length) this.flush();
    }
  }

  /** Close the open document (writes EoD). */
  endDocument(): void {
    this.checkOpen();
    if (!this.inDocument) throw new DataError('shard writer: endDocument() without beginDocument()');
    this.put(this.options.eodId);
    this.inDocument = false;
    this.totalDocuments++;
  }

  /** Write one whole document. */
  addDocument(tokens: ArrayLike<number>): void {
    this.beginDocument();
    this.pushTokens(tokens);
    this.endDocument();
  }

  /**
   * Finish the last shard and write the manifest. Throws {@link EmptyCorpusError}
   * (and removes temporary files) when no document was written.
   */
  close(): ShardManifest {
    this.checkOpen();
    if (this.inDocument) throw new DataError(`shard writer: close() while document ${this.totalDocuments} is open`);
    if (this.totalDocuments === 0) {
      this.abort();
      throw new EmptyCorpusError(this.manifestPath, 'no document was written');
    }
    if (this.shard !== undefined) this.finalizeShard();
    const manifest: ShardManifest = {
      format: MANIFEST_FORMAT,
      version: 1,
      dtype: this.dtype,
      vocabSize: this.options.vocabSize,
      bodId: this.options.bodId,
      eodId: this.options.eodId,
      numTokens: this.totalTokens,
      numDocuments: this.totalDocuments,
      shards: this.done,
    };
    writeDataFile(this.manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    this.state = 'closed';
    return manifest;
  }

  /** Discard the shard being written (completed shards stay; no manifest is written). */
  abort(): void {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    if (this.shard !== undefined) {
      if (!this.shard.closed) closeSync(this.shard.fd);
      rmSync(this.shard.tmp, { force: true });
      this.shard = undefined;
    }
  }
}

/**
 * Encode and write a document stream to shards, streaming, and return the
 * manifest. On any error the partial shard is removed and no manifest is written.
 */
export async function writeShards(
  documents: DocumentSource<Document | ArrayLike<number>>,
  options: ShardWriterOptions & { readonly encoder?: TokenEncoder },
): Promise<ShardManifest> {
  const writer = new ShardWriter(options);
  try {
    for await (const doc of documents) {
      if (typeof (doc as Document).text === 'string') {
        if (options.encoder === undefined) throw new InvalidOptionError('encoder', 'required to write text documents');
        writer.addDocument(options.encoder.encode((doc as Document).text));
      } else writer.addDocument(doc as ArrayLike<number>);
    }
    return writer.close();
  } catch (e) {
    writer.abort();
    throw e;
  }
}
