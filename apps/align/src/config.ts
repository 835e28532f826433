// Configuration of an alignment run: defaults < (checkpoint's config when resuming) < config file
// < command-line flags. Every value is validated here, with errors naming the flag or file field.

import { ConfigField, configFailure, mergeConfigLayers, readConfigLayer, type ConfigErrorFactory, type ConfigLayer } from '@apertus/trainer';
import type { ProgressMode } from '@apertus/trainer';
import { parseLoraConfig, type LoraConfig } from '@apertus/model';
import { AlignConfigError } from './errors';

/** UDHR declarations the alignment prompts are drawn from (the SFT app's default task languages). */
export const DEFAULT_ALIGN_LANGUAGES: readonly string[] = Object.freeze(['deu_1996', 'gsw1', 'ita', 'roh_rumgr']);

/** Every setting of an alignment run (config-file keys; flags are the kebab-case forms). */
export interface AlignConfig {
  /** Output directory: data/, checkpoints/, metrics.jsonl, loss.html, model/. */
  out: string;
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
  /** UDHR declarations the prompts are drawn from. */
  languages: string[];
  /** Prompts used (the first ones of the task, or of the file). */
  numPrompts: number;
  /** Longest UDHR article (characters) used for prompts and the held-out evaluation. */
  maxChars: number;
  /** Seed of the prompt sampler, the completions, the pair selection and the data order. */
  seed: number;
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
  /** Longest prompt + completion in tokens (truncated on the right). */
  maxLength: number;
  /** Date written in the default system prompt (`YYYY-MM-DD`). */
  date: string;
  /** Pairs per micro-batch. */
  microBatchSize: number;
  /** Micro-batches per optimizer step. */
  gradAccumulation: number;
  /** Passes over the pairs when `steps` is null. */
  epochs: number;
  /** Optimizer steps; null = epochs × ⌈pairs / global batch⌉. */
  steps: number | null;
  /** `adamw` or `ademamix` (both swept for Apertus). */
  optimizer: 'adamw' | 'ademamix';
  /** Peak learning rate (linear warm-up, then linear decay to 0). */
  lr: number;
  /** Warm-up as a fraction of the steps (Apertus 0.1). */
  warmupRatio: number;
  /** β1, β2, β3. */
  betas: [number, number, number];
  /** AdEMAMix α. */
  alpha: number;
  /** Decoupled weight decay (Apertus 0). */
  weightDecay: number;
  /** Optimizer ε. */
  eps: number;
  /** Global gradient-norm clipping (Apertus `max_grad_norm` 20); 0 = off. */
  clip: number;
  /** Validation loss on the held-out references every this many steps; 0 = start and end only. */
  evalInterval: number;
  /** Greedy held-out German → Romansh translations (chrF/BLEU) at the start and the end. */
  evalTranslation: boolean;
  /** Most tokens per held-out translation. */
  evalMaxTokens: number;
  /** Save a checkpoint every this many steps (and at the end); 0 = only at the end. */
  checkpointInterval: number;
  /** Checkpoints kept (0 = all). */
  keepCheckpoints: number;
  /** Weight dtype of the final `model/`. */
  saveDtype: 'f32' | 'bf16';
  /** GEMM threads; null = all cores. */
  threads: number | null;
  /** Progress display. */
  progress: ProgressMode;
  /**
   * LoRA on the policy, with PEFT's field names (`r`, `lora_alpha`, `lora_dropout`,
   * `target_modules`, `use_rslora`): the reference is the base with the adapter switched off, so
   * the weights are held once. null = full fine-tuning.
   */
  lora: LoraConfig | null;
}

/** The defaults: QRPO on the bundled translation prompts with the chrF reward, a few minutes on 2 cores. */
export const DEFAULT_CONFIG: Readonly<AlignConfig> = Object.freeze({
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
  betas: [0.9, 0.999, 0.9999],
  alpha: 5,
  weightDecay: 0,
  eps: 1e-8,
  clip: 20,
  evalInterval: 0,
  evalTranslation: true,
  evalMaxTokens: 160,
  checkpointInterval: 4,
  keepCheckpoints: 3,
  saveDtype: 'f32',
  threads: null,
  progress: 'auto',
  lora: null,
} satisfies AlignConfig);

/** Keys of {@link AlignConfig}. */
export type ConfigKey = keyof AlignConfig;

/** Settings that decide the preference data (reference completions, rewards, pairs, reference log-probs). */
export const DATA_KEYS: readonly ConfigKey[] = Object.freeze([
  'model', 'prompts', 'languages', 'numPrompts', 'maxChars', 'seed', 'numReferences', 'sampleTemperature', 'sampleMaxTokens', 'sampleBatchSize',
  'includeOffline', 'reward', 'numPairs', 'maxLength', 'date',
] satisfies ConfigKey[]);

/**
 * Settings that change the numbers a run computes. A resumed run must keep them; the others
 * (output, display, evaluation and checkpoint cadence, threads) may change.
 */
export const TRAINING_KEYS: readonly ConfigKey[] = Object.freeze([
  ...DATA_KEYS,
  'loss', 'qrpoVariant', 'beta', 'transform', 'lossType', 'normalizeByLength', 'dpoLengthNormalized', 'microBatchSize', 'gradAccumulation', 'epochs', 'steps',
  'optimizer', 'lr', 'warmupRatio', 'betas', 'alpha', 'weightDecay', 'eps', 'clip', 'lora',
] satisfies ConfigKey[]);




export { flagName, type ConfigLayer, type RawConfig } from '@apertus/trainer';

const configError: ConfigErrorFactory = (field, message, source) => new AlignConfigError(field, message, source);

