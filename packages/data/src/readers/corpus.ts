// A pretraining corpus named by one string, as `apertus-pretrain --data` takes it: `udhr` (the
// bundled declarations), a `.jsonl` file (one {"text": …} object per line) or a folder of
// `.txt`/`.md` files — read as text documents — or the prefix of a Megatron `.bin/.idx` pair,
// read as token documents.

import fs from 'node:fs';
import path from 'node:path';
import type { Document } from '../document';
import { DataError, DocumentReadError, InvalidOptionError } from '../errors';
import { MegatronIndexedDataset } from '../megatron/indexed-dataset';
import { readJsonl } from './jsonl';
import { listTextFiles, readTextFolder } from './text-folder';
import { readUdhr } from './udhr';

const TEXT_FILES = { extensions: ['.txt', '.md'] };

/** What {@link readCorpus} reads. */
export interface CorpusOptions {
  /** `udhr`, a `.jsonl` file or a folder of `.txt`/`.md` files. */
  readonly source: string;
  /** UDHR declarations (source `udhr`). */
  readonly languages?: readonly string[];
  /** Longest document in characters; a longer one is refused. */
  readonly maxDocumentChars: number;
  /** How the limit is named in messages (the setting or flag that sets it). Default `maxDocumentChars`. */
  readonly limitName?: string;
}

function statOrThrow(p: string): fs.Stats {
  try {
    return fs.statSync(p);
  } catch (cause) {
    throw new DocumentReadError(p, `data not found or not accessible (${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message})`, { cause });
  }
}

/**
 * The prefix of a Megatron `.bin/.idx` pair that `source` designates (`PREFIX`, `PREFIX.idx`, or
 * `PREFIX.bin` with `PREFIX.idx` beside it), absolute; null when it designates none.
 */
export function megatronPrefix(source: string): string | null {
  const prefix = source.replace(/\.(bin|idx)$/, '');
  return fs.existsSync(`${prefix}.idx`) && !fs.statSync(`${prefix}.idx`).isDirectory() ? path.resolve(prefix) : null;
}

/**
 * A description of the corpus files (paths, sizes, modification times) that changes when they
 * change; `udhr` is described by its languages. Reads no document.
 * @throws DocumentReadError when the source does not exist
 */
export async function corpusFingerprint(o: Pick<CorpusOptions, 'source' | 'languages'>): Promise<unknown> {
  if (o.source === 'udhr') return { kind: 'udhr', languages: o.languages };
  const prefix = megatronPrefix(o.source);
  if (prefix !== null) return { kind: 'megatron', prefix, files: ['.idx', '.bin'].map((e) => { const s = statOrThrow(prefix + e); return [e, s.size, s.mtimeMs]; }) };
  const abs = path.resolve(o.source);
  const st = statOrThrow(abs);
  if (st.isDirectory()) {
    const files = await listTextFiles(abs, TEXT_FILES);
    return { kind: 'folder', path: abs, files: files.map((f) => { const s = fs.statSync(path.join(abs, f)); return [f, s.size, s.mtimeMs]; }) };
  }
  return { kind: 'jsonl', path: abs, size: st.size, mtimeMs: st.mtimeMs };
}

/**
 * The text documents of the corpus, streamed. Errors name the file (and the document):
 * DocumentReadError for a missing, unreadable, unsupported or oversized source or document, and
 * the readers' own DataErrors (a bad JSONL line, an empty folder).
 */
export async function* readCorpus(o: CorpusOptions): AsyncGenerator<Document> {
  const limit = o.maxDocumentChars;
  const limitName = o.limitName ?? 'maxDocumentChars';
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidOptionError('maxDocumentChars', `expected a positive integer, got ${limit}`);
  let source: AsyncIterable<Document>;
  const label = o.source === 'udhr' ? 'udhr' : path.resolve(o.source);
  if (o.source === 'udhr') {
    source = readUdhr({ ...(o.languages ? { languages: [...o.languages] } : {}) });
  } else if (statOrThrow(label).isDirectory()) {
    // Refuse files that cannot fit the document limit before reading them (a UTF-8 byte is at
    // least a third of a UTF-16 code unit, so more than 3 × limit bytes is always too long).
    for (const f of await listTextFiles(label, TEXT_FILES)) {
      const size = fs.statSync(path.join(label, f)).size;
      if (size > 3 * limit) throw new DocumentReadError(path.join(label, f), `document of ${size} bytes exceeds ${limitName} ${limit}; split it into smaller files or raise the limit`);
    }
    source = readTextFolder(label, TEXT_FILES);
  } else if (/\.jsonl?$/i.test(label)) {
    source = readJsonl(label);
  } else {
    throw new DocumentReadError(label, 'unsupported data file: expected "udhr", a .jsonl file (one {"text": ...} object per line), a folder of .txt/.md files or a Megatron .bin/.idx prefix');
  }
  try {
    for await (const doc of source) {
      if (doc.text.length > limit) throw new DocumentReadError(`${label} (document ${doc.id})`, `document of ${doc.text.length} characters exceeds ${limitName} ${limit}; split it or raise the limit`);
      yield doc;
    }
  } catch (e) {
    if (e instanceof DataError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (e instanceof RangeError || code === 'ERR_STRING_TOO_LONG' || code === 'ERR_FS_FILE_TOO_LARGE') {
      throw new DocumentReadError(label, `a document is too large to hold in memory (${(e as Error).message}); split it into smaller documents`, { cause: e });
    }
    if (typeof code === 'string') throw new DocumentReadError(label, `cannot read data (${code}: ${(e as Error).message})`, { cause: e });
    throw e;
  }
}

/**
 * The documents of a Megatron indexed dataset as token arrays (the sequences of each document
 * concatenated), in order; `bodId`/`eodId`, when given, are removed from a document's start/end.
 * @throws MegatronFormatError naming the `.idx` or `.bin` at fault
 */
export function* readMegatronDocuments(prefix: string, o: { readonly bodId?: number; readonly eodId?: number } = {}): Generator<number[]> {
  const ds = MegatronIndexedDataset.open(prefix);
  try {
    const idx = ds.documentIndices;
    for (let d = 0; d + 1 < idx.length; d++) {
      let tokens: number[] = [];
      for (let q = idx[d]!; q < idx[d + 1]!; q++) tokens = tokens.concat(Array.from(ds.get(q)));
      const start = tokens[0] === o.bodId ? 1 : 0;
      const end = tokens.length > start && tokens[tokens.length - 1] === o.eodId ? tokens.length - 1 : tokens.length;
      yield tokens.slice(start, end);
    }
  } finally {
    ds.close();
  }
}
