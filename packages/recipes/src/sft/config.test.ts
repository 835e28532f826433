// Configuration layering and validation: later layers win, every bad value is reported with the
// flag or file it came from, and only training settings block a resume.

import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, changedKeys, flagName, readConfigLayer as readConfigFile } from '@apertus/trainer';
import { tempDir } from '@apertus/trainer/testing';
import { SFT_DEFAULTS, SFT_TRAINING_KEYS, resolveSftConfig } from './config';

describe('SFT configuration', () => {
  it('defaults follow the Apertus SFT recipe: AdEMAMix α=5, β3=0.9999, no weight decay, clip 1, warm-up ratio 0.03', () => {
    expect(SFT_DEFAULTS).toMatchObject({ optimizer: 'ademamix', alpha: 5, betas: [0.9, 0.999, 0.9999], weightDecay: 0, clip: 1, warmupRatio: 0.03 });
  });

  it('merges layers in order and parses flag strings', () => {
    const { config, sources } = resolveSftConfig([
      { source: 'run.json', values: { lr: 0.002, steps: 30, languages: ['deu_1996', 'ita'] } },
      { source: 'flags', values: { lr: '5e-4', betas: '0.8,0.95,0.999', steps: 'none', evalTranslation: 'false' } },
    ]);
    expect(config.lr).toBe(5e-4);
    expect(config.betas).toEqual([0.8, 0.95, 0.999]);
    expect(config.steps).toBeNull();
    expect(config.evalTranslation).toBe(false);
    expect(config.languages).toEqual(['deu_1996', 'ita']);
    expect(sources.lr).toBe('flags');
    expect(sources.languages).toBe('run.json');
    expect(sources.out).toBe('default');
  });

  it('names the flag or the file of a bad value', () => {
    const bad = (values: Record<string, unknown>, source = 'flags') => () => resolveSftConfig([{ source, values }]);
    expect(bad({ microBatchSize: '0' })).toThrow('--micro-batch-size: microBatchSize: expected an integer in [1, 65536], got "0"');
    expect(bad({ betas: '0.9,1.0,0.9' })).toThrow('β2 must be in [0, 1), got 1');
    expect(bad({ optimizer: 'sgd' }, 'run.json')).toThrow('run.json: optimizer: expected one of ademamix, adamw, got "sgd"');
    expect(bad({ languages: 'deu_1996' })).toThrow('give at least two languages');
    expect(bad({ warmupRatio: 1.5 })).toThrow(ConfigError);
    expect(bad({ lerningRate: 1 }, 'run.json')).toThrow(/run\.json: lerningRate: unknown setting/);
    expect(flagName('checkpointInterval')).toBe('--checkpoint-interval');
  });

  it('reads JSON config files and reports unreadable or malformed ones', () => {
    const dir = tempDir('apertus-sft-config-');
    const good = path.join(dir, 'good.json');
    fs.writeFileSync(good, '{"steps": 7}');
    expect(resolveSftConfig([readConfigFile(good)]).config.steps).toBe(7);
    const broken = path.join(dir, 'broken.json');
    fs.writeFileSync(broken, '{"steps": ');
    expect(() => readConfigFile(broken)).toThrow(/broken\.json: \(file\): invalid JSON/);
    expect(() => readConfigFile(path.join(dir, 'none.json'))).toThrow(/none\.json: \(file\): cannot read config file/);
    fs.writeFileSync(broken, '[1]');
    expect(() => readConfigFile(broken)).toThrow(/expected a JSON object/);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('only training settings count as changes for a resume', () => {
    const a = resolveSftConfig([]).config;
    const b = resolveSftConfig([{ source: 'flags', values: { out: 'elsewhere', evalInterval: 3, threads: 2, progress: 'off', lr: 0.5 } }]).config;
    expect(changedKeys(a, b, SFT_TRAINING_KEYS)).toEqual(['lr']);
  });
});