/** Validate one raw value for `key` (the value came from `source`). */
function parseValue(key: ConfigKey, v: unknown, source: string): AlignConfig[ConfigKey] {
  const f = new ConfigField(key, source, configError);
  switch (key) {
    case 'out':
    case 'model':
    case 'prompts':
      return f.str(v);
    case 'reward': {
      const r = f.str(v);
      if (!(r === 'chrf' || /^https?:\/\/./.test(r) || /^model:./.test(r) || /^js:./.test(r))) f.fail(`expected chrf, an http(s):// URL, model:<dir> or js:<module file>, got ${JSON.stringify(v)}`);
      return r;
    }
    case 'loss':
      return f.oneOf(v, ['qrpo', 'dpo'] as const);
    case 'qrpoVariant':
      return f.oneOf(v, ['apertus', 'claire'] as const);
    case 'beta':
      return f.nullable(v, (x) => f.range(x, 0, 1e6, { openLo: true }));
    case 'transform':
      return f.oneOf(v, ['identity', 'log', 'normal-icdf'] as const);
    case 'lossType':
      return f.oneOf(v, ['mse', 'mae'] as const);
    case 'normalizeByLength':
    case 'dpoLengthNormalized':
    case 'includeOffline':
    case 'evalTranslation':
      return f.bool(v);
    case 'date':
      if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(v)) return f.fail(`expected a YYYY-MM-DD date, got ${JSON.stringify(v)}`);
      return v;
    case 'languages': {
      const l = f.list(v);
      if (l.length < 2) f.fail('give at least two languages');
      return l;
    }
    case 'numPrompts':
      return f.int(v, 1, 10_000_000);
    case 'maxChars':
      return f.int(v, 1, 1_000_000);
    case 'seed':
      return f.int(v, 0, 2 ** 31 - 1);
    case 'numReferences':
      return f.int(v, 2, 1024);
    case 'sampleTemperature':
      return f.range(v, 0, 100, { openLo: true });
    case 'sampleMaxTokens':
    case 'evalMaxTokens':
      return f.int(v, 1, 1 << 16);
    case 'sampleBatchSize':
      return f.int(v, 1, 4096);
    case 'numPairs':
      return f.int(v, 1, 64);
    case 'maxLength':
      return f.int(v, 2, 1 << 20);
    case 'microBatchSize':
    case 'gradAccumulation':
      return f.int(v, 1, 1 << 16);
    case 'epochs':
      return f.int(v, 1, 1 << 20);
    case 'steps':
      return f.nullable(v, (x) => f.int(x, 1));
    case 'optimizer':
      return f.oneOf(v, ['adamw', 'ademamix'] as const);
    case 'lr':
      return f.range(v, 0, 10, { openLo: true });
    case 'warmupRatio':
      return f.range(v, 0, 1);
    case 'betas': {
      const b = f.numbers(v, 3);
      b.forEach((x, i) => {
        if (!(x >= 0 && x < 1)) f.fail(`β${i + 1} must be in [0, 1), got ${x}`);
      });
      return b as [number, number, number];
    }
    case 'alpha':
      return f.range(v, 0, 1e6);
    case 'weightDecay':
      return f.range(v, 0, 10);
    case 'eps':
      return f.range(v, 0, 1, { openLo: true });
    case 'clip':
      return f.range(v, 0, 1e9);
    case 'evalInterval':
    case 'checkpointInterval':
    case 'keepCheckpoints':
      return f.int(v, 0);
    case 'saveDtype':
      return f.oneOf(v, ['f32', 'bf16'] as const);
    case 'threads':
      return f.nullable(v, (x) => f.int(x, 1, 64));
    case 'progress':
      return f.oneOf(v, ['auto', 'bar', 'lines', 'off'] as const);
    case 'lora': // a PEFT LoraConfig object (a JSON string from the flag), or null / "none"
      return f.nullable(v, (x) => {
        try { return parseLoraConfig(typeof x === 'string' ? JSON.parse(x) : x); } catch (e) { return f.fail((e as Error).message); }
      });
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
 * @throws AlignConfigError naming the key and the flag or file it came from
 */
export function resolveConfig(layers: readonly ConfigLayer[]): { config: AlignConfig; sources: Record<ConfigKey, string> } {
  const { config, sources } = mergeConfigLayers(DEFAULT_CONFIG as AlignConfig, layers, parseValue, configError);
  const fail = (key: ConfigKey, message: string): never => {
    throw configFailure(key, message, sources, configError);
  };
  if (config.loss === 'qrpo' && config.qrpoVariant === 'apertus' && config.transform !== 'identity') fail('transform', `the Apertus QRPO form uses the identity transform; use --qrpo-variant claire for "${config.transform}"`);
  if (!config.includeOffline && config.numReferences < 2 * config.numPairs) fail('numPairs', `${config.numPairs} pair(s) per prompt need ${2 * config.numPairs} candidates, but only ${config.numReferences} reference completions are sampled`);
  return { config, sources };
}

/** β actually used: `beta`, or the default of the objective (5 for the Apertus length-normalised forms, else 0.1). */
export function effectiveBeta(cfg: AlignConfig): number {
  if (cfg.beta !== null) return cfg.beta;
  const apertus = cfg.loss === 'qrpo' ? cfg.qrpoVariant === 'apertus' : cfg.dpoLengthNormalized;
  return apertus ? 5 : 0.1;
}

/** Settings among `keys` whose values differ between two configs. */
export function changedKeys(a: AlignConfig, b: AlignConfig, keys: readonly ConfigKey[] = TRAINING_KEYS): ConfigKey[] {
  return keys.filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
}
