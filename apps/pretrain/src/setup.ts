// Model architecture, optimizer and learning-rate schedule of a run, from its configuration.

import fs from 'node:fs';
import { AdamW, AdEMAMix, LrScheduler, wsdSchedule } from '@apertus/ademamix';
import { ModelError, parseConfig, presetConfig, validateConfig, type ApertusConfig } from '@apertus/model';
import type { Tensor } from '@apertus/tensor';
import type { PretrainConfig } from './config';
import { PretrainConfigError } from './errors';

/**
 * The architecture: the preset (or `modelConfig` file), with the config's `model` overrides, the
 * tokenizer's vocabulary size and the Apertus special ids (`<s>`=1, `</s>`=2, `<pad>`=3).
 * @throws PretrainConfigError naming `modelConfig`, `model` or `seqLength`
 */
export function buildModelConfig(cfg: PretrainConfig, vocabSize: number): ApertusConfig {
  let base: ApertusConfig;
  try {
    if (cfg.modelConfig !== null) {
      let json: unknown;
      try {
        json = JSON.parse(fs.readFileSync(cfg.modelConfig, 'utf8'));
      } catch (e) {
        throw new PretrainConfigError('modelConfig', `cannot read ${cfg.modelConfig} (${(e as Error).message})`);
      }
      base = parseConfig(json, cfg.modelConfig);
    } else {
      base = presetConfig(cfg.preset);
    }
  } catch (e) {
    if (e instanceof ModelError) throw new PretrainConfigError('modelConfig', e.message);
    throw e;
  }
  let c: ApertusConfig;
  try {
    const merged = { ...base, ...cfg.model, vocab_size: vocabSize, bos_token_id: 1, eos_token_id: 2, pad_token_id: 3 };
    if (cfg.model.hidden_size !== undefined && cfg.model.head_dim === undefined) merged.head_dim = merged.hidden_size / merged.num_attention_heads;
    for (const k of ['hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'head_dim', 'max_position_embeddings'] as const) {
      if (!Number.isInteger(merged[k])) throw new PretrainConfigError('model', `${k} must be an integer, got ${merged[k]}`);
    }
    if (merged.rope_scaling && merged.rope_scaling.original_max_position_embeddings > merged.max_position_embeddings) {
      merged.rope_scaling = { ...merged.rope_scaling, original_max_position_embeddings: merged.max_position_embeddings };
    }
    c = validateConfig(merged);
  } catch (e) {
    if (e instanceof ModelError) throw new PretrainConfigError('model', e.message);
    throw e;
  }
  if (c.max_position_embeddings < cfg.seqLength) {
    throw new PretrainConfigError('seqLength', `${cfg.seqLength} exceeds the model's max_position_embeddings (${c.max_position_embeddings})`);
  }
  return c;
}

/** The optimizer over `params`: AdEMAMix (Apertus) or AdamW, Megatron's weight-decay groups. */
export function buildOptimizer(cfg: PretrainConfig, params: Iterable<readonly [string, Tensor]>): AdEMAMix | AdamW {
  const [b1, b2, b3] = cfg.betas;
  if (cfg.optimizer === 'adamw') return new AdamW(params, { lr: cfg.lr, betas: [b1, b2], eps: cfg.eps, weightDecay: cfg.weightDecay });
  const warm = (v: number | null) => (v === null ? cfg.steps : v === 0 ? null : v);
  return new AdEMAMix(params, {
    lr: cfg.lr,
    betas: [b1, b2, b3],
    alpha: cfg.alpha,
    alphaWarmup: warm(cfg.alphaWarmup),
    beta3Warmup: warm(cfg.beta3Warmup),
    eps: cfg.eps,
    weightDecay: cfg.weightDecay,
  });
}

/** Samples per optimizer step. */
export function globalBatchSize(cfg: PretrainConfig): number {
  return cfg.microBatchSize * cfg.gradAccumulation;
}

/**
 * Warmup-Stable-Decay counted in samples as Megatron does (§4.1): linear warm-up from 0 over
 * `warmupFraction` of the run, stable at `lr`, then the cooldown over the last `cooldownFraction`
 * down to `minLr`. The scheduler starts at `count` (0, or the checkpoint's count).
 */
export function buildScheduler(cfg: PretrainConfig, count = 0): LrScheduler {
  const gbs = globalBatchSize(cfg);
  const total = cfg.steps * gbs;
  const schedule = wsdSchedule({
    maxLr: cfg.lr,
    minLr: cfg.minLr,
    warmup: Math.round(cfg.warmupFraction * cfg.steps) * gbs,
    total,
    cooldown: Math.round(cfg.cooldownFraction * cfg.steps) * gbs,
    style: cfg.cooldownStyle,
  });
  return new LrScheduler(schedule, count);
}
