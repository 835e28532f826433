// The evaluation suite of apertus-eval, built once per tokenizer and run on each stage (base → SFT →
// aligned), the numbers side by side:
//   • held-out text for perplexity: by default the UDHR documents that apertus-pretrain's default
//     run holds out for validation (same declarations, same hash split: fraction 0.1, seed 28), so
//     no stage ever trained on them; or a .jsonl ({"text": …} lines) / .txt file;
//   • the held-out translation direction German (deu_1996) → Romansh (roh_rumgr) of the UDHR task,
//     every article of at most `maxChars` characters on both sides, with its reference;
//   • memorization probes as in the Goldfish experiment: training documents of the pretraining
//     corpus (English UDHR articles of the training split) cut to their first `probeTokens` tokens,
//     prompted with all but their last `suffixLength` tokens; the greedy continuation is compared
//     with the true suffix.

import fs from 'node:fs';
import { readUdhr, selectSplit, type Document } from '@apertus/data';
import { buildUdhrTranslationTask, evaluateMemorization, evaluatePerplexity, evaluateTranslation, formatEvalReport, type EvalReport, type TranslationOutput, type TranslationPrompt } from '@apertus/posttrain';
import { loadPretrained } from '@apertus/pretrained';
import type { Tokenizer } from '@apertus/tokenizer';
import { InputError } from '@apertus/trainer';

/** Languages of apertus-pretrain's default corpus (its `DEFAULT_UDHR_LANGUAGES`). */
export const PRETRAIN_UDHR_LANGUAGES: readonly string[] = Object.freeze(['eng', 'deu_1996', 'gsw1', 'fra', 'ita', 'roh_rumgr']);

/** Settings of the evaluation suite. */
export interface SuiteOptions {
  /** `udhr` (the pretraining validation split) or a `.jsonl` / `.txt` file of held-out text; null skips perplexity. */
  readonly heldOut: string | null;
  /** Declarations of the pretraining corpus (for the default held-out text and the memorization probes). */
  readonly languages: readonly string[];
  /** Validation fraction of the pretraining split. */
  readonly splitFraction: number;
  /** Seed of the pretraining split. */
  readonly splitSeed: number;
  /** Tokens per perplexity window. */
  readonly contextLength: number;
  /** Longest UDHR article (characters) in the held-out translation set; 0 skips the translations. */
  readonly maxChars: number;
  /** Most tokens generated per translation. */
  readonly maxTokens: number;
  /** Date in the default system prompt of the translation prompts. */
  readonly date: string;
  /** Memorization probes (0 skips them). */
  readonly probes: number;
  /** UDHR declaration the probes come from (a pretraining language). */
  readonly probeLanguage: string;
  /** Tokens compared per probe (Goldfish: 50). */
  readonly suffixLength: number;
  /** Shortest prompt of a probe, in tokens. */
  readonly minPrefix: number;
  /** Documents are cut to their first this many tokens before probing (Goldfish example: 128). */
  readonly probeTokens: number;
}

/** The defaults (they match apertus-pretrain's and apertus-sft's defaults). */
export const DEFAULT_SUITE: Readonly<SuiteOptions> = Object.freeze({
  heldOut: 'udhr',
  languages: PRETRAIN_UDHR_LANGUAGES,
  splitFraction: 0.1,
  splitSeed: 28,
  contextLength: 512,
  maxChars: 400,
  maxTokens: 160,
  date: '2025-09-01',
  probes: 16,
  probeLanguage: 'eng',
  suffixLength: 50,
  minPrefix: 16,
  probeTokens: 128,
});

/** Texts of the suite (tokenizer-independent). */
export interface SuiteTexts {
  /** Held-out documents for perplexity (empty = skipped). */
  readonly heldOut: readonly string[];
  /** Held-out translation prompts. */
  readonly translation: readonly TranslationPrompt[];
  /** Candidate documents for the memorization probes, in corpus order. */
  readonly probeDocuments: readonly string[];
}

async function collect(docs: AsyncIterable<Document>): Promise<string[]> {
  const out: string[] = [];
  for await (const d of docs) out.push(d.text);
  return out;
}

function readTextFile(file: string): string[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new InputError(file, `cannot read held-out text (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
  }
  if (!file.endsWith('.jsonl')) return text.trim() === '' ? [] : [text];
  return text.split('\n').flatMap((l, i) => {
    if (l.trim() === '') return [];
    let v: unknown;
    try {
      v = JSON.parse(l);
    } catch (e) {
      throw new InputError(`${file}:${i + 1}`, `${file}:${i + 1}: invalid JSON (${(e as Error).message})`);
    }
    const t = (v as { text?: unknown } | null)?.text;
    if (typeof t !== 'string') throw new InputError(`${file}:${i + 1}`, `${file}:${i + 1}: text: expected a string`);
    return [t];
  });
}

/** Read the held-out text, the translation set and the probe documents. */
export async function loadSuiteTexts(o: SuiteOptions): Promise<SuiteTexts> {
  const split = { fraction: o.splitFraction, seed: o.splitSeed };
  let heldOut: string[] = [];
  if (o.heldOut === 'udhr') heldOut = await collect(selectSplit(readUdhr({ languages: o.languages }), 'validation', split));
  else if (o.heldOut !== null) heldOut = readTextFile(o.heldOut);
  if (o.heldOut !== null && heldOut.length === 0) throw new InputError(o.heldOut, 'no held-out text');
  const translation: TranslationPrompt[] =
    o.maxChars > 0 ? (await buildUdhrTranslationTask({ languages: ['deu_1996', 'roh_rumgr'], maxExamples: 0, maxChars: o.maxChars })).eval.map((e) => ({ messages: e.messages, reference: e.reference })) : [];
  const probeDocuments = o.probes > 0 ? await collect(selectSplit(readUdhr({ languages: [o.probeLanguage] }), 'train', split)) : [];
  return { heldOut, translation, probeDocuments };
}

/**
 * Token sequences of the first `probes` documents long enough for `minPrefix + suffixLength`
 * tokens (BOS included, as the tokenizer's post-processor adds it), each cut to its first
 * `min(probeTokens, contextLimit)` tokens.
 */
export function probeSequences(
  tokenizer: Tokenizer,
  documents: readonly string[],
  o: Pick<SuiteOptions, 'probes' | 'suffixLength' | 'minPrefix' | 'probeTokens'>,
  contextLimit = Number.MAX_SAFE_INTEGER,
): number[][] {
  const out: number[][] = [];
  const cut = Math.min(o.probeTokens, contextLimit);
  for (const d of documents) {
    if (out.length >= o.probes) break;
    const ids = tokenizer.encodeIds(d).slice(0, cut);
    if (ids.length >= o.minPrefix + o.suffixLength) out.push(ids);
  }
  return out;
}

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

/** Evaluate one stage on the suite (its model: a model directory, a run folder, a GGUF file or a Hub id). */
export async function evaluateStage(stage: Stage, texts: SuiteTexts, o: SuiteOptions): Promise<StageResult> {
  const t0 = performance.now();
  const { model, tokenizer, source } = await loadPretrained(stage.location);
  const modelDir = source.path;
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
