// The alignment loop (training-recipe §3, §6), offline:
//   SFT checkpoint = policy initialisation and frozen reference π_ref
//   → preference data (reference sampling, rewards, quantile rewards, §3.5 pairs, log π_ref)
//   → micro-batches of pairs (chosen and rejected rows left-padded together)
//   → summed completion log-probs log π_θ(y|x) → QRPO (Apertus length-normalised β or CLAIRE form)
//     or DPO, mean over the prompts of the global batch
//   → clipping → AdamW / AdEMAMix with linear warm-up and decay → validation loss on the held-out
//     references, held-out chrF/BLEU, atomic checkpoints, metrics.jsonl and loss.html.
// A run resumed from its latest checkpoint reproduces the uninterrupted run's losses bit for bit.

import fs from 'node:fs';
import path from 'node:path';
import { AdamW, AdEMAMix, LrScheduler, linearWarmupDecaySchedule, warmupStepsFromRatio } from '@apertus/ademamix';
import { LoraAdapter, saveAdapter, saveCheckpoint, type ApertusModel } from '@apertus/model';
import { collateSft, evaluateTranslation, tokenizeSftDataset, type SftBatch, type TranslationExample } from '@apertus/posttrain';
import { dpoLoss, qrpoLoss, sequenceLogProbs } from '@apertus/qrpo';
import { Tensor, narrow, scale, setGemmThreads, sum, type Tensor as TensorType } from '@apertus/tensor';
import type { Tokenizer } from '@apertus/tokenizer';
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
import { changedKeys, effectiveBeta, type AlignConfig } from './config';
import { AlignConfigError, AlignResumeError } from './errors';
import { PairOrder } from './loader';
import { prepareAlignData, type AlignData, type PairRecord } from './preference-data';
import { loadPrompts } from './prompts';
import { loadReward } from './rewards';

/** Options of {@link runAlignment} besides the configuration. */
export interface AlignRunOptions {
  /** Continue from the latest checkpoint in `<out>/checkpoints` (a fresh start when there is none). */
  readonly resume?: boolean;
  /** Delete earlier checkpoints and the final model in `out` and start again (prepared data is reused when it matches). */
  readonly overwrite?: boolean;
  /** Messages. Default: through the progress display. */
  readonly log?: (message: string) => void;
  /** Stop after the current step, save a checkpoint and return (e.g. wired to SIGINT). */
  readonly signal?: AbortSignal;
}

/** Corpus scores of the greedy held-out translations at one step. */
export interface TranslationScores {
  /** Step they were measured at (0 = the SFT model). */
  readonly step: number;
  /** chrF2, 0–100. */
  readonly chrf: number;
  /** chrF2++, 0–100. */
  readonly chrfPlusPlus: number;
  /** BLEU, 0–100. */
  readonly bleu: number;
}

/** What a run produced. */
export interface AlignResult {
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
  /** The final model directory, when the run finished. */
  readonly modelDir: string | null;
  /** Held-out translation scores of the SFT model (step 0) and of the final model, when measured. */
  readonly translation: readonly TranslationScores[];
  /** Files written. */
  readonly files: { readonly metrics: string; readonly plot: string; readonly config: string; readonly pairs: string };
}

/** Where a run keeps its files. */
export function alignPaths(out: string): { checkpoints: string; metrics: string; plot: string; config: string; model: string; adapter: string } {
  return {
    checkpoints: path.join(out, 'checkpoints'),
    metrics: path.join(out, 'metrics.jsonl'),
    plot: path.join(out, 'loss.html'),
    config: path.join(out, 'config.json'),
    model: path.join(out, 'model'),
    adapter: path.join(out, 'adapter'),
  };
}

/** The configuration saved in the latest checkpoint of `out`, or null when there is none. */
export function checkpointConfig(out: string): { dir: string; config: Record<string, unknown> } | null {
  const latest = new CheckpointManager(alignPaths(out).checkpoints).latest();
  if (latest === null) return null;
  const state = readTrainerState(latest.dir);
  if (typeof state.config !== 'object' || state.config === null || Array.isArray(state.config)) throw new AlignResumeError(latest.dir, 'trainer_state.json has no run configuration');
  return { dir: latest.dir, config: state.config as Record<string, unknown> };
}

