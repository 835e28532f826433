import type { Document, DocumentSource } from '../document';
import type { DocumentFilter, FilterChange, FilterReport, FilterResult, FilterStats } from './report';
import { addToStats, emptyFilterStats } from './report';

/**
 * The compliance steps, named by their role. The pipeline always applies them in
 * the order of the Apertus pipelines (training-recipe §7.4):
 * robots → quality → toxicity → sampler → PII.
 */
export interface PipelineSteps {
  /** robots.txt opt-outs ({@link RobotsFilter}). */
  readonly robots?: DocumentFilter;
  /** Quality classifier (not part of this package: plug any filter in). */
  readonly quality?: DocumentFilter;
  /** Toxicity ({@link ToxicityFilter}). */
  readonly toxicity?: DocumentFilter;
  /** Random sampler ({@link SamplerFilter}). */
  readonly sampler?: DocumentFilter;
  /** PII replacement ({@link PiiFilter}), always last. */
  readonly pii?: DocumentFilter;
}

/** The fixed order in which {@link CompliancePipeline} applies its steps. */
export const PIPELINE_ORDER: readonly (keyof PipelineSteps)[] = Object.freeze([
  'robots',
  'quality',
  'toxicity',
  'sampler',
  'pii',
]);

/**
 * Applies the compliance filters in the spec's order, stops at the first removal,
 * merges the per-filter reports into one {@link FilterReport} per document, and
 * keeps aggregate {@link FilterStats}.
 */
export class CompliancePipeline {
  /** The configured filters, in application order. */
  readonly filters: readonly DocumentFilter[];
  /** Running totals over every document processed. */
  readonly stats: FilterStats = emptyFilterStats();

  constructor(steps: PipelineSteps) {
    this.filters = PIPELINE_ORDER.map((k) => steps[k]).filter((f): f is DocumentFilter => f !== undefined);
  }

  /** Run one document through every filter. */
  async apply(document: Document): Promise<FilterResult> {
    let current = document;
    const changes: FilterChange[] = [];
    let report: FilterReport = { kept: true };
    for (const filter of this.filters) {
      const result = await filter.apply(current);
      current = result.document;
      if (result.report.changes !== undefined) changes.push(...result.report.changes);
      if (!result.report.kept) {
        report = result.report;
        break;
      }
    }
    const merged: FilterReport = changes.length > 0 ? { ...report, changes } : report;
    addToStats(this.stats, merged);
    return { document: current, report: merged };
  }

  /** Every document with its report (kept and removed), streaming. */
  async *process(documents: DocumentSource): AsyncGenerator<FilterResult> {
    for await (const document of documents) yield await this.apply(document);
  }

  /** Only the kept (and possibly rewritten) documents, streaming. */
  async *kept(documents: DocumentSource): AsyncGenerator<Document> {
    for await (const document of documents) {
      const result = await this.apply(document);
      if (result.report.kept) yield result.document;
    }
  }
}
