import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { describe, expect, test } from 'vitest';
import { addConfigFlags } from './cli';
import { ConfigField, changedKeys, configFailure, field, flagName, mergeConfigLayers, readConfigLayer, type ConfigSchema } from './config';
import { ConfigError } from './errors';
import { BATCH_FIELDS } from './run-config';

interface TestConfig {
  microBatchSize: number;
  lr: number;
  name: string;
  goldfish: boolean;
  seed: number;
}
const DEFAULTS: TestConfig = { microBatchSize: 8, lr: 1e-3, name: 'run', goldfish: true, seed: 0 };
const SCHEMA: ConfigSchema<TestConfig> = {
  microBatchSize: field.int('rows per micro-batch', 1, 1024),
  lr: field.num('peak learning rate', 0, 1, { openLo: true }),
  name: field.str('run name', '<name>'),
  goldfish: field.bool('Goldfish loss'),
  seed: BATCH_FIELDS.seed,
};

describe('layered configuration', () => {
  test('later layers win, flags parse from strings, sources are recorded', () => {
    const { config, sources } = mergeConfigLayers(SCHEMA, DEFAULTS, [{ source: 'run.json', values: { lr: 0.01, name: 'a' } }, { source: 'flags', values: { microBatchSize: '4', lr: undefined, goldfish: false } }]);
    expect(config).toEqual({ microBatchSize: 4, lr: 0.01, name: 'a', goldfish: false, seed: 0 });
    expect(sources).toEqual({ microBatchSize: 'flags', lr: 'run.json', name: 'run.json', goldfish: 'flags', seed: 'default' });
    expect(DEFAULTS.microBatchSize).toBe(8);
  });
  test('errors are ConfigErrors naming the key and the flag or file it came from', () => {
    expect(flagName('microBatchSize')).toBe('--micro-batch-size');
    expect(() => mergeConfigLayers(SCHEMA, DEFAULTS, [{ source: 'flags', values: { microBatchSize: '0' } }])).toThrow('--micro-batch-size: microBatchSize: expected an integer in [1, 1024], got "0"');
    expect(() => mergeConfigLayers(SCHEMA, DEFAULTS, [{ source: 'run.json', values: { lr: 0 } }])).toThrow('run.json: lr: expected a number in (0, 1], got 0');
    expect(() => mergeConfigLayers(SCHEMA, DEFAULTS, [{ source: 'run.json', values: { lrr: 1 } }])).toThrow(/run.json: lrr: unknown setting \(known: microBatchSize, lr, name, goldfish, seed\)/);
    // One seed limit for every app: [0, 2^32 − 1].
    expect(mergeConfigLayers(SCHEMA, DEFAULTS, [{ source: 'flags', values: { seed: String(2 ** 32 - 1) } }]).config.seed).toBe(2 ** 32 - 1);
    expect(() => mergeConfigLayers(SCHEMA, DEFAULTS, [{ source: 'flags', values: { seed: String(2 ** 32) } }])).toThrow(ConfigError);
    expect(configFailure('lr', 'too high', { lr: 'flags' }).message).toBe('--lr: lr: too high');
    expect(changedKeys({ a: [1, 2], b: 1 }, { a: [1, 2], b: 2 }, ['a', 'b'])).toEqual(['b']);
    const f = new ConfigField('x', 'flags');
    expect(f.bool('false')).toBe(false);
    expect(f.list('a, b,')).toEqual(['a', 'b']);
    expect(f.numbers('0.9,0.99', 2)).toEqual([0.9, 0.99]);
    expect(f.nullable('none', (v) => f.num(v))).toBeNull();
    expect(() => f.oneOf('c', ['a', 'b'] as const)).toThrow('--x: x: expected one of a, b, got "c"');
    expect(() => f.date('2025-9-1')).toThrow('--x: x: expected a YYYY-MM-DD date, got "2025-9-1"');
  });
  test('config files: read, bad JSON and non-objects are typed errors naming the file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfg-'));
    const file = path.join(dir, 'run.json');
    fs.writeFileSync(file, '{"lr": 0.5}');
    expect(readConfigLayer(file)).toEqual({ source: file, values: { lr: 0.5 } });
    fs.writeFileSync(file, '{oops');
    expect(() => readConfigLayer(file)).toThrow(ConfigError);
    fs.writeFileSync(file, '[1]');
    expect(() => readConfigLayer(file)).toThrow(`${file}: (file): expected a JSON object`);
    expect(() => readConfigLayer(path.join(dir, 'missing.json'))).toThrow(/cannot read config file/);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  test('the schema generates the flags: values, switches, defaults in the help', () => {
    const cmd = new Command('t').exitOverride();
    const keys = addConfigFlags(cmd, SCHEMA, DEFAULTS);
    cmd.parse(['--micro-batch-size', '4', '--no-goldfish', '--name', 'x'], { from: 'user' });
    const opts = cmd.opts();
    const values = Object.fromEntries([...keys].filter(([attr]) => opts[attr] !== undefined).map(([attr, key]) => [key, opts[attr]]));
    expect(values).toEqual({ microBatchSize: '4', goldfish: false, name: 'x' });
    expect(mergeConfigLayers(SCHEMA, DEFAULTS, [{ source: 'flags', values }]).config).toEqual({ ...DEFAULTS, microBatchSize: 4, goldfish: false, name: 'x' });
    expect(cmd.helpInformation()).toMatch(/--lr <x> +peak learning rate \(default 0\.001\)/);
  });
});