/** Pairs per optimizer step. */
export function globalBatchSize(cfg: AlignConfig): number {
  return cfg.microBatchSize * cfg.gradAccumulation;
}

/** Optimizer steps: `steps`, or `epochs` passes over `numPairs` pairs. */
export function totalSteps(cfg: AlignConfig, numPairs: number): number {
  return cfg.steps ?? cfg.epochs * Math.ceil(numPairs / globalBatchSize(cfg));
}

/** AdamW or AdEMAMix (no α/β3 warm-up) over `params`. */
export function buildOptimizer(cfg: AlignConfig, params: Iterable<readonly [string, TensorType]>): AdEMAMix | AdamW {
  const [b1, b2, b3] = cfg.betas;
  if (cfg.optimizer === 'adamw') return new AdamW(params, { lr: cfg.lr, betas: [b1, b2], eps: cfg.eps, weightDecay: cfg.weightDecay });
  return new AdEMAMix(params, { lr: cfg.lr, betas: [b1, b2, b3], alpha: cfg.alpha, alphaWarmup: null, beta3Warmup: null, eps: cfg.eps, weightDecay: cfg.weightDecay });
}

/** Linear warm-up over ⌈warmupRatio · total⌉ steps, then linear decay to 0 (counted in steps). */
export function buildScheduler(cfg: AlignConfig, total: number, count = 0): LrScheduler {
  return new LrScheduler(linearWarmupDecaySchedule({ maxLr: cfg.lr, warmup: warmupStepsFromRatio(cfg.warmupRatio, total), total }), count);
}

/** A micro-batch of pairs: chosen rows 0…B−1 and rejected rows B…2B−1 of one left-padded batch. */
export interface PairBatch {
  /** Pairs B. */
  readonly pairs: number;
  /** The collated rows (2B). */
  readonly rows: SftBatch;
  /** Chosen / rejected: log π_ref, |y|, R_q. */
  readonly chosen: { readonly refLogps: Float64Array; readonly lengths: Float64Array; readonly quantiles: Float64Array };
  /** See `chosen`. */
  readonly rejected: { readonly refLogps: Float64Array; readonly lengths: Float64Array; readonly quantiles: Float64Array };
}

/** Collate pairs into a {@link PairBatch}. */
export function collatePairs(pairs: readonly PairRecord[], padId: number): PairBatch {
  const rows = collateSft([...pairs.map((p) => ({ ids: p.chosen.ids, assistantMask: p.chosen.mask })), ...pairs.map((p) => ({ ids: p.rejected.ids, assistantMask: p.rejected.mask }))], { padId });
  const side = (k: 'chosen' | 'rejected') => ({
    refLogps: Float64Array.from(pairs, (p) => p[k].refLogp),
    lengths: Float64Array.from(pairs, (p) => p[k].length),
    quantiles: Float64Array.from(pairs, (p) => p[k].quantileReward),
  });
  return { pairs: pairs.length, rows, chosen: side('chosen'), rejected: side('rejected') };
}

/** Per-step statistics of the policy against the reference (for the metrics log). */
export interface PairStats {
  /** Σ over pairs of log π_θ(y_w) − log π_ref(y_w). */
  logRatioChosen: number;
  /** Σ over pairs of log π_θ(y_l) − log π_ref(y_l). */
  logRatioRejected: number;
  /** Pairs whose chosen log-ratio per token exceeds the rejected one. */
  correct: number;
  /** Pairs counted. */
  pairs: number;
}

/**
 * The objective on one micro-batch: the per-prompt QRPO or DPO losses summed and divided by
 * `normalizer` (the pairs of the whole optimizer step), so micro-batches add up to the mean over
 * the prompts of the global batch. Policy log-probs are summed over the completion tokens.
 */
