// The held-out translation evaluation of the post-training apps: greedy translations of the
// held-out direction scored with chrF, chrF++ and BLEU, as a `translation` metric record, and the
// scores read back from the metrics of a run.

import type { ApertusModel } from '@apertus/model';
import { evaluateTranslation, type TranslationExample } from '@apertus/posttrain';
import type { Tokenizer } from '@apertus/tokenizer';
import type { MetricRecord } from '@apertus/trainer';

/** Corpus scores of the greedy held-out translations at one step. */
export interface TranslationScores {
  /** Step they were measured at (0 = the starting model). */
  readonly step: number;
  /** chrF2, 0–100. */
  readonly chrf: number;
  /** chrF2++, 0–100. */
  readonly chrfPlusPlus: number;
  /** BLEU, 0–100. */
  readonly bleu: number;
}

/**
 * Translate the held-out prompts greedily and score them; returns the `translation` record (scores,
 * prompt count, the first hypothesis) and reports a line to `log`.
 */
export function translationRecord(
  model: ApertusModel,
  tokenizer: Tokenizer,
  heldOut: readonly TranslationExample[],
  options: { readonly maxTokens: number; readonly date: string },
  step: number,
  log: (message: string) => void,
): MetricRecord {
  const t = evaluateTranslation(model, tokenizer, heldOut.map((e) => ({ messages: e.messages, reference: e.reference })), options);
  const first = t.outputs[0]!;
  log(`translation @ step ${step}: German → Romansh, ${t.outputs.length} held-out articles: chrF ${t.chrf.toFixed(2)}, chrF++ ${t.chrfPlusPlus.toFixed(2)}, BLEU ${t.bleu.toFixed(2)}; article 1 → ${JSON.stringify(first.hypothesis.slice(0, 120))}`);
  return { type: 'translation', step, chrf: t.chrf, chrfPlusPlus: t.chrfPlusPlus, bleu: t.bleu, prompts: t.outputs.length, example: first.hypothesis };
}

/** The translation scores logged in `metrics`, in order. */
export function translationScores(metrics: readonly MetricRecord[]): TranslationScores[] {
  return metrics.filter((r) => r.type === 'translation').map((r) => ({ step: r.step, chrf: r.chrf as number, chrfPlusPlus: r.chrfPlusPlus as number, bleu: r.bleu as number }));
}

/** `held-out chrF a → b`, or '' when nothing was measured (for plot notes). */
export function chrfTrend(metrics: readonly MetricRecord[]): string {
  const t = translationScores(metrics);
  return t.length > 0 ? `held-out chrF ${t.map((x) => x.chrf.toFixed(2)).join(' → ')}` : '';
}

/** The summary line of a post-training run: chrF per measured step. */
export function chrfSummary(metrics: readonly MetricRecord[]): string[] {
  const t = translationScores(metrics);
  return t.length > 0 ? [`  held-out German → Romansh chrF ${t.map((x) => `${x.chrf.toFixed(2)} (step ${x.step})`).join(' → ')}`] : [];
}
