// Configuration of an SFT run: defaults < (checkpoint's config when resuming) < config file
// < command-line flags. Every value is validated here, with errors naming the flag or file field.

import { ConfigField, mergeConfigLayers, readConfigLayer, type ConfigErrorFactory, type ConfigLayer } from '@apertus/trainer';
import type { ProgressMode } from '@apertus/trainer';
import { parseLoraConfig, type LoraConfig } from '@apertus/model';
import { SftConfigError } from './errors';

/**
 * UDHR declarations of the bundled translation task: German, Swiss German, Italian and Romansh — the
 * held-out direction's closest neighbours among apertus-pretrain's default languages. Few languages
 * mean few pairs (212 conversations), so a few-minute run sees every Romansh target several times;
 * German and Romansh are each paired with the other two, never with each other.
 */
export const DEFAULT_SFT_LANGUAGES: readonly string[] = Object.freeze(['deu_1996', 'gsw1', 'ita', 'roh_rumgr']);

/** Every setting of an SFT run (config-file keys; flags are the kebab-case forms). */
export interface SftConfig {
  /** Output directory: data/, checkpoints/, metrics.jsonl, loss.html, model/. */
  out: string;
  /** The base model: a Hugging Face model directory, a checkpoints folder with `latest`, or a run directory (`model/` or `checkpoints/`). */
  model: string;
  /** `udhr` (the bundled translation task) or a `.jsonl` file of conversations (`{"messages": [...]}`). */
  data: string;
  /** Validation conversations (`.jsonl`) for the validation loss; null = the held-out UDHR direction with its references. */
  validation: string | null;
  /** UDHR declarations the translation pairs are drawn from (file codes, ISO 639-3 or BCP 47 tags). */
  languages: string[];
  /** Translation examples drawn (upper bound). */
  maxExamples: number;
  /** Longest UDHR article (characters, either side) used for training and evaluation. */
  maxChars: number;
  /** Longest conversation in tokens; longer ones are truncated on the right and counted. */
  maxLength: number;
  /** Date written in the default system prompt (`YYYY-MM-DD`), fixed for reproducible data. */
  date: string;
  /** Conversations per micro-batch. */
  microBatchSize: number;
  /** Micro-batches per optimizer step (global batch = microBatchSize × gradAccumulation). */
  gradAccumulation: number;
  /** Passes over the data when `steps` is null. */
  epochs: number;
  /** Optimizer steps; null = epochs × ⌈examples / global batch⌉. */
  steps: number | null;
  /** `ademamix` (Apertus SFT) or `adamw`. */
  optimizer: 'ademamix' | 'adamw';
  /** Peak learning rate (linear warm-up, then linear decay to 0). */
  lr: number;
  /** Warm-up as a fraction of the steps (Hugging Face `warmup_ratio`; Apertus 0.03). */
  warmupRatio: number;
  /** β1, β2, β3 (β3 is AdEMAMix's slow EMA; ignored by AdamW). */
  betas: [number, number, number];
  /** AdEMAMix α (Apertus SFT: 5, no α/β3 warm-up). */
  alpha: number;
  /** Decoupled weight decay (Apertus SFT: 0). */
  weightDecay: number;
  /** Optimizer ε. */
  eps: number;
  /** Global gradient-norm clipping threshold (Apertus SFT: 1); 0 disables clipping. */
  clip: number;
  /** Seed of the task's pair sampler and of the data order. */
  seed: number;
  /** Validation loss every this many steps; 0 = at the start and the end only. */
  evalInterval: number;
  /** Greedy translations of the held-out direction, scored with chrF/BLEU, at the start and the end. */
  evalTranslation: boolean;
  /** Most tokens generated per held-out translation. */
  evalMaxTokens: number;
  /** Save a checkpoint every this many steps (and at the end); 0 = only at the end. */
  checkpointInterval: number;
  /** Checkpoints kept on disk (0 = all). */
  keepCheckpoints: number;
  /** Weight dtype of the final `model/` directory (f32 keeps small updates exactly; bf16 as released checkpoints). */
  saveDtype: 'f32' | 'bf16';
  /** GEMM threads; null = all cores. */
  threads: number | null;
  /** Progress display. */
  progress: ProgressMode;
  /**
   * LoRA instead of full fine-tuning, with PEFT's field names (`r`, `lora_alpha`, `lora_dropout`,
   * `target_modules`, `use_rslora`): the base stays frozen and the run trains and saves an adapter.
   * null = full fine-tuning.
   */
  lora: LoraConfig | null;
}

