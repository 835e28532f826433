// Pretraining on @apertus/trainer's loop:
//   data (shards, packed samples with BoD/EoD and document masks) → micro-batches with the
//   Goldfish-masked loss → AdEMAMix + WSD (counted in samples) + global-norm clipping → validation
//   loss and sample generations at each evaluation.

import { DataLoader, PackedDataset, ShardedTokens, parseLoaderState } from '@apertus/data';
import { ApertusModel, generate } from '@apertus/model';
import { APERTUS_EOS_ID, APERTUS_PAD_ID } from '@apertus/tokenizer';
import { InputError, ResumeError, buildOptimizer, globalBatchSize, causalLmLoss, collateLm, type LmBatch, runTraining, type TrainingResult, type TrainingSetup, type SetupContext, type MetricRecord } from '@apertus/trainer';
import { PRETRAIN_TRAINING_KEYS, resolvePretrainConfig, type PretrainConfig } from './config';
import { dataFingerprint, prepareData, type PreparedData } from './data';
import { buildModelConfig, buildPretrainSchedule } from './setup';

/** Options of {@link runPretraining} besides the configuration. */
export interface RunOptions {
  /** Continue from the latest checkpoint in `<out>/checkpoints` (a fresh start when there is none). */
  readonly resume?: boolean;
  /** Delete earlier checkpoints and the final model in `out` and start again (the prepared data is reused when it matches). */
  readonly overwrite?: boolean;
  /** Messages (data summary, evaluations, checkpoints). Default: through the progress display. */
  readonly log?: (message: string) => void;
  /** Stop after the current step, save a checkpoint and return (SIGINT / SIGTERM in the CLI). */
  readonly signal?: AbortSignal;
}

/** JSON with object keys sorted, for order-insensitive comparisons. */
function canonicalJson(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));
}

/** Fixed validation batches: the first `evalSamples` samples in order, no Goldfish mask. */
function validationBatches(cfg: PretrainConfig, data: PreparedData): LmBatch[] {
  if (!data.hasValidation || cfg.evalSamples === 0) return [];
  const ds = new PackedDataset(ShardedTokens.open(data.paths.validationManifest), { seqLength: cfg.seqLength, padId: APERTUS_PAD_ID });
  const n = Math.min(cfg.evalSamples, ds.numSamples);
  const out: LmBatch[] = [];
  for (let i = 0; i < n; i += cfg.microBatchSize) {
    const idx = Array.from({ length: Math.min(cfg.microBatchSize, n - i) }, (_, j) => i + j);
    out.push(collateLm(idx.map((k) => ds.sample(k))));
  }
  return out;
}

