// The settings every training app shares, as schema fragments validated in one place: the
// optimizer (AdEMAMix or AdamW, clipping), the batch and data order, the epoch schedule of the
// post-training apps (linear warm-up, linear decay), and the run directory with its evaluation and
// checkpoint cadence, and LoRA. Apps spread these fragments into their schema and add their own fields.

import { AdamW, AdEMAMix, linearWarmupDecaySchedule, warmupStepsFromRatio, type LrSchedule } from '@apertus/ademamix';
import { parseLoraConfig, type LoraConfig } from '@apertus/model';
import { FLAGS, MAX_THREADS } from '@apertus/cli';
import { DEVICES, type Device, type Tensor } from '@apertus/tensor';
import { field, type ConfigSchema } from './config';
import type { ProgressMode } from './progress';

/** The optimizer: AdEMAMix (Apertus) or AdamW, with global-norm clipping. */
export interface OptimizerConfig {
  /** `ademamix` (Apertus) or `adamw`. */
  optimizer: 'ademamix' | 'adamw';
  /** Peak learning rate. */
  lr: number;
  /** β1, β2, β3 (β3 is AdEMAMix's slow EMA; ignored by AdamW). */
  betas: [number, number, number];
  /** AdEMAMix α. */
  alpha: number;
  /** Decoupled weight decay (not applied to norms, scalars and xIELU parameters). */
  weightDecay: number;
  /** Optimizer ε. */
  eps: number;
  /** Global gradient-norm clipping threshold; 0 disables clipping. */
  clip: number;
}

/** Batches and the seed of the data order. */
export interface BatchConfig {
  /** Rows per micro-batch. */
  microBatchSize: number;
  /** Micro-batches per optimizer step (global batch = microBatchSize × gradAccumulation). */
  gradAccumulation: number;
  /** Seed of the data order (and of whatever else the app draws). */
  seed: number;
}

/** Run length and learning-rate schedule of the post-training apps. */
export interface EpochScheduleConfig {
  /** Passes over the data when `steps` is null. */
  epochs: number;
  /** Optimizer steps; null = epochs × ⌈rows / global batch⌉. */
  steps: number | null;
  /** Linear warm-up as a fraction of the steps (Hugging Face `warmup_ratio`). */
  warmupRatio: number;
}

/** The chat task and held-out evaluation of the post-training apps (SFT, alignment). */
export interface ChatTaskConfig {
  /** UDHR declarations the translation task is drawn from (file codes, ISO 639-3 or BCP 47 tags). */
  languages: string[];
  /** Longest UDHR article (characters) used for training and the held-out evaluation. */
  maxChars: number;
  /** Longest conversation (prompt + completion) in tokens; longer ones are truncated on the right. */
  maxLength: number;
  /** Date written in the default system prompt (`YYYY-MM-DD`), fixed for reproducible data. */
  date: string;
  /** Greedy held-out German → Romansh translations (chrF/BLEU) at the start and the end. */
  evalTranslation: boolean;
  /** Most tokens per held-out translation. */
  evalMaxTokens: number;
  /** Weight dtype of the final `model/` (f32 keeps small updates exactly; bf16 as released checkpoints). */
  saveDtype: 'f32' | 'bf16';
}

/** The run directory, evaluation and checkpoint cadence, threads and display. */
export interface RunConfig {
  /** Output directory: checkpoints/, metrics.jsonl, loss.html, config.json, model/. */
  out: string;
  /** Evaluate every this many steps; 0 = only at the start and the end. */
  evalInterval: number;
  /** Save a checkpoint every this many steps (and at the end); 0 = only at the end. */
  checkpointInterval: number;
  /** Checkpoints kept on disk (0 = all). */
  keepCheckpoints: number;
  /** GEMM threads; null = all cores. */
  threads: number | null;
  /** Where the ops run (`cpu` or `webgpu`); a checkpoint resumes on either. */
  device: Device;
  /** Progress display. */
  progress: ProgressMode;
}

/** LoRA instead of full fine-tuning (SFT, alignment). */
export interface LoraRunConfig {
  /**
   * PEFT `LoraConfig` fields (`r`, `lora_alpha`, `lora_dropout`, `target_modules`, `use_rslora`, `trainable_token_indices`):
   * the base stays frozen and the run trains and saves an adapter. null = full fine-tuning.
   */
  lora: LoraConfig | null;
}

