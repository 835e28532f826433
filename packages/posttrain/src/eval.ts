// Evaluation of one model across the post-training stages (base → SFT → aligned):
//   • perplexity on held-out text, per document or packed;
//   • chrF / chrF++ / BLEU of greedy translations of the held-out German → Romansh set;
//   • memorization probes: greedy continuation of a prefix, compared with the true suffix
//     (exact match, normalised longest common substring, Rouge-L on token ids; §2.6).

import { exactMatch, lcsNorm, rougeL } from '@apertus/goldfish';
import { generateBatch, type ApertusModel, type FinishReason } from '@apertus/model';
import { crossEntropy, noGrad, Tensor } from '@apertus/tensor';
import { APERTUS_EOS_ID, APERTUS_STOP_IDS, applyApertusChatTemplate, type ChatMessage, type Tokenizer } from '@apertus/tokenizer';
import { checkOption, PosttrainError } from './errors';
import { corpusBleu } from './metrics/bleu';
import { corpusChrf } from './metrics/chrf';
import type { EvalReport } from './eval-report';

/** Options of {@link evaluatePerplexity}. */
export interface PerplexityOptions {
  /**
   * `document` (default): every document is scored on its own, in windows of `contextLength`
   * tokens; `packed`: all documents are concatenated into one stream first (context crosses
   * document boundaries, as in packed pretraining evaluation).
   */
  readonly mode?: 'document' | 'packed';
  /** Tokens the model sees at once. Default: the model's `max_position_embeddings`. */
  readonly contextLength?: number;
  /** Id appended to every text document (`</s>` = 2 by default); `null` appends nothing. Token-id documents are used as given. */
  readonly eosId?: number | null;
}

/** Result of {@link evaluatePerplexity}. */
export interface PerplexityResult {
  /** exp(sumNll / tokens). */
  readonly perplexity: number;
  /** sumNll / tokens, nats per token. */
  readonly meanNll: number;
  /** Σ −log p over every predicted token, nats. */
  readonly sumNll: number;
  /** Predicted tokens (every token but the first of each stream). */
  readonly tokens: number;
  /** Documents read. */
  readonly documents: number;
  /** Forward passes (windows). */
  readonly windows: number;
}

/**
 * Perplexity of `model` on held-out documents: texts are tokenized with BOS (the tokenizer's
 * post-processor) and `eosId`; token-id arrays are used as given. Each stream is cut into windows
 * of `contextLength + 1` tokens that overlap by one, so every token after the first is predicted
 * exactly once, with the context restarting at each window. Runs without autograd.
 */
export function evaluatePerplexity(
  model: ApertusModel,
  tokenizer: Tokenizer,
  documents: Iterable<string | readonly number[]>,
  options: PerplexityOptions = {},
): PerplexityResult {
  const mode = options.mode ?? 'document';
  const C = options.contextLength ?? model.config.max_position_embeddings;
  const eosId = options.eosId === undefined ? APERTUS_EOS_ID : options.eosId;
  checkOption(mode === 'document' || mode === 'packed', 'mode', `expected "document" or "packed", got ${String(mode)}`);
  checkOption(Number.isInteger(C) && C >= 1 && C <= model.config.max_position_embeddings, 'contextLength', `expected an integer in [1, ${model.config.max_position_embeddings}], got ${C}`);
  let sumNll = 0;
  let tokens = 0;
  let windows = 0;
  let count = 0;
  const score = (ids: readonly number[]): void => {
    for (let start = 0; start + 1 < ids.length; start += C) {
      const w = ids.slice(start, start + C + 1);
      const n = w.length - 1;
      const nll = noGrad(() => crossEntropy(model.forward(Tensor.ints(w.slice(0, n), [1, n])), Tensor.ints(w.slice(1), [1, n]), { reduction: 'none' }).data as Float32Array);
      for (let t = 0; t < n; t++) sumNll += nll[t]!;
      tokens += n;
      windows++;
    }
  };
  const stream: number[] = [];
  for (const doc of documents) {
    count++;
    const ids = typeof doc === 'string' ? [...tokenizer.encodeIds(doc), ...(eosId === null ? [] : [eosId])] : [...doc];
    if (mode === 'document') score(ids);
    else for (const id of ids) stream.push(id);
  }
  if (mode === 'packed') score(stream);
  if (tokens === 0) throw new PosttrainError('LengthMismatch', 'no token to predict: the documents are empty', { field: 'documents' });
  return { perplexity: Math.exp(sumNll / tokens), meanNll: sumNll / tokens, sumNll, tokens, documents: count, windows };
}

