// The training loop shared by the apps:
//   lock the run directory → resume (verified checkpoint, same settings, same data) or start
//   fresh / over → the app's setup (model, data, optimizer, schedule, batches, loss) → evaluate
//   at step 0 → steps with gradient accumulation → metrics, progress, evaluation, checkpoints at
//   their intervals → on a stop signal a checkpoint after the current step → the final model
//   (and, for a LoRA run, its adapter alone in PEFT layout).
// A run resumed from its latest checkpoint reproduces the uninterrupted run bit for bit: the
// checkpoint holds float32 weights, the optimizer moments, the scheduler count and the data
// position, and nothing else in the loop is random.

import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '@apertus/atomic-file';
import { LrScheduler, type LrSchedule, type OptimizerStateDict } from '@apertus/ademamix';
import { saveAdapter, saveCheckpoint, type ApertusModel } from '@apertus/model';
import { describeDevice, setGemmThreads, useDevice, type Tensor } from '@apertus/tensor';
import type { LmBatch } from './batch';
import { CheckpointManager, readTrainerState, readTrainingCheckpoint, writeTrainingCheckpoint } from './checkpoint';
import { changedKeys, type ConfigLayer, type RawConfig } from './config';
import { ConfigError, ResumeError } from './errors';
import { evaluateLm } from './evaluate';
import { MetricsLogger } from './metrics';
import { writeLossCurve } from './plot';
import { ProgressReporter } from './progress';
import { RunLock } from './run-lock';
import type { RunConfig } from './run-config';
import { trainStep, type StepOptimizer, type TrainStepResult } from './train-step';
import type { Json, MetricRecord, TrainerState } from './trainer-state';

/** Files of a run directory. */
export interface RunPaths {
  readonly checkpoints: string;
  readonly metrics: string;
  readonly plot: string;
  readonly config: string;
  readonly model: string;
  readonly adapter: string;
}

