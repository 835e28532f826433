// The Goldfish experiment at small scale (Hans et al. 2024, "extreme" setting; training-recipe
// §2.6): train a tiny model for many epochs on a handful of documents, once with the standard
// loss and once with the Goldfish loss (k = 4), from the same initialisation and data, then
// measure verbatim recall: prompt with everything but the last 50 tokens of each document, decode
// 50 tokens greedily, and compare with the held-out tokens (exact match, longest common substring).
// Both runs go through @apertus/trainer's loop (run directories `<out>/standard`, `<out>/goldfish`
// with metrics, loss curve and the trained model).

import path from 'node:path';
import { AdamW, constantSchedule } from '@apertus/ademamix';
import { buildSample, readUdhr } from '@apertus/data';
import { exactMatch, longestCommonSubstring, rougeL } from '@apertus/goldfish';
import { ApertusModel, generate, presetConfig, type ApertusConfig } from '@apertus/model';
import { APERTUS_BOS_ID, APERTUS_EOS_ID, APERTUS_PAD_ID, Tokenizer, trainApertusBpe } from '@apertus/tokenizer';
import { ConfigError, causalLmLoss, collateLm, type LmBatch, runTraining, type RunConfig } from '@apertus/trainer';

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
  /** Parent of the two run directories. Default `runs/goldfish`. */
  readonly out?: string;
  /** Progress display of the runs. Default `auto`. */
  readonly progress?: RunConfig['progress'];
}

/** The settings with defaults filled in. */
type Settings = Required<Omit<GoldfishExperimentOptions, 'model'>>;

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
  readonly settings: Settings & { readonly model: ApertusConfig };
  /** Standard loss. */
  readonly standard: RecallSummary;
  /** Goldfish loss. */
  readonly goldfish: RecallSummary;
}

interface Doc {
  id: string;
  tokens: number[];
}

async function loadDocuments(o: Settings): Promise<{ tokenizer: Tokenizer; files: Record<string, string>; docs: Doc[] }> {
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
    throw new ConfigError('documents', `only ${docs.length} UDHR "${o.language}" documents have ≥ ${o.holdout + o.minPrefix} tokens; ask for fewer documents or a shorter holdout/minPrefix`);
  }
  return { tokenizer, files: { 'tokenizer.json': JSON.stringify(trained.tokenizerJson), 'tokenizer_config.json': JSON.stringify(trained.tokenizerConfig) }, docs };
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

async function trainAndMeasure(run: 'standard' | 'goldfish', config: ApertusConfig, docs: readonly Doc[], files: Record<string, string>, o: Settings): Promise<RecallSummary> {
  const t0 = performance.now();
  const goldfish = run === 'goldfish' ? { goldfishK: o.goldfishK, goldfishH: o.goldfishH } : null;
  const model = ApertusModel.init(config, o.seed);
  const batch = documentBatch(docs, goldfish);
  const full = documentBatch(docs, null);
  const result = await runTraining({
    config: { ...o, run, out: path.join(o.out, run), evalInterval: 0, checkpointInterval: 0, keepCheckpoints: 1, threads: null, device: 'cpu' },
    name: 'apertus-pretrain goldfish',
    trainingKeys: [],
    parseConfig: () => {
      throw new ConfigError('out', 'the Goldfish experiment starts over (it does not resume)');
    },
    overwrite: true,
    log: () => {},
    setup: async () => ({
      model,
      optimizer: new AdamW(model.parameters(), { lr: o.lr, betas: [0.9, 0.95], weightDecay: 0 }),
      schedule: constantSchedule(o.lr, { warmup: 10 }),
      schedulerIncrement: 1,
      globalBatch: docs.length,
      totalSteps: o.steps,
      clip: 1,
      fingerprint: '',
      files,
      data: { next: () => ({ microBatches: [batch], tokens: batch.batchSize * batch.seqLength }), state: null },
      weightOf: (b) => b.keptTokens,
      loss: (b, n) => causalLmLoss(model, b, { normalizer: n }),
      validation: [],
      summary: `Goldfish experiment, ${run} loss: ${docs.length} documents, ${o.steps} full-batch steps`,
      plotNote: `${run} loss${goldfish ? ` (k=${o.goldfishK}, h=${o.goldfishH})` : ''}; ${docs.length} UDHR "${o.language}" documents`,
    }),
  });
  const finalLoss = result.metrics.filter((r) => r.type === 'train').at(-1)?.loss as number;
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
    out: options.out ?? 'runs/goldfish',
    progress: options.progress ?? 'auto',
  };
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === 'number' && !(Number.isFinite(v) && v > 0)) throw new ConfigError(k, `must be a positive number, got ${v}`);
  }
  if (o.maxTokens < o.holdout + o.minPrefix) throw new ConfigError('maxTokens', `(${o.maxTokens}) must be at least holdout + minPrefix (${o.holdout + o.minPrefix})`);
  const { tokenizer, files, docs } = await loadDocuments(o);
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
  const standard = await trainAndMeasure('standard', config, docs, files, o);
  const goldfish = await trainAndMeasure('goldfish', config, docs, files, o);
  return { settings: { ...o, model: config }, standard, goldfish };
}
