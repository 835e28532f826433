import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Document } from '../document';
import { DocumentReadError, EmptyCorpusError } from '../errors';

/** Options of {@link readTextFolder}. */
export interface TextFolderOptions {
  /** File extensions to read (lower-case, with dot; default `['.txt']`); `null` reads every file. */
  readonly extensions?: readonly string[] | null;
  /** Language code given to every document (optional). */
  readonly lang?: string;
  /** Do not throw {@link EmptyCorpusError} when no file matched (default false). */
  readonly allowEmpty?: boolean;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Relative paths (with `/`) of matching files under `root`, sorted by UTF-16 code units. */
export async function listTextFiles(root: string, options: TextFolderOptions = {}): Promise<string[]> {
  const extensions = options.extensions === undefined ? ['.txt'] : options.extensions;
  let info;
  try {
    info = await stat(root);
  } catch (cause) {
    throw new DocumentReadError(root, 'corpus directory not found', { cause });
  }
  if (!info.isDirectory()) throw new DocumentReadError(root, 'not a directory');
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    const dir = path.join(root, rel);
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (cause) {
      throw new DocumentReadError(dir, 'cannot list directory', { cause });
    }
    for (const entry of entries) {
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) await walk(childRel);
      else if (entry.isFile() || (entry.isSymbolicLink() && (await isFile(path.join(root, childRel))))) {
        if (extensions === null || extensions.includes(path.extname(entry.name).toLowerCase())) out.push(childRel);
      }
    }
  };
  await walk('');
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

/**
 * One document per file under `root`, recursively, in sorted path order (so
 * runs are deterministic). The id is the relative path with `/` separators;
 * files must be valid UTF-8. Only one file is held in memory at a time.
 */
export async function* readTextFolder(root: string, options: TextFolderOptions = {}): AsyncGenerator<Document> {
  const files = await listTextFiles(root, options);
  if (files.length === 0 && !(options.allowEmpty ?? false)) {
    throw new EmptyCorpusError(root, 'no matching text file in the directory');
  }
  for (const rel of files) {
    const file = path.join(root, rel);
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (cause) {
      throw new DocumentReadError(file, 'cannot read file', { cause });
    }
    let text: string;
    try {
      text = STRICT_UTF8.decode(bytes);
    } catch (cause) {
      throw new DocumentReadError(file, 'not valid UTF-8', { cause });
    }
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    yield options.lang === undefined ? { id: rel, text } : { id: rel, text, lang: options.lang };
  }
}
