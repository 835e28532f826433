// The SFT loop (training-recipe §5):
//   base checkpoint → chat rows (one conversation per row, no packing) → left-padded micro-batches
//   → assistant-only cross-entropy, token-averaged over the whole global batch (Σ mask·CE / Σ mask)
//   → global-norm clipping → AdEMAMix (α = 5, β3 = 0.9999, no warm-ups) or AdamW with a linear
//   warm-up / linear decay schedule → validation loss, held-out chrF/BLEU, atomic checkpoints,
//   metrics.jsonl and loss.html.
// A run resumed from its latest checkpoint reproduces the uninterrupted run's losses bit for bit:
// the checkpoint holds float32 weights, the optimizer moments, the scheduler count and the data
// order position, and nothing else in the loop is random.

import fs from 'node:fs';
import path from 'node:path';
import { AdamW, AdEMAMix, LrScheduler, linearWarmupDecaySchedule, warmupStepsFromRatio } from '@apertus/ademamix';
import { LoraAdapter, parameterCount, saveAdapter, saveCheckpoint, type ApertusModel } from '@apertus/model';
import { evaluateTranslation, type SftExample } from '@apertus/posttrain';
import { setGemmThreads, type Tensor as TensorType } from '@apertus/tensor';
import {
  CheckpointManager,
  MetricsLogger,
  ProgressReporter,
  evaluateLm,
  readTrainerState,
  readTrainingCheckpoint,
  trainStep,
  writeLossCurve,
  writeTrainingCheckpoint,
  type Json,
  type LmBatch,
  type MetricRecord,
  type TrainerState,
} from '@apertus/trainer';
import { chatGenerationConfig, loadModel, loadModelTokenizer, resolveModelDir } from './base-model';
import { changedTrainingKeys, type SftConfig } from './config';
import { collate, prepareSftData, toLmBatch, type SftData } from './data';
import { SftConfigError, SftResumeError } from './errors';
import { ExampleOrder } from './loader';

/** Options of {@link runSft} besides the configuration. */
export interface SftRunOptions {
  /** Continue from the latest checkpoint in `<out>/checkpoints` (a fresh start when there is none). */
  readonly resume?: boolean;
  /** Delete earlier checkpoints and the final model in `out` and start again. */
  readonly overwrite?: boolean;
  /** Messages (data summary, evaluations, checkpoints). Default: through the progress display. */
  readonly log?: (message: string) => void;
  /** Stop after the current step, save a checkpoint and return (e.g. wired to SIGINT). */
  readonly signal?: AbortSignal;
}

/** Corpus scores of the greedy held-out translations. */
export interface TranslationScores {
  /** Step they were measured at. */
  readonly step: number;
  /** chrF2, 0–100. */
  readonly chrf: number;
  /** chrF2++, 0–100. */
  readonly chrfPlusPlus: number;
  /** BLEU, 0–100. */
  readonly bleu: number;
}

/** What a run produced. */
export interface SftResult {
  /** Steps completed in total (resumed steps included). */
  readonly step: number;
  /** Steps of the whole run. */
  readonly totalSteps: number;
  /** True when the run stopped early because `signal` fired. */
  readonly interrupted: boolean;
  /** Every metric record (resumed ones included). */
  readonly metrics: readonly MetricRecord[];
  /** Directory of the last checkpoint. */
  readonly checkpoint: string | null;
  /** The final model directory (Hugging Face format, with the tokenizer), when the run finished. */
  readonly modelDir: string | null;
  /** Held-out translation scores of the base model (step 0) and of the final model, when measured. */
  readonly translation: readonly TranslationScores[];
  /** Files written. */
  readonly files: { readonly metrics: string; readonly plot: string; readonly config: string };
}

/** Where a run keeps its files. */
export function sftPaths(out: string): { checkpoints: string; metrics: string; plot: string; config: string; model: string; adapter: string } {
  return {
    checkpoints: path.join(out, 'checkpoints'),
    metrics: path.join(out, 'metrics.jsonl'),
    plot: path.join(out, 'loss.html'),
    config: path.join(out, 'config.json'),
    model: path.join(out, 'model'),
    adapter: path.join(out, 'adapter'),
  };
}

/**
 * The configuration saved in the latest checkpoint of `out`, or null when there is no checkpoint
 * (the CLI resolves `--resume` on top of it).
 */
export function checkpointConfig(out: string): { dir: string; config: Record<string, unknown> } | null {
  const latest = new CheckpointManager(sftPaths(out).checkpoints).latest();
  if (latest === null) return null;
  const state = readTrainerState(latest.dir);
  if (typeof state.config !== 'object' || state.config === null || Array.isArray(state.config)) throw new SftResumeError(latest.dir, 'trainer_state.json has no run configuration');
  return { dir: latest.dir, config: state.config as Record<string, unknown> };
}

