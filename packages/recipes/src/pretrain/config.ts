// Configuration of a pretraining run: defaults < (checkpoint's config when resuming) < config file
// < command-line flags. Every value is validated here, with errors naming the flag or file field.

import { PRESETS, type ApertusConfig, type PresetName } from '@apertus/model';
import { BATCH_FIELDS, OPTIMIZER_FIELDS, RUN_FIELDS, trainingKeys, type BatchConfig, type OptimizerConfig, type RunConfig, configFailure, field, mergeConfigLayers, type ConfigLayer, type ConfigSchema, type Resolved } from '@apertus/trainer';

/**
 * UDHR declarations of the default corpus: the four national languages of Switzerland (German,
 * French, Italian, Romansh) plus Swiss German and English — about 80,000 characters.
 */
export const DEFAULT_UDHR_LANGUAGES: readonly string[] = Object.freeze(['eng', 'deu_1996', 'gsw1', 'fra', 'ita', 'roh_rumgr']);

/** Every setting of a pretraining run (config-file keys; flags are the kebab-case forms). */
export interface PretrainConfig extends RunConfig, OptimizerConfig, BatchConfig {
  /** Model preset (`tiny`, `small`, …) used unless `modelConfig` is given. */
  preset: PresetName;
  /** Path to a Hugging Face `config.json` for the architecture (overrides `preset`). */
  modelConfig: string | null;
  /** Architecture fields overriding the preset / config.json (config file only; `vocab_size` comes from the tokenizer). */
  model: Partial<ApertusConfig>;
  /** `udhr` (bundled default), a `.jsonl` file (one `{"text": …}` per line), a folder of `.txt`/`.md` files, or the prefix of a Megatron `.bin/.idx` pair (token ids of `tokenizer`). */
  data: string;
  /** UDHR declarations to read when `data` is `udhr` (file codes, ISO 639-3 or BCP 47 tags). */
  languages: string[];
  /** Fraction of documents held out for validation (by a hash of the document id). */
  validationFraction: number;
  /** Directory with `tokenizer.json` to use; null trains a BPE tokenizer on the training split. */
  tokenizer: string | null;
  /** Vocabulary size of the trained tokenizer (≥ 1256: 1000 reserved ids + 256 bytes). */
  vocabSize: number;
  /** At most this many characters of training text are used to train the tokenizer. */
  tokenizerSampleChars: number;
  /** Documents longer than this many characters are an error (protects memory). */
  maxDocumentChars: number;
  /** Folder of `<host>.txt` robots.txt files for the robots opt-out filter; null skips that filter. */
  robots: string | null;
  /** Tokens per training sequence. */
  seqLength: number;
  /** Optimizer steps. */
  steps: number;
  /** Final learning rate after the cooldown. */
  minLr: number;
  /** AdEMAMix T_α in steps; null = the run length. */
  alphaWarmup: number | null;
  /** AdEMAMix T_β3 in steps; null = the run length. */
  beta3Warmup: number | null;
  /** WSD warm-up as a fraction of the steps. */
  warmupFraction: number;
  /** WSD cooldown as a fraction of the steps. */
  cooldownFraction: number;
  /** Cooldown shape (Apertus: 1-sqrt). */
  cooldownStyle: '1-sqrt' | 'linear' | 'cosine' | 'exponential';
  /** Goldfish loss on/off. */
  goldfish: boolean;
  /** Goldfish k: about 1 in k targets is dropped. */
  goldfishK: number;
  /** Goldfish h: tokens hashed to decide a drop. */
  goldfishH: number;
  /** Validation samples scored per evaluation (the first ones, always the same). */
  evalSamples: number;
  /** Prompts continued at each evaluation (`""` = from `<s>` alone). */
  prompts: string[];
  /** Tokens generated per prompt. */
  sampleTokens: number;
  /** Sampling temperature of the generations (0 = greedy). */
  sampleTemperature: number;
}

/** The defaults: the README's main run (UDHR, tiny preset, a few minutes on 2 cores). */
export const PRETRAIN_DEFAULTS: PretrainConfig = Object.freeze({
  out: 'runs/udhr-tiny',
  preset: 'tiny',
  modelConfig: null,
  model: {},
  data: 'udhr',
  languages: [...DEFAULT_UDHR_LANGUAGES],
  validationFraction: 0.1,
  tokenizer: null,
  vocabSize: 2048,
  tokenizerSampleChars: 20_000_000,
  maxDocumentChars: 50_000_000,
  robots: null,
  seqLength: 128,
  microBatchSize: 8,
  gradAccumulation: 1,
  steps: 150,
  optimizer: 'ademamix',
  lr: 3e-3,
  minLr: 3e-4,
  betas: [0.9, 0.999, 0.9999],
  alpha: 8,
  alphaWarmup: null,
  beta3Warmup: null,
  weightDecay: 0.1,
  eps: 1e-8,
  warmupFraction: 0.1,
  cooldownFraction: 0.2,
  cooldownStyle: '1-sqrt',
  clip: 0.1,
  goldfish: true,
  goldfishK: 50,
  goldfishH: 50,
  seed: 28,
  evalInterval: 25,
  evalSamples: 32,
  checkpointInterval: 50,
  keepCheckpoints: 3,
  prompts: ['', 'Everyone has the right to'],
  sampleTokens: 32,
  sampleTemperature: 0.7,
  threads: null,
  device: 'cpu',
  progress: 'auto',
} satisfies PretrainConfig);

