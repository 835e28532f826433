// The Goldfish experiment at small scale (Hans et al. 2024, "extreme" setting; training-recipe
// §2.6): train a tiny model for many epochs on a handful of documents, once with the standard
// loss and once with the Goldfish loss (k = 4), from the same initialisation and data, then
// measure verbatim recall: prompt with everything but the last 50 tokens of each document, decode
// 50 tokens greedily, and compare with the held-out tokens (exact match, longest common substring).

import { AdamW, LrScheduler, constantSchedule } from '@apertus/ademamix';
import { buildSample, readUdhr } from '@apertus/data';
import { exactMatch, longestCommonSubstring, rougeL } from '@apertus/goldfish';
import { ApertusModel, generate, presetConfig, type ApertusConfig } from '@apertus/model';
import { APERTUS_BOS_ID, APERTUS_EOS_ID, APERTUS_PAD_ID, Tokenizer, trainApertusBpe } from '@apertus/tokenizer';
import { causalLmLoss, collateLm, trainStep, type LmBatch } from '@apertus/trainer';
import { PretrainConfigError } from './errors';

/** Settings of {@link runGoldfishExperiment}. */
export interface GoldfishExperimentOptions {
  /** Documents to memorise (UDHR articles in `language`, the first long enough ones). Default 8. */
  readonly documents?: number;
  /** UDHR declaration to take the documents from. Default `eng`. */
  readonly language?: string;
  /** Tokens held out at the end of each document and generated back. Default 50 (as the paper). */
  readonly holdout?: number;
  /** Minimum prompt length in tokens (documents shorter than holdout + this are skipped). Default 30. */
  readonly minPrefix?: number;
  /** Documents are cut to this many tokens. Default 128. */
  readonly maxTokens?: number;
  /** Full-batch steps (= epochs over the documents). Default 160. */
  readonly steps?: number;
  /** Goldfish k of the Goldfish run. Default 4 (the paper's extreme setting). */
  readonly goldfishK?: number;
  /** Goldfish h (context hashed). Default 13 (the paper's hash width). */
  readonly goldfishH?: number;
  /** Peak learning rate (AdamW, 10-step warm-up, then constant). Default 3e-3. */
  readonly lr?: number;
  /** Tokenizer vocabulary (≥ 1256). Default 1792. */
  readonly vocabSize?: number;
  /** Architecture overrides of the `tiny` preset. Default: hidden 64, 2 layers, 4 heads, 2 KV heads, FFN 256. */
  readonly model?: Partial<ApertusConfig>;
  /** Seed of the initialisation (the same for both runs). Default 28. */
  readonly seed?: number;
  /** Called after every step of each run. */
  readonly onStep?: (run: 'standard' | 'goldfish', step: number, loss: number) => void;
}

/** Recall of one document. */
export interface DocumentRecall {
  /** Document id (`udhr/eng/article-3`, …). */
  readonly id: string;
  /** Tokens of the document (after cutting to `maxTokens`). */
  readonly tokens: number;
  /** All 50 generated tokens equal the held-out ones. */
  readonly exact: boolean;
  /** Longest common substring (in tokens) of the generation and the held-out tokens. */
  readonly lcs: number;
  /** Rouge-L F1 on token ids. */
  readonly rougeL: number;
  /** Held-out tokens the Goldfish mask removed from the loss (0 for the standard run). */
  readonly droppedInHoldout: number;
}

/** Results of one training run. */
export interface RecallSummary {
  /** Documents recalled verbatim. */
  readonly exactMatches: number;
  /** exactMatches / documents. */
  readonly exactMatchRate: number;
  /** Mean of lcs / holdout (Apertus' `lcs_norm`). */
  readonly meanLcsNorm: number;
  /** Mean Rouge-L. */
  readonly meanRougeL: number;
  /** Training loss of the last step (over the supervised tokens). */
  readonly finalLoss: number;
  /** Fraction of supervised targets removed by the Goldfish mask. */
  readonly droppedFraction: number;
  /** Wall-clock seconds of the run (training + recall). */
  readonly seconds: number;
  /** Per-document results. */
  readonly perDocument: readonly DocumentRecall[];
}

/** Results of {@link runGoldfishExperiment}. */
export interface GoldfishExperimentResult {
  /** The settings used (defaults filled in). */
  readonly settings: Required<Omit<GoldfishExperimentOptions, 'onStep' | 'model'>> & { readonly model: ApertusConfig };
  /** Standard loss. */
  readonly standard: RecallSummary;
  /** Goldfish loss. */
  readonly goldfish: RecallSummary;
}

interface Doc {
  id: string;
  tokens: number[];
}

async function loadDocuments(o: Required<Omit<GoldfishExperimentOptions, 'onStep' | 'model'>>): Promise<{ tokenizer: Tokenizer; docs: Doc[] }> {
  const texts: { id: string; text: string }[] = [];
  for await (const d of readUdhr({ languages: [o.language] })) texts.push({ id: d.id, text: d.text });
  const trained = trainApertusBpe(texts.map((t) => t.text), { vocabSize: o.vocabSize });
  const tokenizer = Tokenizer.fromJSON(trained.tokenizerJson, trained.tokenizerConfig);
  const docs: Doc[] = [];
  for (const t of texts) {
    const ids = tokenizer.encodeIds(t.text, { addSpecialTokens: false, splitSpecialTokens: false });
    if (ids.length < o.holdout + o.minPrefix) continue;
    docs.push({ id: t.id, tokens: ids.slice(0, o.maxTokens) });
    if (docs.length === o.documents) break;
  }
  if (docs.length < o.documents) {
    throw new PretrainConfigError('documents', `only ${docs.length} UDHR "${o.language}" documents have ≥ ${o.holdout + o.minPrefix} tokens; ask for fewer documents or a shorter holdout/minPrefix`);
  }
  return { tokenizer, docs };
}

