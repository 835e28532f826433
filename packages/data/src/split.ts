import type { Document, DocumentSource } from './document';
import { InvalidOptionError } from './errors';
import { unitHash } from './hash';

/** Which side of the train/validation split a document falls on. */
export type SplitName = 'train' | 'validation';

/** Options of the deterministic validation split. */
export interface SplitOptions {
  /** Fraction held out for validation, in [0, 1]. */
  readonly fraction: number;
  /** Seed mixed into the hash (default 0); change it to draw a different split. */
  readonly seed?: number | string;
  /**
   * Hash key: `id` (default) holds out individual documents; `language` holds out
   * whole languages (every document of a held-out language goes to validation;
   * documents without `lang` count as language `und`).
   */
  readonly by?: 'id' | 'language';
}

function check(options: SplitOptions): void {
  if (typeof options.fraction !== 'number' || !(options.fraction >= 0 && options.fraction <= 1)) {
    throw new InvalidOptionError('fraction', `expected a number in [0, 1], got ${String(options.fraction)}`);
  }
  if (options.by !== undefined && options.by !== 'id' && options.by !== 'language') {
    throw new InvalidOptionError('by', `expected "id" or "language", got ${JSON.stringify(options.by)}`);
  }
}

/**
 * Split of one document: `validation` iff `unitHash(seed, key) < fraction`, with
 * key = `id:<id>` or `lang:<lang>`. Independent of document order and of the
 * rest of the corpus, so the split is stable as the corpus grows.
 */
export function assignSplit(document: Pick<Document, 'id' | 'lang'>, options: SplitOptions): SplitName {
  check(options);
  const key = (options.by ?? 'id') === 'id' ? `id:${document.id}` : `lang:${document.lang ?? 'und'}`;
  return unitHash(options.seed ?? 0, key) < options.fraction ? 'validation' : 'train';
}

/** Stream only the documents of one split. */
export async function* selectSplit(
  documents: DocumentSource,
  split: SplitName,
  options: SplitOptions,
): AsyncGenerator<Document> {
  check(options);
  if (split !== 'train' && split !== 'validation') {
    throw new InvalidOptionError('split', `expected "train" or "validation", got ${JSON.stringify(split)}`);
  }
  for await (const d of documents) if (assignSplit(d, options) === split) yield d;
}
