// Configuration of an alignment run: defaults < (checkpoint's config when resuming) < config file
// < command-line flags. Every value is validated here, with errors naming the flag or file field.

import { POST_TRAINING_FIELDS, POST_TRAINING_OPTIMIZER_DEFAULTS, POST_TRAINING_RUN_DEFAULTS, RUN_FIELDS, configFailure, field, mergeConfigLayers, trainingKeys, type ConfigLayer, type ConfigSchema, type PostTrainingConfig, type Resolved } from '@apertus/trainer';

/** UDHR declarations the alignment prompts are drawn from (the SFT app's default task languages). */
export const DEFAULT_ALIGN_LANGUAGES: readonly string[] = Object.freeze(['deu_1996', 'gsw1', 'ita', 'roh_rumgr']);

/** Every setting of an alignment run (config-file keys; flags are the kebab-case forms). */
export interface AlignConfig extends PostTrainingConfig {
  /** The SFT model (policy initialisation and frozen reference): model dir, checkpoints dir or run dir. */
  model: string;
  /** Objective: `qrpo` (default) or `dpo` (baseline). */
  loss: 'qrpo' | 'dpo';
  /** QRPO form: `apertus` (β_i = min(β/|y|, 0.1), identity transform) or `claire` (fixed β, any transform). */
  qrpoVariant: 'apertus' | 'claire';
  /** β; null = 5 for the Apertus forms (QRPO and length-normalised DPO), 0.1 for CLAIRE QRPO and plain DPO. */
  beta: number | null;
  /** CLAIRE QRPO reward transform. */
  transform: 'identity' | 'log' | 'normal-icdf';
  /** QRPO regression loss. */
  lossType: 'mse' | 'mae';
  /** Divide each completion's loss by its length (`normalize_loss_by_length`; off in the Apertus runs). */
  normalizeByLength: boolean;
  /** DPO with β_w = β/|y_w|, β_l = β/|y_l| (the Apertus DPO baseline). */
  dpoLengthNormalized: boolean;
  /** `udhr` (translation prompts of the bundled task) or a `.jsonl` file of prompts (see README). */
  prompts: string;
  /** Prompts used (the first ones of the task, or of the file). */
  numPrompts: number;
  /** Reference completions n sampled per prompt from the reference policy. */
  numReferences: number;
  /** Sampling temperature of the reference completions. */
  sampleTemperature: number;
  /** Most tokens per reference completion. */
  sampleMaxTokens: number;
  /** Prompts generated together (the batch of `generateBatch`). */
  sampleBatchSize: number;
  /** Add the dataset's own completion (the reference translation) to each prompt's candidates. */
  includeOffline: boolean;
  /** Reward: `chrf` (default, verifiable), an `http(s)://` URL, `model:<dir>` or `js:<module file>`. */
  reward: string;
  /** Pairs selected per prompt (§3.5). */
  numPairs: number;
}

/** The defaults: QRPO on the bundled translation prompts with the chrF reward, a few minutes on 2 cores. */
export const ALIGN_DEFAULTS: AlignConfig = Object.freeze({
  out: 'runs/align-udhr',
  model: 'runs/sft-udhr',
  loss: 'qrpo',
  qrpoVariant: 'apertus',
  beta: null,
  transform: 'identity',
  lossType: 'mse',
  normalizeByLength: false,
  dpoLengthNormalized: true,
  prompts: 'udhr',
  languages: [...DEFAULT_ALIGN_LANGUAGES],
  numPrompts: 96,
  maxChars: 400,
  seed: 1,
  numReferences: 6,
  sampleTemperature: 1,
  sampleMaxTokens: 160,
  sampleBatchSize: 16,
  includeOffline: true,
  reward: 'chrf',
  numPairs: 1,
  maxLength: 512,
  date: '2025-09-01',
  microBatchSize: 4,
  gradAccumulation: 2,
  epochs: 1,
  steps: null,
  optimizer: 'adamw',
  lr: 3e-4,
  warmupRatio: 0.1,
  ...POST_TRAINING_OPTIMIZER_DEFAULTS,
  clip: 20,
  evalInterval: 0,
  evalTranslation: true,
  evalMaxTokens: 160,
  checkpointInterval: 4,
  ...POST_TRAINING_RUN_DEFAULTS,
} satisfies AlignConfig);

/** Settings that decide the preference data (reference completions, rewards, pairs, reference log-probs). */
export const ALIGN_DATA_KEYS: readonly (keyof AlignConfig)[] = Object.freeze([
  'model', 'prompts', 'languages', 'numPrompts', 'maxChars', 'seed', 'numReferences', 'sampleTemperature', 'sampleMaxTokens', 'sampleBatchSize',
  'includeOffline', 'reward', 'numPairs', 'maxLength', 'date',
] satisfies (keyof AlignConfig)[]);