/** One row per document: `<s>` + tokens + `</s>`, padded to the longest, padding out of the loss. */
function documentBatch(docs: readonly Doc[], goldfish: { goldfishK: number; goldfishH: number } | null): LmBatch {
  const L = Math.max(...docs.map((d) => d.tokens.length)) + 1;
  const samples = docs.map((d) => {
    const window = [APERTUS_BOS_ID, ...d.tokens, APERTUS_EOS_ID];
    const valid = window.length;
    while (window.length < L + 1) window.push(APERTUS_PAD_ID);
    return buildSample(window, new Array(L + 1).fill(0), APERTUS_EOS_ID, {}, valid);
  });
  return collateLm(samples, { goldfish });
}

function trainAndMeasure(
  run: 'standard' | 'goldfish',
  config: ApertusConfig,
  docs: readonly Doc[],
  o: Required<Omit<GoldfishExperimentOptions, 'onStep' | 'model'>>,
  onStep?: GoldfishExperimentOptions['onStep'],
): RecallSummary {
  const t0 = performance.now();
  const goldfish = run === 'goldfish' ? { goldfishK: o.goldfishK, goldfishH: o.goldfishH } : null;
  const model = ApertusModel.init(config, o.seed);
  const params = model.parameters();
  const optimizer = new AdamW(params, { lr: o.lr, betas: [0.9, 0.95], weightDecay: 0 });
  const scheduler = new LrScheduler(constantSchedule(o.lr, { warmup: 10 }));
  const batch = documentBatch(docs, goldfish);
  const full = documentBatch(docs, null);
  let finalLoss = Number.NaN;
  for (let step = 1; step <= o.steps; step++) {
    const r = trainStep({ params, optimizer, scheduler, microBatches: [batch], weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(model, b, { normalizer: n }), clip: 1, step });
    finalLoss = r.loss;
    onStep?.(run, step, r.loss);
  }
  const perDocument: DocumentRecall[] = docs.map((d, i) => {
    const n = d.tokens.length;
    const prompt = [APERTUS_BOS_ID, ...d.tokens.slice(0, n - o.holdout)];
    const truth = d.tokens.slice(n - o.holdout);
    const gen = generate(model, prompt, { temperature: 0, maxTokens: o.holdout, stopTokenIds: [] }).tokens;
    let dropped = 0;
    // Labels are window[1:] = [t_0 … t_{n−1}, </s>]: document token k is the target at row position k.
    for (let k = n - o.holdout; k < n; k++) if (batch.mask[i * batch.seqLength + k] === 0) dropped++;
    return { id: d.id, tokens: n, exact: exactMatch(gen, truth), lcs: longestCommonSubstring(gen, truth), rougeL: rougeL(truth, gen), droppedInHoldout: dropped };
  });
  const exactMatches = perDocument.filter((d) => d.exact).length;
  return {
    exactMatches,
    exactMatchRate: exactMatches / docs.length,
    meanLcsNorm: perDocument.reduce((s, d) => s + d.lcs / o.holdout, 0) / docs.length,
    meanRougeL: perDocument.reduce((s, d) => s + d.rougeL, 0) / docs.length,
    finalLoss,
    droppedFraction: 1 - batch.keptTokens / full.keptTokens,
    seconds: (performance.now() - t0) / 1000,
    perDocument,
  };
}

/**
 * Train the same tiny model twice on the same documents — standard loss, then Goldfish loss —
 * and measure verbatim recall of each document's last `holdout` tokens.
 */
export async function runGoldfishExperiment(options: GoldfishExperimentOptions = {}): Promise<GoldfishExperimentResult> {
  const o = {
    documents: options.documents ?? 8,
    language: options.language ?? 'eng',
    holdout: options.holdout ?? 50,
    minPrefix: options.minPrefix ?? 30,
    maxTokens: options.maxTokens ?? 128,
    steps: options.steps ?? 160,
    goldfishK: options.goldfishK ?? 4,
    goldfishH: options.goldfishH ?? 13,
    lr: options.lr ?? 3e-3,
    vocabSize: options.vocabSize ?? 1792,
    seed: options.seed ?? 28,
  };
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === 'number' && !(Number.isFinite(v) && v > 0)) throw new PretrainConfigError(k, `must be a positive number, got ${v}`);
  }
  if (o.maxTokens < o.holdout + o.minPrefix) throw new PretrainConfigError('maxTokens', `(${o.maxTokens}) must be at least holdout + minPrefix (${o.holdout + o.minPrefix})`);
  const { tokenizer, docs } = await loadDocuments(o);
  const config = presetConfig('tiny', {
    hidden_size: 64,
    intermediate_size: 256,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 16,
    ...options.model,
    vocab_size: tokenizer.vocabSize,
  });
  const standard = trainAndMeasure('standard', config, docs, o, options.onStep);
  const goldfish = trainAndMeasure('goldfish', config, docs, o, options.onStep);
  return { settings: { ...o, model: config }, standard, goldfish };
}