/** Model, data, optimizer, WSD schedule, Goldfish loss and sample generations of a pretraining run. */
async function setup(cfg: PretrainConfig, ctx: SetupContext<PretrainConfig>): Promise<TrainingSetup<LmBatch>> {
  const fingerprint = await dataFingerprint(cfg);
  ctx.checkData(fingerprint);
  const data = await prepareData(cfg, ctx.log, fingerprint);
  const modelConfig = buildModelConfig(cfg, data.tokenizer.vocabSize);
  const tokens = ShardedTokens.open(data.paths.trainManifest);
  if (tokens.numTokens < cfg.seqLength + 1) {
    throw new InputError(cfg.data, `the training split has ${tokens.numTokens} tokens, fewer than one sample of seqLength + 1 = ${cfg.seqLength + 1}; use a smaller --seq-length or more data`);
  }
  const dataset = new PackedDataset(tokens, { seqLength: cfg.seqLength });
  const model = ctx.resume?.model ?? ApertusModel.init(modelConfig, cfg.seed);
  if (ctx.resume !== null && canonicalJson(model.config) !== canonicalJson(modelConfig)) throw new ResumeError(ctx.resume.dir, 'its config.json differs from the configured architecture');
  const loader = new DataLoader(dataset, ctx.resume ? { state: parseLoaderState(ctx.resume.state.loader) } : { seed: cfg.seed });
  const gbs = globalBatchSize(cfg);
  const goldfish = cfg.goldfish ? { goldfishK: cfg.goldfishK, goldfishH: cfg.goldfishH } : null;
  const warm = (v: number | null): number | null => (v === null ? cfg.steps : v === 0 ? null : v);
  const nParams = model.parameters().reduce((s, [, p]) => s + p.size, 0);
  const arch = `${modelConfig.num_hidden_layers} layers, hidden ${modelConfig.hidden_size}, vocab ${modelConfig.vocab_size}`;
  const goldfishNote = goldfish ? `k=${cfg.goldfishK}, h=${cfg.goldfishH}` : 'off';
  return {
    model,
    optimizer: buildOptimizer(cfg, model.parameters(), { alphaWarmup: warm(cfg.alphaWarmup), beta3Warmup: warm(cfg.beta3Warmup) }),
    schedule: buildPretrainSchedule(cfg),
    schedulerIncrement: gbs,
    globalBatch: gbs,
    totalSteps: cfg.steps,
    clip: cfg.clip,
    fingerprint,
    files: data.tokenizerFiles,
    data: {
      next: () => ({
        microBatches: Array.from({ length: cfg.gradAccumulation }, () => collateLm(loader.nextBatch(cfg.microBatchSize).map((s) => s.sample), { goldfish })),
        tokens: gbs * cfg.seqLength,
      }),
      get state() {
        return { ...loader.state };
      },
    },
    weightOf: (b) => b.keptTokens,
    loss: (b, normalizer) => causalLmLoss(model, b, { normalizer }),
    trainRecord: (r) => ({ keptTokens: r.weight }),
    validation: validationBatches(cfg, data),
    evaluate: (step) => {
      const records: MetricRecord[] = [];
      if (cfg.sampleTokens === 0) return records;
      cfg.prompts.forEach((prompt, i) => {
        const ids = data.tokenizer.encodeIds(prompt);
        const gen = generate(model, ids, { maxTokens: cfg.sampleTokens, temperature: cfg.sampleTemperature, topK: 40, seed: cfg.seed + step * 100 + i, stopTokenIds: [APERTUS_EOS_ID] });
        const text = data.tokenizer.decode(gen.tokens, { skipSpecialTokens: true });
        records.push({ type: 'sample', step, prompt, text });
        ctx.log(`sample @ step ${step}: ${JSON.stringify(prompt)} → ${JSON.stringify(text)}`);
      });
      return records;
    },
    summary: `model: ${arch}: ${(nParams / 1e6).toFixed(2)}M parameters; ${cfg.steps} steps × ${gbs} × ${cfg.seqLength} tokens, ${cfg.optimizer}, lr ${cfg.lr}, Goldfish ${goldfishNote}; ${dataset.numSamples} training samples per epoch`,
    plotNote: `${arch} (${(nParams / 1e6).toFixed(2)}M parameters); data ${cfg.data}; ${cfg.optimizer}, lr ${cfg.lr} → ${cfg.minLr} (WSD ${cfg.cooldownStyle}); Goldfish ${goldfishNote}`,
  };
}

/**
 * Run (or resume) pretraining as configured. Writes under `cfg.out`: `config.json`, `data/`,
 * `tokenizer/`, `checkpoints/step-NNNNNN/` + `checkpoints/latest`, `metrics.jsonl`, `loss.html`,
 * and at the end `model/` (bfloat16 Hugging Face checkpoint with the tokenizer).
 */
export function runPretraining(cfg: PretrainConfig, options: RunOptions = {}): Promise<TrainingResult> {
  return runTraining({
    ...options,
    config: cfg,
    name: 'apertus-pretrain',
    trainingKeys: PRETRAIN_TRAINING_KEYS,
    parseConfig: (values, source) => resolvePretrainConfig([{ source, values }]).config,
    setup: (ctx) => setup(cfg, ctx),
  });
}

