// Evaluate each stage (base → SFT → aligned) on the same suite and put the numbers side by side.

import { evaluateMemorization, evaluatePerplexity, evaluateTranslation, formatEvalReport, type EvalReport, type TranslationOutput } from '@apertus/posttrain';
import { loadModel, loadModelTokenizer, resolveModelDir } from '@apertus/trainer';
import { probeSequences, type SuiteOptions, type SuiteTexts } from './suite';

/** A model to evaluate and the column name it gets. */
export interface Stage {
  /** Column title (`base`, `SFT`, `aligned`). */
  readonly name: string;
  /** Model directory, checkpoints folder or run directory. */
  readonly location: string;
}

/** Results of one stage. */
export interface StageResult {
  /** Column title. */
  readonly name: string;
  /** The model directory evaluated. */
  readonly modelDir: string;
  /** Headline numbers (for `formatEvalReport`). */
  readonly report: EvalReport;
  /** Tokens scored for perplexity. */
  readonly perplexityTokens: number;
  /** Memorization probes run. */
  readonly probes: number;
  /** The held-out translations. */
  readonly translations: readonly TranslationOutput[];
  /** Seconds spent. */
  readonly seconds: number;
}

/** Evaluate one stage on the suite. */
export function evaluateStage(stage: Stage, texts: SuiteTexts, o: SuiteOptions): StageResult {
  const t0 = performance.now();
  const modelDir = resolveModelDir(stage.location, 'check the --model path');
  const model = loadModel(modelDir, 'stored');
  const { tokenizer } = loadModelTokenizer(modelDir);
  const report: { -readonly [K in keyof EvalReport]: EvalReport[K] } = {};
  let perplexityTokens = 0;
  if (texts.heldOut.length > 0) {
    const p = evaluatePerplexity(model, tokenizer, texts.heldOut, { contextLength: Math.min(o.contextLength, model.config.max_position_embeddings) });
    report.perplexity = p.perplexity;
    perplexityTokens = p.tokens;
  }
  let translations: TranslationOutput[] = [];
  if (texts.translation.length > 0) {
    const t = evaluateTranslation(model, tokenizer, texts.translation, { maxTokens: o.maxTokens, date: o.date });
    report.chrf = t.chrf;
    report.chrfPlusPlus = t.chrfPlusPlus;
    report.bleu = t.bleu;
    translations = t.outputs;
  }
  let probes = 0;
  const sequences = probeSequences(tokenizer, texts.probeDocuments, o, model.config.max_position_embeddings - 1);
  if (sequences.length > 0) {
    const m = evaluateMemorization(model, sequences, { suffixLength: o.suffixLength });
    report.exactMatch = m.exactMatchRate;
    report.lcsNorm = m.meanLcsNorm;
    report.rougeL = m.meanRougeL;
    probes = m.probes;
  }
  return { name: stage.name, modelDir, report, perplexityTokens, probes, translations, seconds: (performance.now() - t0) / 1000 };
}

/** The side-by-side markdown table, with a line on what was measured. */
export function formatStages(results: readonly StageResult[], texts: SuiteTexts, o: SuiteOptions): string {
  const first = results[0];
  const lines = [
    formatEvalReport(results.map((r) => ({ name: r.name, report: r.report }))).trimEnd(),
    '',
    [
      texts.heldOut.length > 0 ? `perplexity: ${texts.heldOut.length} held-out documents (${first?.perplexityTokens ?? 0} tokens${o.heldOut === 'udhr' ? ', the pretraining validation split' : `, ${o.heldOut}`})` : null,
      texts.translation.length > 0 ? `translation: German → Romansh, ${texts.translation.length} held-out UDHR articles (≤ ${o.maxChars} characters), greedy, ≤ ${o.maxTokens} tokens` : null,
      (first?.probes ?? 0) > 0 ? `memorization: ${first!.probes} pretraining documents (${o.probeLanguage}), greedy ${o.suffixLength}-token suffix after the rest of the document` : null,
    ]
      .filter((x) => x !== null)
      .join('; '),
  ];
  return `${lines.join('\n')}\n`;
}
