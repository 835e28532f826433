// Model architecture and learning-rate schedule of a pretraining run, from its configuration.

import fs from 'node:fs';
import { wsdSchedule, type LrSchedule } from '@apertus/ademamix';
import { ModelError, parseConfig, presetConfig, validateConfig, type ApertusConfig } from '@apertus/model';
import { ConfigError, globalBatchSize } from '@apertus/trainer';
import type { PretrainConfig } from './config';

/**
 * The architecture: the preset (or `modelConfig` file), with the config's `model` overrides, the
 * tokenizer's vocabulary size and the Apertus special ids (`<s>`=1, `</s>`=2, `<pad>`=3).
 * @throws ConfigError naming `modelConfig`, `model` or `seqLength`
 */
export function buildModelConfig(cfg: PretrainConfig, vocabSize: number): ApertusConfig {
  let base: ApertusConfig;
  try {
    if (cfg.modelConfig !== null) {
      let json: unknown;
      try {
        json = JSON.parse(fs.readFileSync(cfg.modelConfig, 'utf8'));
      } catch (e) {
        throw new ConfigError('modelConfig', `cannot read ${cfg.modelConfig} (${(e as Error).message})`);
      }
      base = parseConfig(json, cfg.modelConfig);
    } else {
      base = presetConfig(cfg.preset);
    }
  } catch (e) {
    if (e instanceof ModelError) throw new ConfigError('modelConfig', e.message);
    throw e;
  }
  let c: ApertusConfig;
  try {
    const merged = { ...base, ...cfg.model, vocab_size: vocabSize, bos_token_id: 1, eos_token_id: 2, pad_token_id: 3 };
    if (cfg.model.hidden_size !== undefined && cfg.model.head_dim === undefined) merged.head_dim = merged.hidden_size / merged.num_attention_heads;
    for (const k of ['hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'head_dim', 'max_position_embeddings'] as const) {
      if (!Number.isInteger(merged[k])) throw new ConfigError('model', `${k} must be an integer, got ${merged[k]}`);
    }
    if (merged.rope_scaling && merged.rope_scaling.original_max_position_embeddings > merged.max_position_embeddings) {
      merged.rope_scaling = { ...merged.rope_scaling, original_max_position_embeddings: merged.max_position_embeddings };
    }
    c = validateConfig(merged);
  } catch (e) {
    if (e instanceof ModelError) throw new ConfigError('model', e.message);
    throw e;
  }
  if (c.max_position_embeddings < cfg.seqLength) {
    throw new ConfigError('seqLength', `${cfg.seqLength} exceeds the model's max_position_embeddings (${c.max_position_embeddings})`);
  }
  return c;
}

/**
 * Warmup-Stable-Decay counted in samples as Megatron does (§4.1): linear warm-up from 0 over
 * `warmupFraction` of the run, stable at `lr`, then the cooldown over the last `cooldownFraction`
 * down to `minLr`.
 */
export function buildPretrainSchedule(cfg: PretrainConfig): LrSchedule {
  const gbs = globalBatchSize(cfg);
  const total = cfg.steps * gbs;
  return wsdSchedule({
    maxLr: cfg.lr,
    minLr: cfg.minLr,
    warmup: Math.round(cfg.warmupFraction * cfg.steps) * gbs,
    total,
    cooldown: Math.round(cfg.cooldownFraction * cfg.steps) * gbs,
    style: cfg.cooldownStyle,
  });
}