/** A prompt (OpenAI messages, no assistant answer) with its reference answer. */
export interface TranslationPrompt {
  /** Messages rendered with `addGenerationPrompt: true`. */
  readonly messages: readonly ChatMessage[];
  /** The reference translation. */
  readonly reference: string;
}

/** Options of {@link evaluateTranslation}. */
export interface TranslationEvalOptions {
  /** Most new tokens per translation. Default 256. */
  readonly maxTokens?: number;
  /** Prompts generated together. Default 8. */
  readonly batchSize?: number;
  /** Date of the default system prompt. Default: today (fix it for reproducible numbers). */
  readonly date?: string | Date;
  /** Generation stops on these ids. Default `[2, 68, 72]` (`</s>`, `<|assistant_end|>`, `<|tools_suffix|>`). */
  readonly stopTokenIds?: readonly number[];
}

/** One generated translation. */
export interface TranslationOutput {
  /** The reference. */
  readonly reference: string;
  /** The decoded greedy output (special tokens skipped). */
  readonly hypothesis: string;
  /** Generated ids (stop id excluded). */
  readonly tokens: readonly number[];
  /** `stop` or `length`. */
  readonly finishReason: FinishReason;
}

/** Result of {@link evaluateTranslation}. */
export interface TranslationEvalResult {
  /** Corpus chrF2 (sacreBLEU default). */
  readonly chrf: number;
  /** Corpus chrF2++. */
  readonly chrfPlusPlus: number;
  /** Corpus BLEU (sacreBLEU default: 13a, exp smoothing). */
  readonly bleu: number;
  /** Every output, in input order. */
  readonly outputs: TranslationOutput[];
}

/**
 * Greedy translations (temperature 0, stop on the Apertus end ids) of every prompt, scored with
 * corpus chrF, chrF++ and BLEU against the references.
 */
export function evaluateTranslation(
  model: ApertusModel,
  tokenizer: Tokenizer,
  prompts: readonly TranslationPrompt[],
  options: TranslationEvalOptions = {},
): TranslationEvalResult {
  const maxTokens = options.maxTokens ?? 256;
  const batchSize = options.batchSize ?? 8;
  checkOption(Number.isInteger(batchSize) && batchSize >= 1, 'batchSize', `expected a positive integer, got ${batchSize}`);
  checkOption(Number.isInteger(maxTokens) && maxTokens >= 1, 'maxTokens', `expected a positive integer, got ${maxTokens}`);
  if (prompts.length === 0) throw new PosttrainError('LengthMismatch', 'no prompts to translate', { field: 'prompts' });
  const stopTokenIds = options.stopTokenIds ?? APERTUS_STOP_IDS;
  const outputs: TranslationOutput[] = [];
  for (let i = 0; i < prompts.length; i += batchSize) {
    const batch = prompts.slice(i, i + batchSize);
    const ids = batch.map(
      (p) => applyApertusChatTemplate(tokenizer, p.messages, { addGenerationPrompt: true, ...(options.date !== undefined ? { date: options.date } : {}) }).ids,
    );
    const gens = generateBatch(model, ids, { temperature: 0, maxTokens, stopTokenIds });
    gens.forEach((g, k) => {
      outputs.push({ reference: batch[k]!.reference, hypothesis: tokenizer.decode(g.tokens, { skipSpecialTokens: true }), tokens: g.tokens, finishReason: g.finishReason });
    });
  }
  const hyps = outputs.map((o) => o.hypothesis);
  const refs = outputs.map((o) => o.reference);
  return {
    chrf: corpusChrf(hyps, refs).score,
    chrfPlusPlus: corpusChrf(hyps, refs, { wordOrder: 2 }).score,
    bleu: corpusBleu(hyps, refs).score,
    outputs,
  };
}

/** Options of {@link evaluateMemorization}. */
export interface MemorizationOptions {
  /** Tokens of each probe that are compared (the held-out suffix). Default 50 (Goldfish). */
  readonly suffixLength?: number;
  /**
   * Tokens given as the prompt. Default: everything before the last `suffixLength` tokens
   * (Goldfish); with a value, the suffix is the `suffixLength` tokens right after the prefix
   * (Apertus' prefix-length sweep).
   */
  readonly prefixLength?: number;
  /** Probes generated together. Default 8. */
  readonly batchSize?: number;
}

/** Result of one memorization probe. */
export interface MemorizationProbe {
  /** Greedy continuation equals the true suffix. */
  readonly exactMatch: boolean;
  /** Longest common substring / suffix length. */
  readonly lcsNorm: number;
  /** Rouge-L F1 on token ids. */
  readonly rougeL: number;
  /** The generated ids. */
  readonly generated: readonly number[];
}