/** The defaults: the README's main run (UDHR translation task on the tiny pretraining run, a few minutes on 2 cores). */
export const DEFAULT_CONFIG: Readonly<SftConfig> = Object.freeze({
  out: 'runs/sft-udhr',
  model: 'runs/udhr-tiny',
  data: 'udhr',
  validation: null,
  languages: [...DEFAULT_SFT_LANGUAGES],
  maxExamples: 2000,
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
  betas: [0.9, 0.999, 0.9999],
  alpha: 5,
  weightDecay: 0,
  eps: 1e-8,
  clip: 1,
  seed: 0,
  evalInterval: 25,
  evalTranslation: true,
  evalMaxTokens: 160,
  checkpointInterval: 25,
  keepCheckpoints: 3,
  saveDtype: 'f32',
  threads: null,
  progress: 'auto',
  lora: null,
} satisfies SftConfig);

/** Keys of {@link SftConfig}. */
export type ConfigKey = keyof SftConfig;

/**
 * Settings that change the numbers a run computes. A resumed run must keep them; the others
 * (output, display, evaluation and checkpoint cadence, threads) may change.
 */
export const TRAINING_KEYS: readonly ConfigKey[] = Object.freeze([
  'model', 'data', 'languages', 'maxExamples', 'maxChars', 'maxLength', 'date', 'microBatchSize', 'gradAccumulation', 'epochs', 'steps',
  'optimizer', 'lr', 'warmupRatio', 'betas', 'alpha', 'weightDecay', 'eps', 'clip', 'seed', 'lora',
] satisfies ConfigKey[]);




export { flagName, type ConfigLayer, type RawConfig } from '@apertus/trainer';

const configError: ConfigErrorFactory = (field, message, source) => new SftConfigError(field, message, source);

/** Validate one raw value for `key` (the value came from `source`). */
function parseValue(key: ConfigKey, v: unknown, source: string): SftConfig[ConfigKey] {
  const f = new ConfigField(key, source, configError);
  switch (key) {
    case 'out':
    case 'model':
    case 'data':
      return f.str(v);
    case 'validation':
      return f.nullable(v, (x) => f.str(x));
    case 'date':
      if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(v)) return f.fail(`expected a YYYY-MM-DD date, got ${JSON.stringify(v)}`);
      return v;
    case 'languages': {
      const l = f.list(v);
      if (l.length < 2) f.fail('give at least two languages');
      return l;
    }
    case 'maxExamples':
      return f.int(v, 1, 10_000_000);
    case 'maxChars':
      return f.int(v, 1, 1_000_000);
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
      return f.oneOf(v, ['ademamix', 'adamw'] as const);
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
    case 'seed':
      return f.int(v, 0, 2 ** 32 - 1);
    case 'evalInterval':
    case 'checkpointInterval':
    case 'keepCheckpoints':
      return f.int(v, 0);
    case 'evalTranslation':
      return f.bool(v);
    case 'evalMaxTokens':
      return f.int(v, 1, 1 << 16);
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
 * Merge the layers over {@link DEFAULT_CONFIG} and validate every value. Returns the config and,
 * per key, the source of its value.
 * @throws SftConfigError naming the key and the flag or file it came from
 */
export function resolveConfig(layers: readonly ConfigLayer[]): { config: SftConfig; sources: Record<ConfigKey, string> } {
  return mergeConfigLayers(DEFAULT_CONFIG as SftConfig, layers, parseValue, configError);
}

/** Settings among {@link TRAINING_KEYS} whose values differ between two configs. */
export function changedTrainingKeys(a: SftConfig, b: SftConfig): ConfigKey[] {
  return TRAINING_KEYS.filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
}