/** The layout of run directory `out`. */
export function runPaths(out: string): RunPaths {
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
 * The settings saved in the latest checkpoint of run directory `out`, as a config layer (a resume
 * resolves its flags on top of them); null when there is no checkpoint.
 */
export function checkpointLayer(out: string): ConfigLayer | null {
  const latest = new CheckpointManager(runPaths(out).checkpoints).latest();
  if (latest === null) return null;
  const config = readTrainerState(latest.dir).config;
  if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new ResumeError(latest.dir, 'trainer_state.json has no run configuration');
  return { source: path.join(latest.dir, 'trainer_state.json'), values: config as RawConfig };
}

/** The optimizer as the loop needs it (`AdEMAMix`, `AdamW`). */
export interface TrainingOptimizer extends StepOptimizer {
  stateDict(): OptimizerStateDict;
  loadStateDict(state: OptimizerStateDict): void;
}

/** The checkpoint a run resumes from, verified and with its settings parsed. */
export interface ResumePoint<C> {
  /** Its directory. */
  readonly dir: string;
  /** The float32 model saved in it. */
  readonly model: ApertusModel;
  /** Counters, data position, metrics and settings. */
  readonly state: TrainerState<C>;
  /** The optimizer moments (restored by the loop). */
  readonly optimizerState: OptimizerStateDict;
}

/** What the app's setup is given. */
export interface SetupContext<C> {
  /** The checkpoint being resumed (its settings already match), or null for a fresh start. */
  readonly resume: ResumePoint<C> | null;
  /** Messages (through the progress display). */
  readonly log: (message: string) => void;
  /**
   * Compare the fingerprint of the run's data with the resumed checkpoint's; call it before
   * writing anything, so that a refused resume leaves the run directory as it was.
   * @throws ResumeError when they differ
   */
  readonly checkData: (fingerprint: string) => void;
}

/** The batches of one optimizer step. */
export interface StepBatches<B> {
  /** Micro-batches (gradient accumulation over all of them). */
  readonly microBatches: readonly B[];
  /** Input tokens they hold (for the token counter and tokens/s). */
  readonly tokens: number;
}

/** Everything app-specific the loop runs: returned by the app's setup. */
export interface TrainingSetup<B> {
  /** The model trained: `resume.model`, or a fresh / base model. */
  readonly model: ApertusModel;
  /** Its optimizer (the loop restores the checkpoint's moments). */
  readonly optimizer: TrainingOptimizer;
  /** Learning rate as a function of the scheduler count (the loop restores the count). */
  readonly schedule: LrSchedule;
  /** Scheduler count added per step: the global batch in samples (Megatron) or 1. */
  readonly schedulerIncrement: number;
  /** Samples per optimizer step. */
  readonly globalBatch: number;
  /** Steps of the whole run. */
  readonly totalSteps: number;
  /** Global gradient-norm clipping (0 = off). */
  readonly clip: number;
  /** Fingerprint of the training data, stored in each checkpoint (see {@link SetupContext.checkData}). */
  readonly fingerprint: string;
  /** Files copied into every checkpoint and the final model (tokenizer, generation config). */
  readonly files: Readonly<Record<string, string>>;
  /** The base model's directory, recorded as `base_model_name_or_path` of a LoRA run's adapter. */
  readonly baseModel?: string;
  /** The data order: the next step's batches, and its position (JSON) for the checkpoint. */
  readonly data: { next(): StepBatches<B>; readonly state: Json };
  /** Loss weight of a micro-batch (its supervised tokens, or its pairs). */
  readonly weightOf: (batch: B) => number;
  /** Loss of a micro-batch, already divided by `normalizer` (the step's summed weight). */
  readonly loss: (batch: B, normalizer: number) => Tensor;
  /** Extra fields of the step's `train` record (e.g. kept tokens, preference statistics). */
  readonly trainRecord?: (result: TrainStepResult) => Record<string, Json>;
  /** Validation batches: their token-mean loss is logged at every evaluation. */
  readonly validation: readonly LmBatch[];
  /** More evaluation (samples, translations) at step 0, every `evalInterval` steps and at the end. */
  readonly evaluate?: (step: number, last: boolean) => MetricRecord[];
  /** First message of a fresh run (model and run summary). */
  readonly summary: string;
  /** First line under the loss-curve title (model, data, optimizer). */
  readonly plotNote: string;
  /** Appended to the plot's second line (after step, tokens and the validation-loss trend). */
  readonly plotDetails?: (metrics: readonly MetricRecord[]) => string;
}

/** Options of {@link runTraining}. */
export interface RunTrainingOptions<C extends RunConfig, B> {
  /** The run's settings: saved in `config.json` and in each checkpoint. */
  readonly config: C;
  /** Settings that change the numbers a run computes: a resume must keep them. */
  readonly trainingKeys: readonly (keyof C & string)[];
  /** Validate settings read back from a checkpoint (the app's config resolver). */
  readonly parseConfig: (values: RawConfig, source: string) => C;
  /** The app's part: model, data, optimizer, schedule, loss, evaluation. */
  readonly setup: (ctx: SetupContext<C>) => Promise<TrainingSetup<B>>;
  /** Name of the program, for the loss-curve title (`apertus-pretrain`). */
  readonly name: string;
  /** Weight dtype of the final `model/` directory. Default bf16 (the released format). */
  readonly saveDtype?: 'f32' | 'bf16';
  /** Continue from the latest checkpoint in `<out>/checkpoints` (a fresh start when there is none). */
  readonly resume?: boolean;
  /** Delete earlier checkpoints and the final model in `out` and start again. */
  readonly overwrite?: boolean;
  /** Messages (data summary, evaluations, checkpoints). Default: through the progress display. */
  readonly log?: (message: string) => void;
  /** Stop after the current step, save a checkpoint and return (wired to SIGINT / SIGTERM by the CLI). */
  readonly signal?: AbortSignal;
}

/** What a run produced. */
export interface TrainingResult {
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
  /** Output files. */
  readonly files: { readonly metrics: string; readonly plot: string; readonly config: string };
}

/** Validation losses of the `eval` records, for summaries: `first → last`, or '' when fewer than two. */
export function validationTrend(metrics: readonly MetricRecord[]): string {
  const evals = metrics.filter((r) => r.type === 'eval');
  return evals.length > 1 ? `validation loss ${(evals[0]!.valLoss as number).toFixed(4)} → ${(evals[evals.length - 1]!.valLoss as number).toFixed(4)}` : '';
}

/** Open the checkpoint to resume: verified, settings parsed and compared with `o.config`. */
function resumePoint<C extends RunConfig, B>(o: RunTrainingOptions<C, B>, dir: string): ResumePoint<C> {
  const ckpt = readTrainingCheckpoint(dir);
  const source = path.join(dir, 'trainer_state.json');
  if (typeof ckpt.state.config !== 'object' || ckpt.state.config === null || Array.isArray(ckpt.state.config)) throw new ResumeError(dir, 'trainer_state.json has no run configuration');
  let saved: C;
  try {
    saved = o.parseConfig(ckpt.state.config, source);
  } catch (e) {
    if (e instanceof ConfigError) throw new ResumeError(dir, `its settings are invalid (${e.message})`);
    throw e;
  }
  const changed = changedKeys(saved, o.config, o.trainingKeys);
  if (changed.length > 0) throw new ResumeError(dir, `settings differ from the checkpoint's: ${changed.map((k) => `${k} (${JSON.stringify(saved[k])} → ${JSON.stringify(o.config[k])})`).join(', ')}`);
  return { dir, model: ckpt.model, state: { ...ckpt.state, config: saved }, optimizerState: ckpt.optimizerState };
}

/**
 * Run (or resume) a training run in `config.out`: `config.json`, `checkpoints/step-NNNNNN/` +
 * `checkpoints/latest`, `metrics.jsonl`, `loss.html`, and at the end `model/`. The directory is
 * locked (`run.lock`) while the run lasts. A refused resume (other settings, other data, a
 * damaged checkpoint) throws before anything in the directory is written.
 */
export async function runTraining<C extends RunConfig, B>(o: RunTrainingOptions<C, B>): Promise<TrainingResult> {
  const cfg = o.config;
  // First, so that a missing GPU fails before the run directory is touched.
  const device = describeDevice(await useDevice(cfg.device));
  const paths = runPaths(cfg.out);
  const manager = new CheckpointManager(paths.checkpoints, { keepLast: cfg.keepCheckpoints });
  fs.mkdirSync(cfg.out, { recursive: true });
  let progress: ProgressReporter | null = null;
  const log = o.log ?? ((m: string) => (progress ? progress.log(m) : process.stdout.write(`${m}\n`)));
  const lock = RunLock.acquire(cfg.out, (owner) => log(`taking over the stale lock of process ${owner.pid} (no longer running)`));
  try {
    let latest = manager.latest();
    if (latest !== null && !o.resume) {
      if (!o.overwrite) throw new ConfigError('out', `${cfg.out} already holds checkpoints (latest ${path.basename(latest.dir)}); pass --resume to continue that run, --overwrite to start over, or choose another --out`);
      fs.rmSync(paths.checkpoints, { recursive: true, force: true });
      fs.rmSync(paths.model, { recursive: true, force: true });
      fs.rmSync(paths.adapter, { recursive: true, force: true });
      latest = null;
    }
    const resume = latest === null ? null : resumePoint(o, latest.dir);
    const state = resume?.state ?? null;
    if (cfg.threads !== null) setGemmThreads(cfg.threads);
    const s = await o.setup({
      resume,
      log,
      checkData: (fingerprint) => {
        if (resume !== null && resume.state.extra.dataFingerprint !== fingerprint) throw new ResumeError(resume.dir, 'the training data or tokenizer changed since the checkpoint was written');
      },
    });
    if (resume !== null) {
      if (resume.state.extra.dataFingerprint !== s.fingerprint) throw new ResumeError(resume.dir, 'the training data or tokenizer changed since the checkpoint was written');
      if (resume.state.step > s.totalSteps) throw new ResumeError(resume.dir, `the checkpoint is at step ${resume.state.step}, beyond the run's ${s.totalSteps} steps`);
      s.optimizer.loadStateDict(resume.optimizerState);
    }
    writeFileAtomic(paths.config, `${JSON.stringify(cfg, null, 2)}\n`);
    const scheduler = new LrScheduler(s.schedule, state?.scheduler.count ?? 0);
    const metrics = new MetricsLogger(paths.metrics, state?.metrics ?? []);
    let step = state?.step ?? 0;
    let tokens = state?.tokens ?? 0;
    let samples = state?.samples ?? 0;
    log(resume !== null ? `resuming from ${resume.dir} (step ${step})` : s.summary);
    progress = new ProgressReporter({ totalSteps: s.totalSteps, startStep: step, mode: cfg.progress, device });
    const params = s.model.parameters();

    const writePlot = (): void => {
      const details = [validationTrend(metrics.records), s.plotDetails?.(metrics.records) ?? ''].filter((x) => x !== '');
      writeLossCurve(paths.plot, metrics.records, {
        title: `${o.name} — ${path.basename(path.resolve(cfg.out))}`,
        notes: [s.plotNote, [`step ${step} of ${s.totalSteps}, ${tokens} tokens`, ...details].join('; ')],
      });
    };
    const evaluate = (last: boolean): void => {
      if (s.validation.length > 0) {
        const r = evaluateLm(s.model, s.validation);
        metrics.log({ type: 'eval', step, tokens, valLoss: r.loss, valPerplexity: r.perplexity, valTokens: r.tokens });
        log(`eval @ step ${step}: validation loss ${r.loss.toFixed(4)}, perplexity ${r.perplexity.toFixed(2)} (${r.tokens} tokens)`);
      }
      for (const record of s.evaluate?.(step, last) ?? []) metrics.log(record);
      writePlot();
      progress?.pause();
    };
    const save = (): string => {
      const st: TrainerState<C> = {
        format: 'apertus-trainer-state',
        version: 1,
        step,
        tokens,
        samples,
        scheduler: scheduler.stateDict(),
        loader: s.data.state,
        metrics: metrics.records,
        config: cfg,
        extra: { dataFingerprint: s.fingerprint, totalSteps: s.totalSteps },
      };
      const dir = manager.save(step, (tmp) => writeTrainingCheckpoint(tmp, { model: s.model, optimizer: s.optimizer, state: st, files: s.files }));
      log(`checkpoint saved: ${dir}`);
      progress?.pause();
      return dir;
    };

    if (step === 0) evaluate(s.totalSteps === 0);
    let checkpoint = resume?.dir ?? null;
    let interrupted = false;
    while (step < s.totalSteps) {
      const batches = s.data.next();
      const r = trainStep({
        params,
        optimizer: s.optimizer,
        scheduler,
        microBatches: batches.microBatches,
        weightOf: s.weightOf,
        loss: s.loss,
        clip: s.clip,
        schedulerIncrement: s.schedulerIncrement,
        step: step + 1,
      });
      step++;
      tokens += batches.tokens;
      samples += s.globalBatch;
      metrics.log({ type: 'train', step, tokens, loss: r.loss, lr: r.lr, gradNorm: r.gradNorm, ...s.trainRecord?.(r) });
      progress.update({ step, tokens: batches.tokens, loss: r.loss, lr: r.lr });
      const last = step === s.totalSteps;
      if ((cfg.evalInterval > 0 && step % cfg.evalInterval === 0) || last) evaluate(last);
      interrupted = o.signal?.aborted === true && !last;
      if ((cfg.checkpointInterval > 0 && step % cfg.checkpointInterval === 0) || last || interrupted) checkpoint = save();
      if (interrupted) break;
      // Let signal handlers (SIGINT / SIGTERM → checkpoint and stop) run between steps.
      await new Promise((resolve) => setImmediate(resolve));
    }
    writePlot();
    let modelDir: string | null = null;
    if (!interrupted) {
      const dtype = o.saveDtype ?? 'bf16';
      const adapter = s.model.adapter, baseModel = s.baseModel ?? null;
      saveCheckpoint(s.model, paths.model, { dtype, files: { ...s.files }, baseModel });
      modelDir = paths.model;
      log(`final model (${dtype}, Hugging Face format${adapter ? ', the frozen base with its LoRA adapter' : ''}): ${modelDir}`);
      if (adapter) {
        saveAdapter(adapter, paths.adapter, baseModel);
        log(`LoRA adapter (PEFT layout): ${paths.adapter}`);
      }
    } else {
      log(`stopped at step ${step}; continue with --resume`);
    }
    return { step, totalSteps: s.totalSteps, interrupted, metrics: metrics.records, checkpoint, modelDir, files: { metrics: paths.metrics, plot: paths.plot, config: paths.config } };
  } finally {
    progress?.stop();
    lock.release();
  }
}
