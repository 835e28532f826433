// The pretraining loop:
//   data (shards, packed samples with BoD/EoD and document masks) → micro-batches with the
//   Goldfish-masked loss → AdEMAMix + WSD + global-norm clipping → periodic validation loss,
//   sample generations, atomic checkpoints, metrics.jsonl and loss.html.
// A run resumed from its latest checkpoint reproduces the uninterrupted run's losses bit for bit:
// the checkpoint holds float32 weights, the optimizer moments, the scheduler count and the data
// loader position, and nothing else in the loop is random.

import fs from 'node:fs';
import type { AdamW, AdEMAMix } from '@apertus/ademamix';
import path from 'node:path';
import { DataLoader, PackedDataset, ShardedTokens, parseLoaderState } from '@apertus/data';
import { ApertusModel, generate, saveCheckpoint } from '@apertus/model';
import { setGemmThreads } from '@apertus/tensor';
import { APERTUS_EOS_ID, APERTUS_PAD_ID } from '@apertus/tokenizer';
import {
  CheckpointManager,
  MetricsLogger,
  ProgressReporter,
  causalLmLoss,
  collateLm,
  evaluateLm,
  readTrainingCheckpoint,
  readTrainerState,
  trainStep,
  writeLossCurve,
  writeTrainingCheckpoint,
  type Json,
  type LmBatch,
  type MetricRecord,
  type TrainerState,
} from '@apertus/trainer';
import { changedTrainingKeys, type PretrainConfig } from './config';
import { prepareData, type PreparedData } from './data';
import { DataInputError, PretrainConfigError, ResumeError } from './errors';
import { buildModelConfig, buildOptimizer, buildScheduler, globalBatchSize } from './setup';

/** Options of {@link runPretraining} besides the configuration. */
export interface RunOptions {
  /** Continue from the latest checkpoint in `<out>/checkpoints` (a fresh start when there is none). */
  readonly resume?: boolean;
  /** Delete earlier checkpoints and metrics in `out` and start again (the prepared data is reused when it matches). */
  readonly overwrite?: boolean;
  /** Messages (data summary, evaluations, checkpoints). Default: through the progress display. */
  readonly log?: (message: string) => void;
  /** Stop after the current step, save a checkpoint and return (e.g. wired to SIGINT). */
  readonly signal?: AbortSignal;
}

/** What a run produced. */
export interface RunResult {
  /** Steps completed in total (resumed steps included). */
  readonly step: number;
  /** True when the run stopped early because `signal` fired. */
  readonly interrupted: boolean;
  /** Every metric record (resumed ones included). */
  readonly metrics: readonly MetricRecord[];
  /** Directory of the last checkpoint. */
  readonly checkpoint: string | null;
  /** The final model directory (bfloat16 Hugging Face checkpoint), when the run finished. */
  readonly modelDir: string | null;
  /** Output files. */
  readonly files: { readonly metrics: string; readonly plot: string; readonly config: string };
}

/** Output layout of a run directory. */
export function runPaths(out: string): { checkpoints: string; metrics: string; plot: string; config: string; model: string } {
  return {
    checkpoints: path.join(out, 'checkpoints'),
    metrics: path.join(out, 'metrics.jsonl'),
    plot: path.join(out, 'loss.html'),
    config: path.join(out, 'config.json'),
    model: path.join(out, 'model'),
  };
}

/**
 * The configuration saved in the latest checkpoint of `out`, or null when there is no checkpoint
 * (used by the CLI to resolve `--resume` before the flags).
 */