const MODEL_KEYS = new Set<string>(['hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'head_dim', 'max_position_embeddings', 'rms_norm_eps', 'rope_theta', 'initializer_range']);

/** Validator and flag of every setting. */
export const PRETRAIN_SCHEMA: ConfigSchema<PretrainConfig> = {
  ...RUN_FIELDS,
  ...OPTIMIZER_FIELDS,
  ...BATCH_FIELDS,
  seed: { ...BATCH_FIELDS.seed, help: 'seed of initialisation, data order and split' },
  preset: field.oneOf('model preset', Object.keys(PRESETS) as PresetName[]),
  modelConfig: field.strOrNull('Hugging Face config.json of the architecture (overrides --preset)', '<file>'),
  model: {
    help: 'architecture fields overriding the preset (config file only)',
    flag: false,
    parse: (f, v) => {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return f.fail('expected an object of config.json fields');
      for (const [k, x] of Object.entries(v)) {
        if (!MODEL_KEYS.has(k)) f.fail(`unsupported architecture field "${k}" (allowed: ${[...MODEL_KEYS].join(', ')})`);
        if (typeof x !== 'number' || !Number.isFinite(x) || x <= 0) f.fail(`"${k}" must be a positive number, got ${JSON.stringify(x)}`);
      }
      return { ...(v as Partial<ApertusConfig>) };
    },
  },
  data: field.str('"udhr" (bundled), a .jsonl file of {"text": ...}, a folder of .txt/.md files, or a Megatron .bin/.idx prefix (with --tokenizer)', '<source>'),
  languages: field.list('UDHR declarations, comma-separated', 1),
  validationFraction: field.num('fraction of documents held out for validation', 0, 1, { openHi: true }),
  tokenizer: field.strOrNull('directory with tokenizer.json (default: train a BPE tokenizer)', '<dir>'),
  vocabSize: field.int('vocabulary size of the trained tokenizer', 1256, 2_097_151),
  tokenizerSampleChars: field.int('characters of training text used to train the tokenizer', 1),
  maxDocumentChars: field.int('longest document in characters', 1),
  robots: field.strOrNull('folder of <host>.txt robots.txt files for the opt-out filter', '<dir>'),
  seqLength: field.int('tokens per training sequence', 2, 1 << 20),
  steps: field.int('optimizer steps', 1),
  minLr: field.num('learning rate at the end of the cooldown', 0, 10),
  alphaWarmup: field.intOrNull('AdEMAMix alpha warm-up steps (default: the run length; 0 = none)', 0),
  beta3Warmup: field.intOrNull('AdEMAMix beta3 warm-up steps (default: the run length; 0 = none)', 0),
  warmupFraction: field.num('WSD warm-up, fraction of the steps', 0, 1, { openHi: true }),
  cooldownFraction: field.num('WSD cooldown, fraction of the steps', 0, 1, { openHi: true }),
  cooldownStyle: field.oneOf('WSD cooldown shape', ['1-sqrt', 'linear', 'cosine', 'exponential'] as const, '<style>'),
  goldfish: field.bool('Goldfish loss'),
  goldfishK: field.int('Goldfish k: drop about 1 in k targets', 2, 1 << 30),
  goldfishH: field.int('Goldfish h: hashed context width', 1, 1 << 20),
  evalSamples: field.int('validation sequences per evaluation', 0, 1 << 20),
  prompts: { help: 'prompt for the sample generations (repeatable; "" = from <s>)', arg: '<text>', flag: 'prompt', repeatable: true, parse: (f, v) => (Array.isArray(v) ? v.map((p) => f.str(p, true)) : [f.str(v, true)]) },
  sampleTokens: field.int('tokens generated per prompt at each evaluation, 0 = none', 0, 1 << 20),
  sampleTemperature: field.num('sampling temperature, 0 = greedy', 0, 100),
};

/** Settings that change the numbers a run computes (a resume must keep them): all but output, cadence, samples and display. */
export const PRETRAIN_TRAINING_KEYS: readonly (keyof PretrainConfig)[] = Object.freeze(trainingKeys(PRETRAIN_SCHEMA, ['evalSamples', 'prompts', 'sampleTokens', 'sampleTemperature']));

/**
 * Merge the layers over {@link PRETRAIN_DEFAULTS} and validate every value and the relations between
 * them. Returns the config and, per key, the source of its value.
 * @throws ConfigError naming the key and the flag or file it came from
 */
export function resolvePretrainConfig(layers: readonly ConfigLayer[]): Resolved<PretrainConfig> {
  const { config, sources } = mergeConfigLayers(PRETRAIN_SCHEMA, PRETRAIN_DEFAULTS, layers);
  if (config.minLr > config.lr) throw configFailure('minLr', `(${config.minLr}) must not exceed lr (${config.lr})`, sources);
  if (config.warmupFraction + config.cooldownFraction > 1) throw configFailure('cooldownFraction', `warm-up (${config.warmupFraction}) plus cooldown (${config.cooldownFraction}) exceed the run`, sources);
  return { config, sources };
}
