import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ConfigField, configFailure, flagName, mergeConfigLayers, readConfigLayer, type ConfigErrorFactory } from './config-layers';

class TestConfigError extends Error {
  constructor(readonly field: string, message: string, readonly source: string) {
    super(`${source}: ${field}: ${message}`);
  }
}
const error: ConfigErrorFactory = (field, message, source) => new TestConfigError(field, message, source);
const DEFAULTS = { microBatchSize: 8, lr: 1e-3, name: 'run' };
const parse = (key: keyof typeof DEFAULTS, v: unknown, source: string) => {
  const f = new ConfigField(key, source, error);
  return key === 'microBatchSize' ? f.int(v, 1, 1024) : key === 'lr' ? f.range(v, 0, 1, { openLo: true }) : f.str(v);
};

describe('layered configuration', () => {
  test('later layers win, flags parse from strings, sources are recorded', () => {
    const { config, sources } = mergeConfigLayers(DEFAULTS, [{ source: 'run.json', values: { lr: 0.01, name: 'a' } }, { source: 'flags', values: { microBatchSize: '4', lr: undefined } }], parse, error);
    expect(config).toEqual({ microBatchSize: 4, lr: 0.01, name: 'a' });
    expect(sources).toEqual({ microBatchSize: 'flags', lr: 'run.json', name: 'run.json' });
    expect(DEFAULTS.microBatchSize).toBe(8);
  });
  test('errors name the key and the flag or file it came from', () => {
    expect(flagName('microBatchSize')).toBe('--micro-batch-size');
    expect(() => mergeConfigLayers(DEFAULTS, [{ source: 'flags', values: { microBatchSize: '0' } }], parse, error)).toThrow('--micro-batch-size: microBatchSize: expected an integer in [1, 1024], got "0"');
    expect(() => mergeConfigLayers(DEFAULTS, [{ source: 'run.json', values: { lr: 0 } }], parse, error)).toThrow('run.json: lr: expected a number in (0, 1], got 0');
    expect(() => mergeConfigLayers(DEFAULTS, [{ source: 'run.json', values: { lrr: 1 } }], parse, error)).toThrow(/run.json: lrr: unknown setting \(known: microBatchSize, lr, name\)/);
    expect(configFailure('lr', 'too high', { lr: 'flags' }, error).message).toBe('--lr: lr: too high');
    const f = new ConfigField('x', 'flags', error);
    expect(f.bool('false')).toBe(false);
    expect(f.list('a, b,')).toEqual(['a', 'b']);
    expect(f.numbers('0.9,0.99', 2)).toEqual([0.9, 0.99]);
    expect(f.nullable('none', (v) => f.num(v))).toBeNull();
    expect(() => f.oneOf('c', ['a', 'b'] as const)).toThrow('--x: x: expected one of a, b, got "c"');
  });
  test('config files: read, bad JSON and non-objects are typed errors naming the file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfg-'));
    const file = path.join(dir, 'run.json');
    fs.writeFileSync(file, '{"lr": 0.5}');
    expect(readConfigLayer(file, error)).toEqual({ source: file, values: { lr: 0.5 } });
    fs.writeFileSync(file, '{oops');
    expect(() => readConfigLayer(file, error)).toThrow(TestConfigError);
    fs.writeFileSync(file, '[1]');
    expect(() => readConfigLayer(file, error)).toThrow(`${file}: (file): expected a JSON object`);
    expect(() => readConfigLayer(path.join(dir, 'missing.json'), error)).toThrow(/cannot read config file/);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