/** Conversations per optimizer step. */
export function globalBatchSize(cfg: SftConfig): number {
  return cfg.microBatchSize * cfg.gradAccumulation;
}

/** Optimizer steps of the run: `steps`, or `epochs` passes over `numExamples` rows. */
export function totalSteps(cfg: SftConfig, numExamples: number): number {
  return cfg.steps ?? cfg.epochs * Math.ceil(numExamples / globalBatchSize(cfg));
}

/** AdEMAMix (α, β3 constant: no warm-ups, as the Apertus SFT runs) or AdamW over `params`. */
export function buildOptimizer(cfg: SftConfig, params: Iterable<readonly [string, TensorType]>): AdEMAMix | AdamW {
  const [b1, b2, b3] = cfg.betas;
  if (cfg.optimizer === 'adamw') return new AdamW(params, { lr: cfg.lr, betas: [b1, b2], eps: cfg.eps, weightDecay: cfg.weightDecay });
  return new AdEMAMix(params, { lr: cfg.lr, betas: [b1, b2, b3], alpha: cfg.alpha, alphaWarmup: null, beta3Warmup: null, eps: cfg.eps, weightDecay: cfg.weightDecay });
}

/** Linear warm-up over ⌈warmupRatio · total⌉ steps, then linear decay to 0 at `total` (counted in steps). */
export function buildScheduler(cfg: SftConfig, total: number, count = 0): LrScheduler {
  return new LrScheduler(linearWarmupDecaySchedule({ maxLr: cfg.lr, warmup: warmupStepsFromRatio(cfg.warmupRatio, total), total }), count);
}

/**
 * The SFT loss of one micro-batch: Σ mask·CE over its assistant tokens divided by `normalizer`
 * (the supervised tokens of the whole optimizer step), with the LM head fused into the loss.
 */
export function sftLoss(model: ApertusModel, batch: LmBatch, normalizer: number): TensorType {
  return model.loss(batch.ids, batch.targets, {
    mask: batch.mask,
    normalizer,
    ...(batch.positions ? { positions: batch.positions } : {}),
    ...(batch.docIds ? { docIds: batch.docIds } : {}),
  });
}

function batches(rows: readonly SftExample[], size: number, padId: number): LmBatch[] {
  const out: LmBatch[] = [];
  for (let i = 0; i < rows.length; i += size) out.push(toLmBatch(collate(rows.slice(i, i + size), padId)));
  return out;
}

/**
 * Run (or resume) SFT as configured. Writes under `cfg.out`: `config.json`, `data/train.jsonl`
 * (bundled task), `checkpoints/step-NNNNNN/` + `checkpoints/latest`, `metrics.jsonl`, `loss.html`,
 * and at the end `model/` (Hugging Face checkpoint with the tokenizer and a chat
 * `generation_config.json`).
 */