/** Result of {@link evaluateMemorization}. */
export interface MemorizationResult {
  /** Probes run. */
  readonly probes: number;
  /** Sequences too short for prefix + suffix (skipped). */
  readonly skipped: number;
  /** Fraction of probes reproduced exactly. */
  readonly exactMatchRate: number;
  /** Mean lcs_norm. */
  readonly meanLcsNorm: number;
  /** Mean Rouge-L. */
  readonly meanRougeL: number;
  /** Per probe, in input order (skipped sequences left out). */
  readonly results: MemorizationProbe[];
}

/**
 * Memorization probes on token sequences (e.g. training documents): greedy-decode `suffixLength`
 * tokens after the prefix (no stop ids) and compare with the true suffix using @apertus/goldfish's
 * `exactMatch`, `lcsNorm` (longest common substring) and `rougeL`.
 */
export function evaluateMemorization(model: ApertusModel, sequences: readonly (readonly number[])[], options: MemorizationOptions = {}): MemorizationResult {
  const suffixLength = options.suffixLength ?? 50;
  const batchSize = options.batchSize ?? 8;
  const prefixLength = options.prefixLength;
  checkOption(Number.isInteger(suffixLength) && suffixLength >= 1, 'suffixLength', `expected a positive integer, got ${suffixLength}`);
  checkOption(prefixLength === undefined || (Number.isInteger(prefixLength) && prefixLength >= 1), 'prefixLength', `expected a positive integer, got ${prefixLength}`);
  checkOption(Number.isInteger(batchSize) && batchSize >= 1, 'batchSize', `expected a positive integer, got ${batchSize}`);
  const probes: { prefix: number[]; suffix: number[] }[] = [];
  let skipped = 0;
  for (const s of sequences) {
    const p = prefixLength ?? s.length - suffixLength;
    if (p < 1 || p + suffixLength > s.length) {
      skipped++;
      continue;
    }
    probes.push({ prefix: s.slice(0, p), suffix: s.slice(p, p + suffixLength) });
  }
  const results: MemorizationProbe[] = [];
  for (let i = 0; i < probes.length; i += batchSize) {
    const batch = probes.slice(i, i + batchSize);
    const gens = generateBatch(
      model,
      batch.map((b) => b.prefix),
      { temperature: 0, maxTokens: suffixLength, stopTokenIds: [] },
    );
    gens.forEach((g, k) => {
      const ref = batch[k]!.suffix;
      results.push({ exactMatch: exactMatch(g.tokens, ref), lcsNorm: lcsNorm(ref, g.tokens), rougeL: rougeL(ref, g.tokens), generated: g.tokens });
    });
  }
  const n = results.length;
  const mean = (f: (r: MemorizationProbe) => number): number => (n === 0 ? 0 : results.reduce((a, r) => a + f(r), 0) / n);
  return {
    probes: n,
    skipped,
    exactMatchRate: mean((r) => (r.exactMatch ? 1 : 0)),
    meanLcsNorm: mean((r) => r.lcsNorm),
    meanRougeL: mean((r) => r.rougeL),
    results,
  };
}

/** What {@link evaluateSuite} runs; each part is optional. */
export interface EvalSuite {
  /** Held-out documents for perplexity. */
  readonly heldOut?: Iterable<string | readonly number[]>;
  /** Options of the perplexity evaluation. */
  readonly perplexity?: PerplexityOptions;
  /** Translation prompts with references (e.g. the UDHR task's `eval` set). */
  readonly translation?: readonly TranslationPrompt[];
  /** Options of the translation evaluation. */
  readonly translationOptions?: TranslationEvalOptions;
  /** Token sequences to probe for memorization. */
  readonly memorization?: readonly (readonly number[])[];
  /** Options of the memorization probes. */
  readonly memorizationOptions?: MemorizationOptions;
}

/** Run every part of `suite` on one model and collect the headline numbers for {@link formatEvalReport}. */
export function evaluateSuite(model: ApertusModel, tokenizer: Tokenizer, suite: EvalSuite): EvalReport {
  const report: { -readonly [K in keyof EvalReport]: EvalReport[K] } = {};
  if (suite.heldOut !== undefined) report.perplexity = evaluatePerplexity(model, tokenizer, suite.heldOut, suite.perplexity).perplexity;
  if (suite.translation !== undefined) {
    const t = evaluateTranslation(model, tokenizer, suite.translation, suite.translationOptions);
    report.chrf = t.chrf;
    report.chrfPlusPlus = t.chrfPlusPlus;
    report.bleu = t.bleu;
  }
  if (suite.memorization !== undefined) {
    const m = evaluateMemorization(model, suite.memorization, suite.memorizationOptions);
    report.exactMatch = m.exactMatchRate;
    report.lcsNorm = m.meanLcsNorm;
    report.rougeL = m.meanRougeL;
  }
  return report;
}