/**
 * Defaults the post-training apps (SFT, alignment) share: the optimizer's β1, β2, β3, α, weight
 * decay and ε (spread where an app lists its optimizer settings).
 */
export const POST_TRAINING_OPTIMIZER_DEFAULTS: Readonly<Pick<OptimizerConfig, 'betas' | 'alpha' | 'weightDecay' | 'eps'>> = Object.freeze({
  betas: [0.9, 0.999, 0.9999],
  alpha: 5,
  weightDecay: 0,
  eps: 1e-8,
} satisfies Pick<OptimizerConfig, 'betas' | 'alpha' | 'weightDecay' | 'eps'>);

/**
 * Defaults the post-training apps (SFT, alignment) share: checkpoints kept, the final model's dtype,
 * threads, device, display and full fine-tuning (spread last in an app's defaults).
 */
export const POST_TRAINING_RUN_DEFAULTS: Readonly<Pick<RunConfig & ChatTaskConfig & LoraRunConfig, 'keepCheckpoints' | 'saveDtype' | 'threads' | 'device' | 'progress' | 'lora'>> = Object.freeze({
  keepCheckpoints: 3,
  saveDtype: 'f32',
  threads: null,
  device: 'cpu',
  progress: 'auto',
  lora: null,
} satisfies Pick<RunConfig & ChatTaskConfig & LoraRunConfig, 'keepCheckpoints' | 'saveDtype' | 'threads' | 'device' | 'progress' | 'lora'>);

/** Fields of {@link LoraRunConfig}: a JSON object (a JSON string on the command line) or "none". */
export const LORA_FIELDS: ConfigSchema<LoraRunConfig> = {
  lora: {
    help: 'LoRA instead of full fine-tuning: PEFT LoraConfig fields, e.g. \'{"r":8,"lora_alpha":16,"target_modules":"all-linear"}\', or "none"',
    arg: '<json>',
    parse: (f, v) => f.nullable(v, (x) => {
      try {
        return parseLoraConfig(typeof x === 'string' ? JSON.parse(x) : x);
      } catch (e) {
        return f.fail((e as Error).message);
      }
    }),
  },
};

/** Fields of {@link OptimizerConfig}. */
export const OPTIMIZER_FIELDS: ConfigSchema<OptimizerConfig> = {
  optimizer: field.oneOf('optimizer', ['ademamix', 'adamw'] as const),
  lr: field.num('peak learning rate', 0, 10, { openLo: true }),
  betas: {
    help: 'optimizer betas',
    arg: '<b1,b2,b3>',
    parse: (f, v) => {
      const b = f.numbers(v, 3);
      b.forEach((x, i) => {
        if (!(x >= 0 && x < 1)) f.fail(`β${i + 1} must be in [0, 1), got ${x}`);
      });
      return b as [number, number, number];
    },
  },
  alpha: field.num('AdEMAMix alpha', 0, 1e6),
  weightDecay: field.num('decoupled weight decay', 0, 10),
  eps: field.num('optimizer epsilon', 0, 1, { openLo: true }),
  clip: field.num('global gradient-norm clipping, 0 = off', 0, 1e9),
};

/** Fields of {@link BatchConfig}. */
export const BATCH_FIELDS: ConfigSchema<BatchConfig> = {
  microBatchSize: field.int('rows per micro-batch', 1, 1 << 16),
  gradAccumulation: field.int('micro-batches per optimizer step', 1, 1 << 16),
  seed: field.int('seed of the data order and of everything else drawn at random', 0, 2 ** 32 - 1),
};

/** Fields of {@link EpochScheduleConfig}. */
export const EPOCH_SCHEDULE_FIELDS: ConfigSchema<EpochScheduleConfig> = {
  epochs: field.int('passes over the data when --steps is "none"', 1, 1 << 20),
  steps: field.intOrNull('optimizer steps, or "none" for --epochs passes', 1),
  warmupRatio: field.num('linear warm-up as a fraction of the steps', 0, 1),
};