export function pairLoss(model: ApertusModel, b: PairBatch, cfg: AlignConfig, normalizer: number, stats?: PairStats): TensorType {
  const r = b.rows;
  const shape = [r.batchSize, r.length];
  const logits = model.forward(Tensor.ints(r.inputs, shape), { positions: Tensor.ints(r.positions, shape), docIds: Tensor.ints(r.docIds, shape) });
  const logps = sequenceLogProbs(logits, Tensor.ints(r.targets, shape), r.lossMask);
  const chosen = { policyLogps: narrow(logps, 0, 0, b.pairs), refLogps: b.chosen.refLogps, lengths: b.chosen.lengths };
  const rejected = { policyLogps: narrow(logps, 0, b.pairs, b.pairs), refLogps: b.rejected.refLogps, lengths: b.rejected.lengths };
  const beta = effectiveBeta(cfg);
  const { perPrompt } =
    cfg.loss === 'qrpo'
      ? qrpoLoss(chosen, rejected, { chosen: b.chosen.quantiles, rejected: b.rejected.quantiles }, {
          beta,
          variant: cfg.qrpoVariant,
          transform: cfg.transform,
          numRefRewards: cfg.numReferences,
          lossType: cfg.lossType,
          normalizeByLength: cfg.normalizeByLength,
        })
      : dpoLoss(chosen, rejected, { beta, lengthNormalized: cfg.dpoLengthNormalized, normalizeByLength: cfg.normalizeByLength });
  if (stats) {
    const lp = logps.toFloat32();
    for (let i = 0; i < b.pairs; i++) {
      const w = lp[i]! - b.chosen.refLogps[i]!;
      const l = lp[b.pairs + i]! - b.rejected.refLogps[i]!;
      stats.logRatioChosen += w;
      stats.logRatioRejected += l;
      if (w / b.chosen.lengths[i]! > l / b.rejected.lengths[i]!) stats.correct++;
      stats.pairs++;
    }
  }
  return scale(sum(perPrompt), 1 / normalizer);
}

/** Held-out references as assistant-only loss rows (teacher-forced validation loss). */
async function heldOutBatches(tokenizer: Tokenizer, heldOut: readonly TranslationExample[], cfg: AlignConfig, padId: number): Promise<LmBatch[]> {
  const rows = heldOut.map((e) => ({ messages: [...e.messages, { role: 'assistant' as const, content: e.reference }] }));
  const { examples } = await tokenizeSftDataset(tokenizer, rows, { maxLength: cfg.maxLength, date: cfg.date });
  const out: LmBatch[] = [];
  for (let i = 0; i < examples.length; i += 8) {
    const b = collateSft(examples.slice(i, i + 8), { padId });
    const shape = [b.batchSize, b.length];
    out.push({
      batchSize: b.batchSize,
      seqLength: b.length,
      ids: Tensor.ints(b.inputs, shape),
      targets: Tensor.ints(b.targets, [b.batchSize * b.length]),
      positions: Tensor.ints(b.positions, shape),
      docIds: Tensor.ints(b.docIds, shape),
      mask: b.lossMask,
      keptTokens: b.lossTokens,
      goldfishDropped: 0,
    });
  }
  return out;
}

/**
 * Run (or resume) an alignment run as configured. Writes under `cfg.out`: `config.json`,
 * `data/` (samples, rewards, pairs), `checkpoints/`, `metrics.jsonl`, `loss.html`, and at the end
 * `model/`.
 */
