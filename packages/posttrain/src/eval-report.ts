// The side-by-side report of the post-training stages (base → SFT → aligned) as a markdown table.

import { checkOption, PosttrainError } from './errors';

/** Headline numbers of one model; every field is optional. */
export interface EvalReport {
  /** Perplexity on held-out text (lower is better). */
  readonly perplexity?: number;
  /** Corpus chrF2 of the held-out translations, 0–100. */
  readonly chrf?: number;
  /** Corpus chrF2++, 0–100. */
  readonly chrfPlusPlus?: number;
  /** Corpus BLEU, 0–100. */
  readonly bleu?: number;
  /** Memorization: fraction of probes reproduced exactly, 0–1. */
  readonly exactMatch?: number;
  /** Memorization: mean longest-common-substring / suffix length, 0–1. */
  readonly lcsNorm?: number;
  /** Memorization: mean Rouge-L on token ids, 0–1. */
  readonly rougeL?: number;
}

/** One column of the report. */
export interface EvalStage {
  /** Column title (`base`, `SFT`, `aligned`). */
  readonly name: string;
  /** The stage's numbers. */
  readonly report: EvalReport;
}

/** Options of {@link formatEvalReport}. */
export interface ReportFormatOptions {
  /** Digits after the decimal point. Default 2. */
  readonly digits?: number;
}

const ROWS: readonly { key: keyof EvalReport; label: string; percent: boolean }[] = [
  { key: 'perplexity', label: 'Perplexity, held-out text ↓', percent: false },
  { key: 'chrf', label: 'chrF, held-out translation ↑', percent: false },
  { key: 'chrfPlusPlus', label: 'chrF++, held-out translation ↑', percent: false },
  { key: 'bleu', label: 'BLEU, held-out translation ↑', percent: false },
  { key: 'exactMatch', label: 'Memorization: exact match ↓', percent: true },
  { key: 'lcsNorm', label: 'Memorization: lcs_norm ↓', percent: true },
  { key: 'rougeL', label: 'Memorization: Rouge-L ↓', percent: true },
];

/**
 * A markdown table with one row per metric that any stage reports and one column per stage, in
 * the given order; rates (0–1) are shown as percentages, missing values as `–`.
 */
export function formatEvalReport(stages: readonly EvalStage[], options: ReportFormatOptions = {}): string {
  const digits = options.digits ?? 2;
  checkOption(Number.isInteger(digits) && digits >= 0 && digits <= 10, 'digits', `expected an integer in [0, 10], got ${digits}`);
  if (stages.length === 0) throw new PosttrainError('LengthMismatch', 'no stage to report', { field: 'stages' });
  const cell = (v: number | undefined, percent: boolean): string => {
    if (v === undefined) return '–';
    if (!Number.isFinite(v)) return String(v);
    return percent ? `${(100 * v).toFixed(digits)}%` : v.toFixed(digits);
  };
  const escape = (s: string): string => s.replaceAll('|', '\\|');
  const lines = [`| Metric | ${stages.map((s) => escape(s.name)).join(' | ')} |`, `|---|${stages.map(() => '---:').join('|')}|`];
  for (const row of ROWS) {
    if (!stages.some((s) => s.report[row.key] !== undefined)) continue;
    lines.push(`| ${row.label} | ${stages.map((s) => cell(s.report[row.key], row.percent)).join(' | ')} |`);
  }
  return `${lines.join('\n')}\n`;
}
