import type { Document } from '../document';
import { InvalidOptionError } from '../errors';
import { unitHash } from '../hash';
import type { DocumentFilter, FilterResult } from './report';
import { KEPT } from './report';

/** Options of {@link SamplerFilter}. */
export interface SamplerOptions {
  /** Fraction of documents to keep, in [0, 1]. */
  readonly rate: number;
  /** Seed (default 0). */
  readonly seed?: number | string;
}

/**
 * Random document sampler (the "random sampler" step of the Apertus pipelines,
 * e.g. 31.35% for q33 languages without a classifier). Unlike datatrove's sampler
 * it is deterministic: a document is kept iff `unitHash(seed, id) < rate`, so
 * re-running the pipeline keeps the same documents.
 */
export class SamplerFilter implements DocumentFilter {
  /** Filter name in reports. */
  readonly name = 'sampler';
  private readonly rate: number;
  private readonly seed: number | string;

  constructor(options: SamplerOptions) {
    if (typeof options.rate !== 'number' || !(options.rate >= 0 && options.rate <= 1)) {
      throw new InvalidOptionError('rate', `expected a number in [0, 1], got ${String(options.rate)}`);
    }
    this.rate = options.rate;
    this.seed = options.seed ?? 0;
  }

  /** Keep the document with probability `rate` (deterministic per id). */
  apply(document: Document): FilterResult {
    if (unitHash(this.seed, document.id) < this.rate) return { document, report: KEPT };
    return { document, report: { kept: false, filter: this.name, reason: 'sampler', detail: `not in the ${this.rate} sample` } };
  }
}
