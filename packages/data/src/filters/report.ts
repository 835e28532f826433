import type { Document } from '../document';

/** One kind of in-place change a filter made to a document, e.g. `{ kind: 'email', count: 2 }`. */
export interface FilterChange {
  /** What was changed (`email`, `ipv4`, `iban`, ...). */
  readonly kind: string;
  /** How many distinct items of that kind were replaced. */
  readonly count: number;
}

/** What the filters did to one document. */
export interface FilterReport {
  /** Whether the document survived. */
  readonly kept: boolean;
  /** Name of the filter that removed it (only when `kept` is false). */
  readonly filter?: string;
  /** Machine-readable reason code, e.g. `robots:url`, `robots:domain`, `toxicity`, `sampler`. */
  readonly reason?: string;
  /** Human-readable detail, e.g. `disallowed for GPTBot, CCBot`. */
  readonly detail?: string;
  /** In-place changes (PII replacements), absent when nothing changed. */
  readonly changes?: readonly FilterChange[];
}

/** A document after a filter, with the filter's report. */
export interface FilterResult {
  /** The (possibly rewritten) document; the input document when nothing changed. */
  readonly document: Document;
  /** What the filter did. */
  readonly report: FilterReport;
}

/**
 * A pipeline step. `apply` may be async (robots.txt lookups from disk, a
 * classifier on another process).
 */
export interface DocumentFilter {
  /** Short name used in reports and stats (`robots`, `toxicity`, `pii`, ...). */
  readonly name: string;
  /** Decide about (and possibly rewrite) one document. */
  apply(document: Document): FilterResult | Promise<FilterResult>;
}

/** Aggregate statistics over many {@link FilterReport}s. */
export interface FilterStats {
  /** Documents seen. */
  documents: number;
  /** Documents kept. */
  kept: number;
  /** Documents removed. */
  removed: number;
  /** Removed documents per filter name. */
  removedBy: Record<string, number>;
  /** Removed documents per reason code. */
  reasons: Record<string, number>;
  /** Sum of change counts per kind (e.g. distinct e-mails replaced). */
  changes: Record<string, number>;
  /** Documents that had at least one change. */
  changedDocuments: number;
}

/** A fresh, all-zero {@link FilterStats}. */
export function emptyFilterStats(): FilterStats {
  return { documents: 0, kept: 0, removed: 0, removedBy: {}, reasons: {}, changes: {}, changedDocuments: 0 };
}

/** Add one report to running stats (mutates and returns `stats`). */
export function addToStats(stats: FilterStats, report: FilterReport): FilterStats {
  stats.documents++;
  if (report.kept) stats.kept++;
  else {
    stats.removed++;
    const by = report.filter ?? 'unknown';
    stats.removedBy[by] = (stats.removedBy[by] ?? 0) + 1;
    const reason = report.reason ?? by;
    stats.reasons[reason] = (stats.reasons[reason] ?? 0) + 1;
  }
  if (report.changes !== undefined && report.changes.length > 0) {
    stats.changedDocuments++;
    for (const c of report.changes) stats.changes[c.kind] = (stats.changes[c.kind] ?? 0) + c.count;
  }
  return stats;
}

/** A report for a document kept unchanged. */
export const KEPT: FilterReport = Object.freeze({ kept: true });