export async function runAlignment(cfg: AlignConfig, options: AlignRunOptions = {}): Promise<AlignResult> {
  const paths = alignPaths(cfg.out);
  const manager = new CheckpointManager(paths.checkpoints, { keepLast: cfg.keepCheckpoints });
  fs.mkdirSync(cfg.out, { recursive: true });
  let latest = manager.latest();
  if (latest !== null && !options.resume) {
    if (!options.overwrite) {
      throw new AlignConfigError('out', `${cfg.out} already holds checkpoints (latest ${path.basename(latest.dir)}); pass --resume to continue that run, --overwrite to start over, or choose another --out`);
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
    let state: TrainerState | null = null;
    let policy: ApertusModel | null = null;
    let optimizerState = null;
    if (latest !== null) {
      const ckpt = readTrainingCheckpoint(latest.dir);
      state = ckpt.state;
      const saved = state.config as unknown as AlignConfig;
      const changed = changedKeys(saved, cfg);
      if (changed.length > 0) throw new AlignResumeError(latest.dir, `settings differ from the checkpoint's: ${changed.map((k) => `${k} (${JSON.stringify(saved[k])} → ${JSON.stringify(cfg[k])})`).join(', ')}`);
      policy = ckpt.model;
      optimizerState = ckpt.optimizerState;
    }
    const refDir = resolveModelDir(cfg.model);
    const { tokenizer, files: tokenizerFiles } = loadModelTokenizer(refDir);
    const reward = await loadReward(cfg.reward, { date: cfg.date });
    const { prompts, heldOut } = await loadPrompts(cfg);
    if (latest === null) log(`reference model: ${refDir}; ${prompts.length} prompts; reward: ${reward.description}`);
    // π_ref is only needed to prepare the data; on a fresh run the policy starts as the same weights.
    let reference: ApertusModel | null = null;
    const data: AlignData = await prepareAlignData({
      cfg,
      prompts,
      modelDir: refDir,
      reward: reward.fn,
      log,
      ...(options.signal ? { signal: options.signal } : {}),
      reference: () => {
        // A resumed LoRA policy is π_ref with its adapter switched off: the weights are held once.
        if (policy?.adapter) { policy.adapter.enabled = false; return { model: policy, tokenizer }; }
        reference ??= loadModel(refDir);
        return { model: reference, tokenizer };
      },
    });
    if (policy?.adapter) policy.adapter.enabled = true;
    if (state !== null && state.extra.dataFingerprint !== data.fingerprint) throw new AlignResumeError(latest!.dir, 'the preference data changed since the checkpoint was written');
    const total = totalSteps(cfg, data.pairs.length);
    if (state !== null && state.step > total) throw new AlignResumeError(latest!.dir, `the checkpoint is at step ${state.step}, beyond the run's ${total} steps`);
    const model: ApertusModel = policy ?? reference ?? loadModel(refDir);
    // LoRA: the fresh policy is π_ref plus a zero-initialised adapter (log π_ref above was computed without it).
    if (cfg.lora && policy === null) LoraAdapter.init(model.config, cfg.lora, cfg.seed).attach(model);
    if (cfg.maxLength > model.config.max_position_embeddings) throw new AlignConfigError('maxLength', `${cfg.maxLength} exceeds the model's max_position_embeddings (${model.config.max_position_embeddings})`);
    fs.writeFileSync(paths.config, `${JSON.stringify(cfg, null, 2)}\n`);

    const optimizer = buildOptimizer(cfg, model.parameters());
    if (optimizerState !== null) optimizer.loadStateDict(optimizerState);
    const scheduler = buildScheduler(cfg, total, state?.scheduler.count ?? 0);
    const order = state ? new PairOrder(data.pairs.length, { state: state.loader }) : new PairOrder(data.pairs.length, { seed: cfg.seed });
    const metrics = new MetricsLogger(paths.metrics, state?.metrics ?? []);
    const valBatches = await heldOutBatches(tokenizer, heldOut, cfg, data.padId);
    const files = { ...tokenizerFiles, 'generation_config.json': chatGenerationConfig(model.config.bos_token_id, data.padId) };
    const gbs = globalBatchSize(cfg);
    const beta = effectiveBeta(cfg);
    let step = state?.step ?? 0;
    let tokens = state?.tokens ?? 0;
    let samples = state?.samples ?? 0;
    const params = model.parameters();
    const objective = cfg.loss === 'qrpo' ? `QRPO (${cfg.qrpoVariant}${cfg.qrpoVariant === 'claire' ? `, ${cfg.transform}` : ', length-normalised'}, β ${beta})` : `DPO (β ${beta}${cfg.dpoLengthNormalized ? '/|y|' : ''})`;
    if (latest !== null) log(`resuming from ${latest.dir} (step ${step})`);
    else log(`training: ${objective} on ${data.pairs.length} pairs, ${total} steps × ${gbs} pairs, ${cfg.optimizer}, lr ${cfg.lr} (warm-up ${warmupStepsFromRatio(cfg.warmupRatio, total)} steps, linear decay), clip ${cfg.clip}`);
    progress = new ProgressReporter({ totalSteps: total, startStep: step, mode: cfg.progress });
    const translation: TranslationScores[] = metrics.records.filter((r) => r.type === 'translation').map((r) => ({ step: r.step, chrf: r.chrf as number, chrfPlusPlus: r.chrfPlusPlus as number, bleu: r.bleu as number }));

    const writePlot = (): void => {
      writeLossCurve(paths.plot, metrics.records, {
        title: `apertus-align — ${path.basename(path.resolve(cfg.out))}`,
        notes: [
          `${objective}; ${data.pairs.length} pairs from ${data.stats.prompts} prompts × ${cfg.numReferences} reference completions; reward ${cfg.reward}; ${cfg.optimizer}, lr ${cfg.lr}`,
          `step ${step} of ${total}` + (translation.length ? `; held-out chrF ${translation.map((t) => t.chrf.toFixed(2)).join(' → ')}` : '') + '; validation = held-out reference loss',
        ],
      });
    };
    const evaluate = (withTranslation: boolean): void => {
      if (valBatches.length > 0) {
        const r = evaluateLm(model, valBatches);
        metrics.log({ type: 'eval', step, valLoss: r.loss, valPerplexity: r.perplexity, valTokens: r.tokens });
        log(`eval @ step ${step}: held-out reference loss ${r.loss.toFixed(4)}, perplexity ${r.perplexity.toFixed(2)}`);
      }
      if (withTranslation && cfg.evalTranslation && heldOut.length > 0) {
        const t = evaluateTranslation(model, tokenizer, heldOut.map((e) => ({ messages: e.messages, reference: e.reference })), { maxTokens: cfg.evalMaxTokens, date: cfg.date });
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
      const micro: PairBatch[] = [];
      let stepTokens = 0;
      for (let a = 0; a < cfg.gradAccumulation; a++) {
        const pairs = order.next(cfg.microBatchSize).map((i) => data.pairs[i]!);
        for (const p of pairs) stepTokens += p.chosen.ids.length + p.rejected.ids.length - 2;
        micro.push(collatePairs(pairs, data.padId));
      }
      const stats: PairStats = { logRatioChosen: 0, logRatioRejected: 0, correct: 0, pairs: 0 };
      const r = trainStep({
        params,
        optimizer,
        scheduler,
        microBatches: micro,
        weightOf: (b) => b.pairs,
        loss: (b, normalizer) => pairLoss(model, b, cfg, normalizer, stats),
        clip: cfg.clip,
        schedulerIncrement: 1,
        step: step + 1,
      });
      step++;
      tokens += stepTokens;
      samples += gbs;
      metrics.log({
        type: 'train',
        step,
        tokens,
        loss: r.loss,
        lr: r.lr,
        gradNorm: r.gradNorm,
        logRatioChosen: stats.logRatioChosen / stats.pairs,
        logRatioRejected: stats.logRatioRejected / stats.pairs,
        accuracy: stats.correct / stats.pairs,
      });
      progress.update({ step, tokens: stepTokens, loss: r.loss, lr: r.lr });
      const last = step === total;
      if ((cfg.evalInterval > 0 && step % cfg.evalInterval === 0) || last) evaluate(last);
      interrupted = options.signal?.aborted === true && !last;
      if ((cfg.checkpointInterval > 0 && step % cfg.checkpointInterval === 0) || last || interrupted) checkpoint = save();
      if (interrupted) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    writePlot();
    let modelDir: string | null = null;
    if (!interrupted) {
      saveCheckpoint(model, paths.model, { dtype: cfg.saveDtype, files, baseModel: refDir });
      modelDir = paths.model;
      log(`final model (${cfg.saveDtype}, Hugging Face format${model.adapter ? ', the frozen base with its LoRA adapter' : ''}): ${modelDir}`);
      if (model.adapter) {
        saveAdapter(model.adapter, paths.adapter, refDir);
        log(`LoRA adapter (PEFT layout): ${paths.adapter}`);
      }
    } else {
      log(`stopped at step ${step}; continue with --resume`);
    }
    return {
      step,
      totalSteps: total,
      interrupted,
      metrics: metrics.records,
      checkpoint,
      modelDir,
      translation,
      files: { metrics: paths.metrics, plot: paths.plot, config: paths.config, pairs: path.join(cfg.out, 'data', 'pairs.jsonl') },
    };
  } finally {
    progress?.stop();
  }
}
