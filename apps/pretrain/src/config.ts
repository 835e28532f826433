// Configuration of a pretraining run: defaults < (checkpoint's config when resuming) < config file
// < command-line flags. Every value is validated here, with errors naming the flag or file field.

import { ConfigField, configFailure, mergeConfigLayers, readConfigLayer, type ConfigErrorFactory, type ConfigLayer } from '@apertus/trainer';
import { PRESETS, type ApertusConfig, type PresetName } from '@apertus/model';
import type { ProgressMode } from '@apertus/trainer';
import { PretrainConfigError } from './errors';

/**
 * UDHR declarations of the default corpus: the four national languages of Switzerland (German,
 * French, Italian, Romansh) plus Swiss German and English — about 80,000 characters.
 */
export const DEFAULT_UDHR_LANGUAGES: readonly string[] = Object.freeze(['eng', 'deu_1996', 'gsw1', 'fra', 'ita', 'roh_rumgr']);

/** Every setting of a pretraining run (config-file keys; flags are the kebab-case forms). */
export interface PretrainConfig {
  /** Output directory: data, tokenizer, checkpoints, metrics.jsonl, loss.html, model/. */
  out: string;
  /** Model preset (`tiny`, `small`, …) used unless `modelConfig` is given. */
  preset: PresetName;
  /** Path to a Hugging Face `config.json` for the architecture (overrides `preset`). */
  modelConfig: string | null;
  /** Architecture fields overriding the preset / config.json (config file only; `vocab_size` comes from the tokenizer). */
  model: Partial<ApertusConfig>;
  /** `udhr` (bundled default), a `.jsonl` file (one `{"text": …}` per line) or a folder of `.txt`/`.md` files. */
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
  /** Sequences per micro-batch. */
  microBatchSize: number;
  /** Micro-batches per optimizer step (global batch = microBatchSize × gradAccumulation). */
  gradAccumulation: number;
  /** Optimizer steps. */
  steps: number;
  /** `ademamix` (Apertus) or `adamw`. */
  optimizer: 'ademamix' | 'adamw';
  /** Peak learning rate. */
  lr: number;
  /** Final learning rate after the cooldown. */
  minLr: number;
  /** β1, β2, β3 (β3 is AdEMAMix's slow EMA; ignored by AdamW). */
  betas: [number, number, number];
  /** AdEMAMix α. */
  alpha: number;
  /** AdEMAMix T_α in steps; null = the run length. */
  alphaWarmup: number | null;
  /** AdEMAMix T_β3 in steps; null = the run length. */
  beta3Warmup: number | null;
  /** Decoupled weight decay (not applied to norms, scalars and xIELU parameters). */
  weightDecay: number;
  /** Optimizer ε. */
  eps: number;
  /** WSD warm-up as a fraction of the steps. */
  warmupFraction: number;
  /** WSD cooldown as a fraction of the steps. */
  cooldownFraction: number;
  /** Cooldown shape (Apertus: 1-sqrt). */
  cooldownStyle: '1-sqrt' | 'linear' | 'cosine' | 'exponential';
  /** Global gradient-norm clipping threshold (Apertus: 0.1); 0 disables clipping. */
  clip: number;
  /** Goldfish loss on/off. */
  goldfish: boolean;
  /** Goldfish k: about 1 in k targets is dropped. */
  goldfishK: number;
  /** Goldfish h: tokens hashed to decide a drop. */
  goldfishH: number;
  /** Seed of the initialisation, the data order and the split. */
  seed: number;
  /** Evaluate (validation loss + samples) every this many steps; 0 = only at the start and the end. */
  evalInterval: number;
  /** Validation samples scored per evaluation (the first ones, always the same). */
  evalSamples: number;
  /** Save a checkpoint every this many steps (and at the end); 0 = only at the end. */
  checkpointInterval: number;
  /** Checkpoints kept on disk (0 = all). */
  keepCheckpoints: number;
  /** Prompts continued at each evaluation (`""` = from `<s>` alone). */
  prompts: string[];
  /** Tokens generated per prompt. */
  sampleTokens: number;
  /** Sampling temperature of the generations (0 = greedy). */
  sampleTemperature: number;
  /** GEMM threads; null = all cores. */
  threads: number | null;
  /** Progress display. */
  progress: ProgressMode;
}

/** The defaults: the README's main run (UDHR, tiny preset, a few minutes on 2 cores). */
export const DEFAULT_CONFIG: Readonly<PretrainConfig> = Object.freeze({
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
  progress: 'auto',
} satisfies PretrainConfig);

/** Keys of {@link PretrainConfig}. */
export type ConfigKey = keyof PretrainConfig;

/**
 * Settings that change the numbers a run computes. A resumed run must keep them (otherwise it
 * would not continue the same run); the others (output, display, evaluation cadence, checkpoint
 * cadence, threads) may change.
 */
export const TRAINING_KEYS: readonly ConfigKey[] = Object.freeze([
  'preset', 'modelConfig', 'model', 'data', 'languages', 'validationFraction', 'tokenizer', 'vocabSize', 'tokenizerSampleChars',
  'maxDocumentChars', 'robots', 'seqLength', 'microBatchSize', 'gradAccumulation', 'steps', 'optimizer', 'lr', 'minLr', 'betas',
  'alpha', 'alphaWarmup', 'beta3Warmup', 'weightDecay', 'eps', 'warmupFraction', 'cooldownFraction', 'cooldownStyle', 'clip',
  'goldfish', 'goldfishK', 'goldfishH', 'seed',
] satisfies ConfigKey[]);