/** The values of {@link ALIGN_DATA_KEYS}, fingerprinted with the reference model's files. */
export function dataSettings(cfg: AlignConfig): unknown {
  return ALIGN_DATA_KEYS.map((k) => [k, cfg[k]]);
}

/** Validator and flag of every setting. */
export const ALIGN_SCHEMA: ConfigSchema<AlignConfig> = {
  ...POST_TRAINING_FIELDS,
  evalInterval: { ...RUN_FIELDS.evalInterval, help: 'held-out reference loss every n steps, 0 = start and end only' },
  model: field.str('SFT model (policy init and frozen reference): HF model dir, checkpoints dir, or run dir', '<dir>'),
  loss: field.oneOf('objective', ['qrpo', 'dpo'] as const),
  qrpoVariant: field.oneOf('QRPO form: apertus (length-normalised β) or claire', ['apertus', 'claire'] as const, '<form>'),
  beta: { help: 'β (default 5 for the Apertus forms, 0.1 for CLAIRE QRPO and plain DPO)', arg: '<x>', parse: (f, v) => f.nullable(v, (x) => f.range(x, 0, 1e6, { openLo: true })) },
  transform: field.oneOf('CLAIRE QRPO reward transform', ['identity', 'log', 'normal-icdf'] as const, '<f>'),
  lossType: field.oneOf('QRPO regression loss', ['mse', 'mae'] as const, '<t>'),
  normalizeByLength: field.bool('divide each completion loss by its length'),
  dpoLengthNormalized: field.bool('DPO with β_w = β/|y_w|, β_l = β/|y_l| (Apertus baseline)'),
  prompts: field.str('"udhr" (bundled translation prompts) or a .jsonl file of {"prompt"|"messages", "reference"?, "completions"?}', '<source>'),
  numPrompts: field.int('prompts used', 1, 10_000_000),
  numReferences: field.int('reference completions sampled per prompt', 2, 1024),
  sampleTemperature: field.num('temperature of the reference completions', 0, 100, { openLo: true }),
  sampleMaxTokens: field.int('most tokens per reference completion', 1, 1 << 16),
  sampleBatchSize: field.int('prompts generated together', 1, 4096),
  includeOffline: field.bool("add the dataset's own completion to the candidates"),
  reward: {
    help: 'chrf, an http(s):// URL, model:<dir> or js:<module file>',
    arg: '<spec>',
    parse: (f, v) => {
      const r = f.str(v);
      if (!(r === 'chrf' || /^https?:\/\/./.test(r) || /^model:./.test(r) || /^js:./.test(r))) f.fail(`expected chrf, an http(s):// URL, model:<dir> or js:<module file>, got ${JSON.stringify(v)}`);
      return r;
    },
  },
  numPairs: field.int('pairs selected per prompt', 1, 64),
};

/** Settings that change the numbers a run computes (a resume must keep them): all but output, cadence, evaluation and display. */
export const ALIGN_TRAINING_KEYS: readonly (keyof AlignConfig)[] = Object.freeze(trainingKeys(ALIGN_SCHEMA, ['evalTranslation', 'evalMaxTokens', 'saveDtype']));

/**
 * Merge the layers over {@link ALIGN_DEFAULTS} and validate every value and the relations between
 * them. Returns the config and, per key, the source of its value.
 * @throws ConfigError naming the key and the flag or file it came from
 */
export function resolveAlignConfig(layers: readonly ConfigLayer[]): Resolved<AlignConfig> {
  const { config, sources } = mergeConfigLayers(ALIGN_SCHEMA, ALIGN_DEFAULTS, layers);
  if (config.loss === 'qrpo' && config.qrpoVariant === 'apertus' && config.transform !== 'identity') throw configFailure('transform', `the Apertus QRPO form uses the identity transform; use --qrpo-variant claire for "${config.transform}"`, sources);
  if (!config.includeOffline && config.numReferences < 2 * config.numPairs) throw configFailure('numPairs', `${config.numPairs} pair(s) per prompt need ${2 * config.numPairs} candidates, but only ${config.numReferences} reference completions are sampled`, sources);
  return { config, sources };
}

/** β actually used: `beta`, or the default of the objective (5 for the Apertus length-normalised forms, else 0.1). */
export function effectiveBeta(cfg: AlignConfig): number {
  if (cfg.beta !== null) return cfg.beta;
  const apertus = cfg.loss === 'qrpo' ? cfg.qrpoVariant === 'apertus' : cfg.dpoLengthNormalized;
  return apertus ? 5 : 0.1;
}