export function checkpointConfig(out: string): { dir: string; config: Record<string, unknown> } | null {
  const latest = new CheckpointManager(runPaths(out).checkpoints).latest();
  if (latest === null) return null;
  const state = readTrainerState(latest.dir);
  if (typeof state.config !== 'object' || state.config === null || Array.isArray(state.config)) throw new ResumeError(latest.dir, 'trainer_state.json has no run configuration');
  return { dir: latest.dir, config: state.config as Record<string, unknown> };
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

function trainingDataset(cfg: PretrainConfig, data: PreparedData): PackedDataset {
  const tokens = ShardedTokens.open(data.paths.trainManifest);
  if (tokens.numTokens < cfg.seqLength + 1) {
    throw new DataInputError(cfg.data, `the training split has ${tokens.numTokens} tokens, fewer than one sample of seqLength + 1 = ${cfg.seqLength + 1}; use a smaller --seq-length or more data`);
  }
  return new PackedDataset(tokens, { seqLength: cfg.seqLength });
}

/**
 * Run (or resume) pretraining as configured. Writes under `cfg.out`: `config.json`, `data/`,
 * `tokenizer/`, `checkpoints/step-NNNNNN/` + `checkpoints/latest`, `metrics.jsonl`, `loss.html`,
 * and at the end `model/` (bfloat16 Hugging Face checkpoint with the tokenizer).
 */
export async function runPretraining(cfg: PretrainConfig, options: RunOptions = {}): Promise<RunResult> {
  const paths = runPaths(cfg.out);
  const manager = new CheckpointManager(paths.checkpoints, { keepLast: cfg.keepCheckpoints });
  fs.mkdirSync(cfg.out, { recursive: true });
  let latest = manager.latest();
  if (latest !== null && !options.resume) {
    if (!options.overwrite) {
      throw new PretrainConfigError('out', `${cfg.out} already holds checkpoints (latest ${path.basename(latest.dir)}); pass --resume to continue that run, --overwrite to start over, or choose another --out`);
    }
    fs.rmSync(paths.checkpoints, { recursive: true, force: true });
    fs.rmSync(paths.model, { recursive: true, force: true });
    latest = null;
  }
  if (cfg.threads !== null) setGemmThreads(cfg.threads);

  const progress = new ProgressReporter({ totalSteps: cfg.steps, startStep: latest?.step ?? 0, mode: cfg.progress });
  const log = options.log ?? ((m: string) => progress.log(m));
  try {
    const data = await prepareData(cfg, log);
    const modelConfig = buildModelConfig(cfg, data.tokenizer.vocabSize);
    fs.writeFileSync(paths.config, `${JSON.stringify(cfg, null, 2)}\n`);

    // Model, optimizer, schedule, loader: fresh or from the checkpoint.
    let model: ApertusModel;
    let optimizer: AdEMAMix | AdamW;
    let state: TrainerState | null = null;
    const dataset = trainingDataset(cfg, data);
    if (latest !== null) {
      const ckpt = readTrainingCheckpoint(latest.dir);
      state = ckpt.state;
      const saved = state.config as unknown as PretrainConfig;
      const changed = changedTrainingKeys(saved, cfg);
      if (changed.length > 0) throw new ResumeError(latest.dir, `settings differ from the checkpoint's: ${changed.map((k) => `${k} (${JSON.stringify(saved[k])} → ${JSON.stringify(cfg[k])})`).join(', ')}`);
      if (state.extra.dataFingerprint !== data.fingerprint) throw new ResumeError(latest.dir, 'the training data or tokenizer changed since the checkpoint was written');
      if (state.step > cfg.steps) throw new ResumeError(latest.dir, `the checkpoint is at step ${state.step}, beyond --steps ${cfg.steps}`);
      model = ckpt.model;
      if (canonicalJson(model.config) !== canonicalJson(modelConfig)) throw new ResumeError(latest.dir, 'its config.json differs from the configured architecture');
      optimizer = buildOptimizer(cfg, model.parameters());
      optimizer.loadStateDict(ckpt.optimizerState);
      log(`resuming from ${latest.dir} (step ${state.step})`);
    } else {
      model = ApertusModel.init(modelConfig, cfg.seed);
      optimizer = buildOptimizer(cfg, model.parameters());
    }
    const scheduler = buildScheduler(cfg, state?.scheduler.count ?? 0);
    const loader = new DataLoader(dataset, state ? { state: parseLoaderState(state.loader) } : { seed: cfg.seed });
    const metrics = new MetricsLogger(paths.metrics, state?.metrics ?? []);
    const evalBatches = validationBatches(cfg, data);
    const gbs = globalBatchSize(cfg);
    let step = state?.step ?? 0;
    let tokens = state?.tokens ?? 0;
    let samples = state?.samples ?? 0;
    const goldfish = cfg.goldfish ? { goldfishK: cfg.goldfishK, goldfishH: cfg.goldfishH } : null;
    const params = model.parameters();
    const nParams = params.reduce((s, [, p]) => s + p.size, 0);
    if (step === 0) {
      log(`model: ${modelConfig.num_hidden_layers} layers, hidden ${modelConfig.hidden_size}, vocab ${modelConfig.vocab_size}: ${(nParams / 1e6).toFixed(2)}M parameters; ${cfg.steps} steps × ${gbs} × ${cfg.seqLength} tokens, ${cfg.optimizer}, lr ${cfg.lr}, Goldfish ${goldfish ? `k=${cfg.goldfishK} h=${cfg.goldfishH}` : 'off'}; ${dataset.numSamples} training samples per epoch`);
    }

    const evaluate = (): void => {
      if (evalBatches.length > 0) {
        const r = evaluateLm(model, evalBatches);
        metrics.log({ type: 'eval', step, tokens, valLoss: r.loss, valPerplexity: r.perplexity, valTokens: r.tokens });
        log(`eval @ step ${step}: validation loss ${r.loss.toFixed(4)}, perplexity ${r.perplexity.toFixed(2)} (${r.tokens} tokens)`);
      }
      cfg.prompts.forEach((prompt, i) => {
        if (cfg.sampleTokens === 0) return;
        const ids = data.tokenizer.encodeIds(prompt);
        const gen = generate(model, ids, { maxTokens: cfg.sampleTokens, temperature: cfg.sampleTemperature, topK: 40, seed: cfg.seed + step * 100 + i, stopTokenIds: [APERTUS_EOS_ID] });
        const text = data.tokenizer.decode(gen.tokens, { skipSpecialTokens: true });
        metrics.log({ type: 'sample', step, prompt, text });
        log(`sample @ step ${step}: ${JSON.stringify(prompt)} → ${JSON.stringify(text)}`);
      });
      writePlot();
      progress.pause();
    };
    const writePlot = (): void => {
      const evals = metrics.records.filter((r) => r.type === 'eval');
      writeLossCurve(paths.plot, metrics.records, {
        title: `apertus-pretrain — ${path.basename(path.resolve(cfg.out))}`,
        notes: [
          `${modelConfig.num_hidden_layers} layers, hidden ${modelConfig.hidden_size}, vocab ${modelConfig.vocab_size} (${(nParams / 1e6).toFixed(2)}M parameters); data ${cfg.data}; ${cfg.optimizer}, lr ${cfg.lr} → ${cfg.minLr} (WSD ${cfg.cooldownStyle}); Goldfish ${goldfish ? `k=${cfg.goldfishK}, h=${cfg.goldfishH}` : 'off'}`,
          `step ${step} of ${cfg.steps}, ${tokens} tokens` + (evals.length ? `; validation loss ${(evals[0]!.valLoss as number).toFixed(4)} → ${(evals[evals.length - 1]!.valLoss as number).toFixed(4)}` : ''),
        ],
      });
    };
    const save = (): string => {
      const st: TrainerState = {
        format: 'apertus-trainer-state',
        version: 1,
        step,
        tokens,
        samples,
        scheduler: scheduler.stateDict(),
        loader: { ...loader.state },
        metrics: metrics.records,
        config: cfg as unknown as Json,
        extra: { dataFingerprint: data.fingerprint },
      };
      const dir = manager.save(step, (tmp) => writeTrainingCheckpoint(tmp, { model, optimizer, state: st, files: data.tokenizerFiles }));
      log(`checkpoint saved: ${dir}`);
      progress.pause();
      return dir;
    };

    if (step === 0) evaluate();
    let checkpoint: string | null = latest?.dir ?? null;
    let interrupted = false;
    while (step < cfg.steps) {
      const micro: LmBatch[] = [];
      for (let a = 0; a < cfg.gradAccumulation; a++) micro.push(collateLm(loader.nextBatch(cfg.microBatchSize).map((s) => s.sample), { goldfish }));
      const r = trainStep({
        params,
        optimizer,
        scheduler,
        microBatches: micro,
        weightOf: (b) => b.keptTokens,
        loss: (b, normalizer) => causalLmLoss(model, b, { normalizer }),
        clip: cfg.clip,
        schedulerIncrement: gbs,
        step: step + 1,
      });
      step++;
      const stepTokens = gbs * cfg.seqLength;
      tokens += stepTokens;
      samples += gbs;
      metrics.log({ type: 'train', step, tokens, loss: r.loss, lr: r.lr, gradNorm: r.gradNorm, keptTokens: r.weight });
      progress.update({ step, tokens: stepTokens, loss: r.loss, lr: r.lr });
      const last = step === cfg.steps;
      if ((cfg.evalInterval > 0 && step % cfg.evalInterval === 0) || last) evaluate();
      interrupted = options.signal?.aborted === true && !last;
      if ((cfg.checkpointInterval > 0 && step % cfg.checkpointInterval === 0) || last || interrupted) checkpoint = save();
      if (interrupted) break;
      // Let signal handlers (SIGINT → checkpoint and stop) run between steps.
      await new Promise((resolve) => setImmediate(resolve));
    }
    writePlot();
    let modelDir: string | null = null;
    if (!interrupted) {
      saveCheckpoint(model, paths.model, { dtype: 'bf16', files: { ...data.tokenizerFiles } });
      modelDir = paths.model;
      log(`final model (bfloat16, Hugging Face format): ${modelDir}`);
    } else {
      log(`stopped at step ${step}; continue with --resume`);
    }
    return { step, interrupted, metrics: metrics.records, checkpoint, modelDir, files: { metrics: paths.metrics, plot: paths.plot, config: paths.config } };
  } finally {
    progress.stop();
  }
}
