import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Document } from '../document';
import { DocumentReadError, EmptyCorpusError, InvalidOptionError, JsonlError } from '../errors';

/** Options of {@link readJsonl}. */
export interface JsonlOptions {
  /**
   * What to do with a bad line (invalid JSON, not an object, `text` missing or not a
   * string, `id`/`url`/`lang` of the wrong type): `throw` a {@link JsonlError}
   * naming file and line (default), or `skip` it and count it in `stats`.
   */
  readonly onError?: 'throw' | 'skip';
  /** Do not throw {@link EmptyCorpusError} when no document was read (default false). */
  readonly allowEmpty?: boolean;
}

/** Counters of a {@link JsonlReader}, updated while it streams. */
export interface JsonlStats {
  /** Files opened so far. */
  files: number;
  /** Documents yielded. */
  documents: number;
  /** Bad lines skipped (only in `skip` mode). */
  skipped: number;
  /** The first 100 skipped-line errors, for diagnostics. */
  readonly errors: JsonlError[];
}

/**
 * Streaming JSONL document reader: one JSON object per line with a string `text`
 * and optional `id` (string or number; default `<file name>:<line>`), `url` and
 * `lang` (strings or null). Blank lines are ignored. Reads line by line, so files
 * larger than memory work. Iterating again re-reads the files.
 */
export class JsonlReader implements AsyncIterable<Document> {
  /** Live counters (reset at the start of each iteration). */
  readonly stats: JsonlStats = { files: 0, documents: 0, skipped: 0, errors: [] };
  private readonly files: readonly string[];
  private readonly onError: 'throw' | 'skip';
  private readonly allowEmpty: boolean;

  constructor(files: string | readonly string[], options: JsonlOptions = {}) {
    this.files = typeof files === 'string' ? [files] : files;
    if (this.files.length === 0) throw new InvalidOptionError('files', 'give at least one JSONL file');
    this.onError = options.onError ?? 'throw';
    if (this.onError !== 'throw' && this.onError !== 'skip') {
      throw new InvalidOptionError('onError', `expected "throw" or "skip", got ${JSON.stringify(this.onError)}`);
    }
    this.allowEmpty = options.allowEmpty ?? false;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Document> {
    Object.assign(this.stats, { files: 0, documents: 0, skipped: 0 });
    this.stats.errors.length = 0;
    for (const file of this.files) {
      this.stats.files++;
      for await (const doc of this.readFile(file)) {
        this.stats.documents++;
        yield doc;
      }
    }
    if (this.stats.documents === 0 && !this.allowEmpty) {
      throw new EmptyCorpusError(this.files.join(', '), 'no document in the JSONL input');
    }
  }

  private async *readFile(file: string): AsyncGenerator<Document> {
    let info;
    try {
      info = await stat(file);
    } catch (cause) {
      throw new DocumentReadError(file, 'cannot open JSONL file', { cause });
    }
    if (!info.isFile()) throw new DocumentReadError(file, 'not a regular file');
    let handle;
    try {
      handle = await open(file, 'r');
    } catch (cause) {
      throw new DocumentReadError(file, 'cannot open JSONL file', { cause });
    }
    const base = path.basename(file);
    const stream = handle.createReadStream({ encoding: 'utf8' });
    const lines = createInterface({ input: stream, crlfDelay: Infinity });
    let lineNo = 0;
    try {
      for await (const raw of lines) {
        lineNo++;
        const line = lineNo === 1 && raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
        if (line.trim() === '') continue;
        const parsed = parseLine(file, lineNo, line, base);
        if (parsed instanceof JsonlError) {
          if (this.onError === 'throw') throw parsed;
          this.stats.skipped++;
          if (this.stats.errors.length < 100) this.stats.errors.push(parsed);
          continue;
        }
        yield parsed;
      }
    } catch (cause) {
      if (cause instanceof JsonlError) throw cause;
      throw new DocumentReadError(file, `read failed after line ${lineNo}`, { cause });
    } finally {
      lines.close();
      stream.destroy();
      await handle.close().catch(() => undefined);
    }
  }
}

function parseLine(file: string, line: number, text: string, base: string): Document | JsonlError {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    return new JsonlError(file, line, 'invalid JSON', { cause });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return new JsonlError(file, line, 'not a JSON object');
  }
  const record = value as Record<string, unknown>;
  if (typeof record.text !== 'string') return new JsonlError(file, line, 'field "text" is missing or not a string');
  let id: string;
  if (record.id === undefined || record.id === null) id = `${base}:${line}`;
  else if (typeof record.id === 'string') id = record.id;
  else if (typeof record.id === 'number' && Number.isFinite(record.id)) id = String(record.id);
  else return new JsonlError(file, line, 'field "id" is not a string or number');
  const doc: { id: string; text: string; url?: string; lang?: string } = { id, text: record.text };
  for (const key of ['url', 'lang'] as const) {
    const v = record[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string') return new JsonlError(file, line, `field "${key}" is not a string`);
    doc[key] = v;
  }
  return doc;
}

/** Stream documents from one or more JSONL files (see {@link JsonlReader}). */
export function readJsonl(files: string | readonly string[], options: JsonlOptions = {}): JsonlReader {
  return new JsonlReader(files, options);
}
