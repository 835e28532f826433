import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, changedKeys, flagName, readConfigLayer as readConfigFile } from '@apertus/trainer';
import { PRETRAIN_DEFAULTS, PRETRAIN_TRAINING_KEYS, resolvePretrainConfig } from './config';
import { buildModelConfig, buildPretrainSchedule } from './setup';

function fails(layers: Parameters<typeof resolvePretrainConfig>[0]): ConfigError {
  try {
    resolvePretrainConfig(layers);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('resolvePretrainConfig', () => {
  it('layers defaults < config file < flags and records where each value came from', () => {
    const { config, sources } = resolvePretrainConfig([
      { source: 'run.json', values: { steps: 50, lr: 0.01, seqLength: 64, goldfish: false } },
      { source: 'flags', values: { steps: '70', betas: '0.9,0.95,0.999', languages: 'eng, fra' } },
    ]);
    expect(config.steps).toBe(70);
    expect(config.lr).toBe(0.01);
    expect(config.seqLength).toBe(64);
    expect(config.goldfish).toBe(false);
    expect(config.betas).toEqual([0.9, 0.95, 0.999]);
    expect(config.languages).toEqual(['eng', 'fra']);
    expect(config.microBatchSize).toBe(PRETRAIN_DEFAULTS.microBatchSize);
    expect(sources.steps).toBe('flags');
    expect(sources.lr).toBe('run.json');
    expect(sources.microBatchSize).toBe('default');
  });

  it('names the flag or the file field of a bad value', () => {
    expect(fails([{ source: 'flags', values: { lr: 'fast' } }]).message).toBe('--lr: lr: expected a number, got "fast"');
    expect(fails([{ source: 'flags', values: { microBatchSize: '0' } }]).message).toMatch(/^--micro-batch-size: microBatchSize: expected an integer in \[1, /);
    expect(fails([{ source: 'run.json', values: { seqLength: 12.5 } }]).message).toMatch(/^run\.json: seqLength: expected an integer/);
    expect(fails([{ source: 'flags', values: { optimizer: 'sgd' } }]).message).toMatch(/expected one of ademamix, adamw/);
    expect(fails([{ source: 'flags', values: { validationFraction: '1' } }]).field).toBe('validationFraction');
    expect(fails([{ source: 'flags', values: { betas: '0.9,1' } }]).message).toMatch(/expected 3 numbers/);
    expect(fails([{ source: 'flags', values: { betas: '0.9,0.999,1' } }]).message).toMatch(/β3 must be in \[0, 1\)/);
    expect(fails([{ source: 'flags', values: { vocabSize: '300' } }]).message).toMatch(/vocabSize: expected an integer in \[1256/);
    expect(fails([{ source: 'run.json', values: { learningRate: 1 } }]).message).toMatch(/^run\.json: learningRate: unknown setting/);
    expect(fails([{ source: 'run.json', values: { model: { hidden_act: 'gelu' } } }]).message).toMatch(/unsupported architecture field "hidden_act"/);
  });

  it('checks relations between values', () => {
    expect(fails([{ source: 'flags', values: { lr: '1e-3', minLr: '1e-2' } }]).message).toMatch(/--min-lr: minLr: \(0\.01\) must not exceed lr \(0\.001\)/);
    expect(fails([{ source: 'flags', values: { warmupFraction: '0.6', cooldownFraction: '0.5' } }]).field).toBe('cooldownFraction');
  });

  it('maps config keys to flags', () => {
    expect(flagName('microBatchSize')).toBe('--micro-batch-size');
    expect(flagName('beta3Warmup')).toBe('--beta3-warmup');
    expect(flagName('goldfishK')).toBe('--goldfish-k');
  });

  it('reads config files and reports unreadable or invalid ones', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-cfg-'));
    try {
      const f = path.join(dir, 'run.json');
      fs.writeFileSync(f, JSON.stringify({ steps: 3 }));
      expect(resolvePretrainConfig([readConfigFile(f)]).config.steps).toBe(3);
      fs.writeFileSync(f, '{ steps: 3 }');
      expect(() => readConfigFile(f)).toThrow(/run\.json: \(file\): invalid JSON/);
      fs.writeFileSync(f, '[1]');
      expect(() => readConfigFile(f)).toThrow(/expected a JSON object/);
      expect(() => readConfigFile(path.join(dir, 'missing.json'))).toThrow(/cannot read config file/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lists the training settings that differ (for resume checks)', () => {
    const a = resolvePretrainConfig([]).config;
    const b = resolvePretrainConfig([{ source: 'flags', values: { lr: '0.5', out: 'elsewhere', progress: 'off', evalInterval: '3' } }]).config;
    expect(changedKeys(a, b, PRETRAIN_TRAINING_KEYS)).toEqual(['lr']);
  });
});

describe('run setup', () => {
  it('builds the architecture with the tokenizer vocabulary and checks the sequence length', () => {
    const cfg = resolvePretrainConfig([{ source: 'run.json', values: { model: { hidden_size: 32, num_hidden_layers: 2, intermediate_size: 64 } } }]).config;
    const c = buildModelConfig(cfg, 1500);
    expect([c.vocab_size, c.hidden_size, c.head_dim, c.num_hidden_layers, c.bos_token_id, c.eos_token_id, c.pad_token_id]).toEqual([1500, 32, 8, 2, 1, 2, 3]);
    const long = resolvePretrainConfig([{ source: 'flags', values: { seqLength: '4096' } }]).config;
    expect(() => buildModelConfig(long, 1500)).toThrow(/seqLength: 4096 exceeds the model's max_position_embeddings \(2048\)/);
    const bad = resolvePretrainConfig([{ source: 'run.json', values: { model: { num_key_value_heads: 3 } } }]).config;
    expect(() => buildModelConfig(bad, 1500)).toThrow(ConfigError);
  });

  it('WSD in samples: lr(0) = 0, linear warm-up, stable peak, 1-sqrt cooldown to minLr', () => {
    const cfg = resolvePretrainConfig([{ source: 'flags', values: { steps: '100', microBatchSize: '4', gradAccumulation: '2', lr: '1e-3', minLr: '1e-4', warmupFraction: '0.1', cooldownFraction: '0.2' } }]).config;
    const schedule = buildPretrainSchedule(cfg);
    const at = (step: number) => schedule(step * 8);
    expect(at(0)).toBe(0);
    expect(at(5)).toBeCloseTo(5e-4, 15);
    expect(at(10)).toBeCloseTo(1e-3, 15);
    expect(at(80)).toBeCloseTo(1e-3, 15);
    expect(at(85)).toBeCloseTo(1e-4 + (1 - Math.sqrt(0.25)) * 9e-4, 15);
    expect(at(100)).toBeCloseTo(1e-4, 15);
  });
});