export async function runSft(cfg: SftConfig, options: SftRunOptions = {}): Promise<SftResult> {
  const paths = sftPaths(cfg.out);
  const manager = new CheckpointManager(paths.checkpoints, { keepLast: cfg.keepCheckpoints });
  fs.mkdirSync(cfg.out, { recursive: true });
  let latest = manager.latest();
  if (latest !== null && !options.resume) {
    if (!options.overwrite) {
      throw new SftConfigError('out', `${cfg.out} already holds checkpoints (latest ${path.basename(latest.dir)}); pass --resume to continue that run, --overwrite to start over, or choose another --out`);
    }
    fs.rmSync(paths.checkpoints, { recursive: true, force: true });
    fs.rmSync(paths.model, { recursive: true, force: true });
    fs.rmSync(paths.adapter, { recursive: true, force: true });
    latest = null;
  }
  if (cfg.threads !== null) setGemmThreads(cfg.threads);

  let progress: ProgressReporter | null = null;
  const log = options.log ?? ((m: string) => (progress ? progress.log(m) : process.stdout.write(`${m}\n`)));
  try {
    // Model and tokenizer: the checkpoint's when resuming, else the base model's.
    let model: ApertusModel;
    let state: TrainerState | null = null;
    let optimizerState = null;
    let sourceDir: string;
    if (latest !== null) {
      const ckpt = readTrainingCheckpoint(latest.dir);
      state = ckpt.state;
      const saved = state.config as unknown as SftConfig;
      const changed = changedTrainingKeys(saved, cfg);
      if (changed.length > 0) throw new SftResumeError(latest.dir, `settings differ from the checkpoint's: ${changed.map((k) => `${k} (${JSON.stringify(saved[k])} → ${JSON.stringify(cfg[k])})`).join(', ')}`);
      model = ckpt.model;
      optimizerState = ckpt.optimizerState;
      sourceDir = latest.dir;
    } else {
      sourceDir = resolveModelDir(cfg.model);
      model = loadModel(sourceDir);
      if (cfg.lora) LoraAdapter.init(model.config, cfg.lora, cfg.seed).attach(model);
      log(`base model: ${sourceDir}`);
    }
    const { tokenizer, files: tokenizerFiles } = loadModelTokenizer(sourceDir);
    const c = model.config;
    if (cfg.maxLength > c.max_position_embeddings) throw new SftConfigError('maxLength', `${cfg.maxLength} exceeds the model's max_position_embeddings (${c.max_position_embeddings})`);
    const data: SftData = await prepareSftData(cfg, tokenizer, log);
    if (state !== null && state.extra.dataFingerprint !== data.fingerprint) throw new SftResumeError(latest!.dir, 'the training data or tokenizer changed since the checkpoint was written');
    const total = totalSteps(cfg, data.examples.length);
    if (state !== null && state.step > total) throw new SftResumeError(latest!.dir, `the checkpoint is at step ${state.step}, beyond the run's ${total} steps`);
    fs.writeFileSync(paths.config, `${JSON.stringify(cfg, null, 2)}\n`);

    const optimizer = buildOptimizer(cfg, model.parameters());
    if (optimizerState !== null) optimizer.loadStateDict(optimizerState);
    const scheduler = buildScheduler(cfg, total, state?.scheduler.count ?? 0);
    const order = state ? new ExampleOrder(data.examples.length, { state: state.loader }) : new ExampleOrder(data.examples.length, { seed: cfg.seed });
    const metrics = new MetricsLogger(paths.metrics, state?.metrics ?? []);
    const valBatches = batches(data.validation, cfg.microBatchSize, data.padId);
    const files = { ...tokenizerFiles, 'generation_config.json': chatGenerationConfig(c.bos_token_id, data.padId) };
    const gbs = globalBatchSize(cfg);
    let step = state?.step ?? 0;
    let tokens = state?.tokens ?? 0;
    let samples = state?.samples ?? 0;
    const params = model.parameters();
    if (latest !== null) log(`resuming from ${latest.dir} (step ${step})`);
    else {
      const nParams = params.reduce((s, [, p]) => s + p.size, 0), nBase = parameterCount(c);
      const trained = model.adapter ? `LoRA r ${model.adapter.config.r}, α ${model.adapter.config.lora_alpha} on ${model.adapter.config.target_modules.toString()}: ${nParams} trainable parameters (${((100 * nParams) / nBase).toFixed(2)}% of ${(nBase / 1e6).toFixed(2)}M)` : `${(nParams / 1e6).toFixed(2)}M parameters`;
      log(`model: ${c.num_hidden_layers} layers, hidden ${c.hidden_size}, vocab ${c.vocab_size}: ${trained}; ${total} steps × ${gbs} conversations, ${cfg.optimizer}, lr ${cfg.lr} (warm-up ${warmupStepsFromRatio(cfg.warmupRatio, total)} steps, linear decay)`);
    }
    progress = new ProgressReporter({ totalSteps: total, startStep: step, mode: cfg.progress });
    const translation: TranslationScores[] = metrics.records.filter((r) => r.type === 'translation').map((r) => ({ step: r.step, chrf: r.chrf as number, chrfPlusPlus: r.chrfPlusPlus as number, bleu: r.bleu as number }));

    const writePlot = (): void => {
      const evals = metrics.records.filter((r) => r.type === 'eval');
      writeLossCurve(paths.plot, metrics.records, {
        title: `apertus-sft — ${path.basename(path.resolve(cfg.out))}`,
        notes: [
          `${c.num_hidden_layers} layers, hidden ${c.hidden_size}, vocab ${c.vocab_size}; data ${cfg.data} (${data.examples.length} conversations); ${cfg.optimizer}, lr ${cfg.lr}, linear decay`,
          `step ${step} of ${total}` + (evals.length ? `; validation loss ${(evals[0]!.valLoss as number).toFixed(4)} → ${(evals[evals.length - 1]!.valLoss as number).toFixed(4)}` : '') +
            (translation.length ? `; held-out chrF ${translation.map((t) => t.chrf.toFixed(2)).join(' → ')}` : ''),
        ],
      });
    };
    const evaluate = (withTranslation: boolean): void => {
      if (valBatches.length > 0) {
        const r = evaluateLm(model, valBatches);
        metrics.log({ type: 'eval', step, valLoss: r.loss, valPerplexity: r.perplexity, valTokens: r.tokens });
        log(`eval @ step ${step}: validation loss ${r.loss.toFixed(4)}, perplexity ${r.perplexity.toFixed(2)} (${r.tokens} assistant tokens)`);
      }
      if (withTranslation && cfg.evalTranslation && data.heldOut.length > 0) {
        const t = evaluateTranslation(model, tokenizer, data.heldOut.map((e) => ({ messages: e.messages, reference: e.reference })), { maxTokens: cfg.evalMaxTokens, date: cfg.date });
        const first = t.outputs[0]!;
        metrics.log({ type: 'translation', step, chrf: t.chrf, chrfPlusPlus: t.chrfPlusPlus, bleu: t.bleu, prompts: t.outputs.length, example: first.hypothesis });
        translation.push({ step, chrf: t.chrf, chrfPlusPlus: t.chrfPlusPlus, bleu: t.bleu });
        log(`translation @ step ${step}: German → Romansh, ${t.outputs.length} held-out articles: chrF ${t.chrf.toFixed(2)}, chrF++ ${t.chrfPlusPlus.toFixed(2)}, BLEU ${t.bleu.toFixed(2)}; article 1 → ${JSON.stringify(first.hypothesis.slice(0, 120))}`);
      }
      writePlot();
      progress?.pause();
    };
    const save = (): string => {
      const st: TrainerState = {
        format: 'apertus-trainer-state',
        version: 1,
        step,
        tokens,
        samples,
        scheduler: scheduler.stateDict(),
        loader: { ...order.state },
        metrics: metrics.records,
        config: cfg as unknown as Json,
        extra: { dataFingerprint: data.fingerprint, totalSteps: total },
      };
      const dir = manager.save(step, (tmp) => writeTrainingCheckpoint(tmp, { model, optimizer, state: st, files }));
      log(`checkpoint saved: ${dir}`);
      progress?.pause();
      return dir;
    };

    if (step === 0) evaluate(true);
    let checkpoint: string | null = latest?.dir ?? null;
    let interrupted = false;
    while (step < total) {
      const micro: LmBatch[] = [];
      let stepTokens = 0;
      for (let a = 0; a < cfg.gradAccumulation; a++) {
        const rows = order.next(cfg.microBatchSize).map((i) => data.examples[i]!);
        for (const r of rows) stepTokens += r.ids.length - 1;
        micro.push(toLmBatch(collate(rows, data.padId)));
      }
      const r = trainStep({
        params,
        optimizer,
        scheduler,
        microBatches: micro,
        weightOf: (b) => b.keptTokens,
        loss: (b, normalizer) => sftLoss(model, b, normalizer),
        clip: cfg.clip,
        schedulerIncrement: 1,
        step: step + 1,
      });
      step++;
      tokens += stepTokens;
      samples += gbs;
      metrics.log({ type: 'train', step, tokens, loss: r.loss, lr: r.lr, gradNorm: r.gradNorm, lossTokens: r.weight });
      progress.update({ step, tokens: stepTokens, loss: r.loss, lr: r.lr });
      const last = step === total;
      if ((cfg.evalInterval > 0 && step % cfg.evalInterval === 0) || last) evaluate(last);
      interrupted = options.signal?.aborted === true && !last;
      if ((cfg.checkpointInterval > 0 && step % cfg.checkpointInterval === 0) || last || interrupted) checkpoint = save();
      if (interrupted) break;
      // Let signal handlers (SIGINT → checkpoint and stop) run between steps.
      await new Promise((resolve) => setImmediate(resolve));
    }
    writePlot();
    let modelDir: string | null = null;
    if (!interrupted) {
      const baseModel = resolveModelDir(cfg.model);
      saveCheckpoint(model, paths.model, { dtype: cfg.saveDtype, files, baseModel });
      modelDir = paths.model;
      log(`final model (${cfg.saveDtype}, Hugging Face format${model.adapter ? ', the frozen base with its LoRA adapter' : ''}): ${modelDir}`);
      if (model.adapter) {
        saveAdapter(model.adapter, paths.adapter, baseModel);
        log(`LoRA adapter (PEFT layout): ${paths.adapter}`);
      }
    } else {
      log(`stopped at step ${step}; continue with --resume`);
    }
    return { step, totalSteps: total, interrupted, metrics: metrics.records, checkpoint, modelDir, translation, files: { metrics: paths.metrics, plot: paths.plot, config: paths.config } };
  } finally {
    progress?.stop();
  }
}