export { flagName, type ConfigLayer, type RawConfig } from '@apertus/trainer';

const configError: ConfigErrorFactory = (field, message, source) => new PretrainConfigError(field, message, source);

const MODEL_KEYS = new Set<string>(['hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'head_dim', 'max_position_embeddings', 'rms_norm_eps', 'rope_theta', 'initializer_range']);

/** Validate one raw value for `key` (the value came from `source`). */
function parseValue(key: ConfigKey, v: unknown, source: string): PretrainConfig[ConfigKey] {
  const f = new ConfigField(key, source, configError);
  switch (key) {
    case 'out':
    case 'data':
      return f.str(v);
    case 'preset':
      return f.oneOf(v, Object.keys(PRESETS) as PresetName[]);
    case 'modelConfig':
    case 'tokenizer':
    case 'robots':
      return f.nullable(v, (x) => f.str(x));
    case 'model': {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return f.fail('expected an object of config.json fields');
      for (const [k, x] of Object.entries(v)) {
        if (!MODEL_KEYS.has(k)) f.fail(`unsupported architecture field "${k}" (allowed: ${[...MODEL_KEYS].join(', ')})`);
        if (typeof x !== 'number' || !Number.isFinite(x) || x <= 0) f.fail(`"${k}" must be a positive number, got ${JSON.stringify(x)}`);
      }
      return { ...(v as Partial<ApertusConfig>) };
    }
    case 'languages': {
      const l = f.list(v);
      if (l.length === 0) f.fail('give at least one language');
      return l;
    }
    case 'prompts':
      return Array.isArray(v) ? v.map((p) => f.str(p, true)) : [f.str(v, true)];
    case 'validationFraction':
      return f.range(v, 0, 1, { openHi: true });
    case 'vocabSize':
      return f.int(v, 1256, 2_097_151);
    case 'tokenizerSampleChars':
    case 'maxDocumentChars':
      return f.int(v, 1);
    case 'seqLength':
      return f.int(v, 2, 1 << 20);
    case 'microBatchSize':
    case 'gradAccumulation':
      return f.int(v, 1, 1 << 16);
    case 'steps':
      return f.int(v, 1);
    case 'optimizer':
      return f.oneOf(v, ['ademamix', 'adamw'] as const);
    case 'lr':
      return f.range(v, 0, 10, { openLo: true });
    case 'minLr':
      return f.range(v, 0, 10);
    case 'betas': {
      const b = f.numbers(v, 3);
      b.forEach((x, i) => { if (!(x >= 0 && x < 1)) f.fail(`β${i + 1} must be in [0, 1), got ${x}`); });
      return b as [number, number, number];
    }
    case 'alpha':
      return f.range(v, 0, 1e6);
    case 'alphaWarmup':
    case 'beta3Warmup':
      return f.nullable(v, (x) => f.int(x, 0));
    case 'weightDecay':
      return f.range(v, 0, 10);
    case 'eps':
      return f.range(v, 0, 1, { openLo: true });
    case 'warmupFraction':
    case 'cooldownFraction':
      return f.range(v, 0, 1, { openHi: true });
    case 'cooldownStyle':
      return f.oneOf(v, ['1-sqrt', 'linear', 'cosine', 'exponential'] as const);
    case 'clip':
      return f.range(v, 0, 1e9);
    case 'goldfish':
      return f.bool(v);
    case 'goldfishK':
      return f.int(v, 2, 1 << 30);
    case 'goldfishH':
      return f.int(v, 1, 1 << 20);
    case 'seed':
      return f.int(v, 0, 2 ** 32 - 1);
    case 'evalInterval':
    case 'checkpointInterval':
    case 'keepCheckpoints':
      return f.int(v, 0);
    case 'evalSamples':
    case 'sampleTokens':
      return f.int(v, 0, 1 << 20);
    case 'sampleTemperature':
      return f.range(v, 0, 100);
    case 'threads':
      return f.nullable(v, (x) => f.int(x, 1, 64));
    case 'progress':
      return f.oneOf(v, ['auto', 'bar', 'lines', 'off'] as const);
    default:
      return f.fail('unknown setting');
  }
}

/** Read a JSON config file (config keys, camelCase). Unknown keys are errors, to catch typos. */
export function readConfigFile(file: string): ConfigLayer {
  return readConfigLayer(file, configError);
}

/**
 * Merge the layers over {@link DEFAULT_CONFIG} and validate every value and the relations between
 * them. Returns the config and, per key, the source of its value.
 * @throws PretrainConfigError naming the key and the flag or file it came from
 */
export function resolveConfig(layers: readonly ConfigLayer[]): { config: PretrainConfig; sources: Record<ConfigKey, string> } {
  const { config, sources } = mergeConfigLayers(DEFAULT_CONFIG as PretrainConfig, layers, parseValue, configError);
  const fail = (key: ConfigKey, message: string): never => {
    throw configFailure(key, message, sources, configError);
  };
  if (config.minLr > config.lr) fail('minLr', `(${config.minLr}) must not exceed lr (${config.lr})`);
  if (config.warmupFraction + config.cooldownFraction > 1) fail('cooldownFraction', `warm-up (${config.warmupFraction}) plus cooldown (${config.cooldownFraction}) exceed the run`);
  return { config, sources };
}

/** Settings among {@link TRAINING_KEYS} whose values differ between two configs. */
export function changedTrainingKeys(a: PretrainConfig, b: PretrainConfig): ConfigKey[] {
  return TRAINING_KEYS.filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
}