/** Fields of {@link ChatTaskConfig}. */
export const CHAT_TASK_FIELDS: ConfigSchema<ChatTaskConfig> = {
  languages: field.list('UDHR declarations of the translation task, comma-separated', 2),
  maxChars: field.int('longest UDHR article used, in characters', 1, 1_000_000),
  maxLength: field.int('longest conversation in tokens; longer ones are truncated', 2, 1 << 20),
  date: field.date('date in the default system prompt'),
  evalTranslation: field.bool('held-out chrF/BLEU at the start and the end'),
  evalMaxTokens: field.int('most tokens per held-out translation', 1, 1 << 16),
  saveDtype: field.oneOf('weights of the final model/', ['f32', 'bf16'] as const, '<dtype>'),
};

/** Fields of {@link RunConfig}. */
export const RUN_FIELDS: ConfigSchema<RunConfig> = {
  out: field.str('output directory', '<dir>'),
  evalInterval: field.int('evaluate every n steps, 0 = start and end only', 0),
  checkpointInterval: field.int('checkpoint every n steps, 0 = end only', 0),
  keepCheckpoints: field.int('checkpoints kept on disk, 0 = all', 0),
  threads: field.intOrNull(FLAGS.threads.help, 1, MAX_THREADS),
  device: field.oneOf(FLAGS.device.help, DEVICES, '<device>'),
  progress: field.oneOf('progress display', ['auto', 'bar', 'lines', 'off'] as const, '<mode>'),
};

/** Every setting the post-training apps (SFT, alignment) share. */
export interface PostTrainingConfig extends RunConfig, OptimizerConfig, BatchConfig, EpochScheduleConfig, ChatTaskConfig, LoraRunConfig {}

/** Fields of {@link PostTrainingConfig}: the fragments above, spread first in a post-training app's schema. */
export const POST_TRAINING_FIELDS: ConfigSchema<PostTrainingConfig> = {
  ...RUN_FIELDS,
  ...OPTIMIZER_FIELDS,
  ...BATCH_FIELDS,
  ...EPOCH_SCHEDULE_FIELDS,
  ...CHAT_TASK_FIELDS,
  ...LORA_FIELDS,
};

/**
 * The settings of `schema` that change the numbers a run computes, which a resume must keep: every
 * key but the run directory, cadence and display settings ({@link RUN_FIELDS}) and `except`
 * (evaluation-only settings).
 */
export function trainingKeys<C extends RunConfig>(schema: ConfigSchema<C>, except: readonly (keyof C & string)[] = []): (keyof C & string)[] {
  const skip = new Set<string>([...Object.keys(RUN_FIELDS), ...except]);
  return (Object.keys(schema) as (keyof C & string)[]).filter((k) => !skip.has(k));
}

/** Samples per optimizer step. */
export function globalBatchSize(cfg: BatchConfig): number {
  return cfg.microBatchSize * cfg.gradAccumulation;
}

/** Optimizer steps of an epoch-scheduled run: `steps`, or `epochs` passes over `rows`. */
export function epochSteps(cfg: EpochScheduleConfig & BatchConfig, rows: number): number {
  return cfg.steps ?? cfg.epochs * Math.ceil(rows / globalBatchSize(cfg));
}

/** Linear warm-up over ⌈warmupRatio · total⌉ steps, then linear decay to 0 at `total` (counted in steps). */
export function linearDecaySchedule(cfg: EpochScheduleConfig & OptimizerConfig, total: number): LrSchedule {
  return linearWarmupDecaySchedule({ maxLr: cfg.lr, warmup: warmupStepsFromRatio(cfg.warmupRatio, total), total });
}

/**
 * The optimizer over `params`: AdamW, or AdEMAMix with the given α / β3 warm-ups (null = none,
 * as the Apertus post-training runs), Megatron's weight-decay groups.
 */
export function buildOptimizer(
  cfg: OptimizerConfig,
  params: Iterable<readonly [string, Tensor]>,
  warmups: { readonly alphaWarmup: number | null; readonly beta3Warmup: number | null } = { alphaWarmup: null, beta3Warmup: null },
): AdEMAMix | AdamW {
  const [b1, b2, b3] = cfg.betas;
  if (cfg.optimizer === 'adamw') return new AdamW(params, { lr: cfg.lr, betas: [b1, b2], eps: cfg.eps, weightDecay: cfg.weightDecay });
  return new AdEMAMix(params, { lr: cfg.lr, betas: [b1, b2, b3], alpha: cfg.alpha, ...warmups, eps: cfg.eps, weightDecay: cfg.weightDecay });
}
