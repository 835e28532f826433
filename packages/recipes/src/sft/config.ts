// Configuration of an SFT run: the shared fragments of @apertus/trainer (run directory, optimizer,
// batches, epoch schedule) and the SFT data and evaluation settings, layered defaults < (checkpoint's
// config when resuming) < config file < command-line flags.

import { POST_TRAINING_FIELDS, POST_TRAINING_OPTIMIZER_DEFAULTS, POST_TRAINING_RUN_DEFAULTS, field, mergeConfigLayers, trainingKeys, type ConfigLayer, type ConfigSchema, type PostTrainingConfig, type Resolved } from '@apertus/trainer';

/**
 * UDHR declarations of the bundled translation task: German, Swiss German, Italian and Romansh — the
 * held-out direction's closest neighbours among apertus-pretrain's default languages. Few languages
 * mean few pairs (212 conversations), so a few-minute run sees every Romansh target several times;
 * German and Romansh are each paired with the other two, never with each other.
 */
export const DEFAULT_SFT_LANGUAGES: readonly string[] = Object.freeze(['deu_1996', 'gsw1', 'ita', 'roh_rumgr']);

/** Every setting of an SFT run (config-file keys; flags are the kebab-case forms). */
export interface SftConfig extends PostTrainingConfig {
  /** The base model: a Hugging Face model directory, a checkpoints folder with `latest`, or a run directory (`model/` or `checkpoints/`). */
  model: string;
  /** `udhr` (the bundled translation task) or a `.jsonl` file of `messages`, `prompt`/`completion` or `text` rows. */
  data: string;
  /** Validation conversations (`.jsonl`) for the validation loss; null = the held-out UDHR direction with its references. */
  validation: string | null;
  /** Translation examples drawn (upper bound). */
  maxExamples: number;
  /** Pack conversations into rows of up to `maxLength` tokens (best-fit decreasing) with the per-document attention mask. */
  packing: boolean;
}

/** The defaults: the README's main run (UDHR translation task on the tiny pretraining run, a few minutes on 2 cores). */
export const SFT_DEFAULTS: SftConfig = Object.freeze({
  out: 'runs/sft-udhr',
  model: 'runs/udhr-tiny',
  data: 'udhr',
  validation: null,
  languages: [...DEFAULT_SFT_LANGUAGES],
  maxExamples: 2000,
  packing: false,
  maxChars: 400,
  maxLength: 512,
  date: '2025-09-01',
  microBatchSize: 8,
  gradAccumulation: 1,
  epochs: 3,
  steps: null,
  optimizer: 'ademamix',
  lr: 6e-3,
  warmupRatio: 0.03,
  ...POST_TRAINING_OPTIMIZER_DEFAULTS,
  clip: 1,
  seed: 0,
  evalInterval: 25,
  evalTranslation: true,
  evalMaxTokens: 160,
  checkpointInterval: 25,
  ...POST_TRAINING_RUN_DEFAULTS,
} satisfies SftConfig);

/** Validator and flag of every setting. */
export const SFT_SCHEMA: ConfigSchema<SftConfig> = {
  ...POST_TRAINING_FIELDS,
  model: field.str('base model: HF model dir, checkpoints dir, or run dir', '<dir>'),
  data: field.str('"udhr" (bundled translation task) or a .jsonl file of {"messages"}, {"prompt", "completion"} or {"text"} rows', '<source>'),
  validation: field.strOrNull('.jsonl conversations for the validation loss (default: the held-out German → Romansh articles)', '<file>'),
  maxExamples: field.int('translation conversations drawn', 1, 10_000_000),
  packing: field.bool('pack conversations into rows of --max-length tokens (no attention across conversations, positions restart)'),
};

/** Settings that change the numbers a run computes (a resume must keep them): all but output, cadence, evaluation and display. */
export const SFT_TRAINING_KEYS: readonly (keyof SftConfig)[] = Object.freeze(trainingKeys(SFT_SCHEMA, ['validation', 'evalTranslation', 'evalMaxTokens', 'saveDtype']));

/**
 * Merge the layers over {@link SFT_DEFAULTS} and validate every value. Returns the config and,
 * per key, the source of its value.
 * @throws ConfigError naming the key and the flag or file it came from
 */
export function resolveSftConfig(layers: readonly ConfigLayer[]): Resolved<SftConfig> {
  return mergeConfigLayers(SFT_SCHEMA, SFT_DEFAULTS, layers);
}
