// Run configuration: one schema per app (a field spec per key: validator, flag help, choices),
// resolved from layers — defaults < (a checkpoint's settings) < config file < flags. Every value is
// validated by its field's parser, and errors name the key and where its value came from (the
// flag, the file, or the checkpoint). The same schema generates the app's command-line flags.

import fs from 'node:fs';
import { ConfigError } from './errors';

/** Raw values from one layer (a config file, parsed flags): unvalidated. */
export type RawConfig = { readonly [key: string]: unknown };

/** One source of values, in increasing precedence. */
export interface ConfigLayer {
  /** `default`, a checkpoint's `trainer_state.json`, a file path, or `flags`. */
  readonly source: string;
  /** Its values (config keys). */
  readonly values: RawConfig;
}

/** Flag name of a config key: `microBatchSize` → `--micro-batch-size`. */
export function flagName(key: string): string {
  return `--${key.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`)}`;
}

/** Where a value came from, as an error shows it: the flag for `flags`, else the source itself. */
function origin(key: string, source: string): string {
  return source === 'flags' ? flagName(key) : source;
}

/** Validators for one raw value of `key` from `source`; each throws {@link ConfigError}. */
export class ConfigField {
  /**
   * @param key - the config key being parsed
   * @param source - the layer the value came from
   */
  constructor(readonly key: string, readonly source: string) {}

  /** Throw the config error for this key. */
  fail(message: string): never {
    throw new ConfigError(this.key, message, origin(this.key, this.source));
  }

  /** A finite number (numeric strings from flags accepted). */
  num(v: unknown): number {
    const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isFinite(n)) this.fail(`expected a number, got ${JSON.stringify(v)}`);
    return n;
  }

  /** An integer in [min, max]. */
  int(v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
    const n = this.num(v);
    if (!Number.isInteger(n) || n < min || n > max) this.fail(`expected an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
    return n;
  }

  /** A number in [lo, hi] (either end optionally open). */
  range(v: unknown, lo: number, hi: number, { openLo = false, openHi = false } = {}): number {
    const n = this.num(v);
    if (n < lo || n > hi || (openLo && n === lo) || (openHi && n === hi)) this.fail(`expected a number in ${openLo ? '(' : '['}${lo}, ${hi}${openHi ? ')' : ']'}, got ${JSON.stringify(v)}`);
    return n;
  }

  /** A string, non-empty unless `allowEmpty`. */
  str(v: unknown, allowEmpty = false): string {
    if (typeof v !== 'string' || (!allowEmpty && v.trim() === '')) this.fail(`expected a ${allowEmpty ? '' : 'non-empty '}string, got ${JSON.stringify(v)}`);
    return v;
  }

  /** true/false (or their strings). */
  bool(v: unknown): boolean {
    if (v === true || v === 'true') return true;
    if (v === false || v === 'false') return false;
    return this.fail(`expected true or false, got ${JSON.stringify(v)}`);
  }

  /** One of `options`. */
  oneOf<T extends string>(v: unknown, options: readonly T[]): T {
    if (typeof v !== 'string' || !options.includes(v as T)) this.fail(`expected one of ${options.join(', ')}, got ${JSON.stringify(v)}`);
    return v as T;
  }

  /** A list of strings (an array, or a comma-separated string). */
  list(v: unknown): string[] {
    const arr = typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter((s) => s !== '') : v;
    if (!Array.isArray(arr) || arr.some((s) => typeof s !== 'string')) this.fail(`expected a list of strings, got ${JSON.stringify(v)}`);
    return [...(arr as string[])];
  }

  /** Exactly `n` numbers (an array, or a comma-separated string). */
  numbers(v: unknown, n: number): number[] {
    const arr = typeof v === 'string' ? v.split(',') : v;
    if (!Array.isArray(arr) || arr.length !== n) this.fail(`expected ${n} numbers, got ${JSON.stringify(v)}`);
    return (arr as unknown[]).map((x) => this.num(x));
  }

  /** null (or `null`/`none`), else `f(v)`. */
  nullable<T>(v: unknown, f: (v: unknown) => T): T | null {
    return v === null || v === 'null' || v === 'none' ? null : f(v);
  }

  /** A `YYYY-MM-DD` date. */
  date(v: unknown): string {
    if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(v)) this.fail(`expected a YYYY-MM-DD date, got ${JSON.stringify(v)}`);
    return v;
  }
}

/** One setting: its validator and how its command-line flag looks. */
export interface FieldSpec<T> {
  /** Validate a raw value (from a file, a flag string or a checkpoint). */
  readonly parse: (f: ConfigField, v: unknown) => T;
  /** Flag help (the default is appended). */
  readonly help: string;
  /** Value placeholder of the flag (`<x>`); absent for a boolean switch (`--key` / `--no-key`). */
  readonly arg?: string;
  /** Allowed values, shown by the flag's help and checked by commander. */
  readonly choices?: readonly string[];
  /** Flag name when it is not the kebab-case key (`--prompt` for `prompts`); `false` = config file only. */
  readonly flag?: string | false;
  /** The flag may be given several times; its values are collected into a list. */
  readonly repeatable?: boolean;
}

/** The fields of a config type. */
export type ConfigSchema<C> = { readonly [K in keyof C]-?: FieldSpec<C[K]> };

/** Field spec constructors for the common shapes. */
export const field = {
  /** An integer in [min, max]. */
  int: (help: string, min: number, max?: number, arg = '<n>'): FieldSpec<number> => ({ help, arg, parse: (f, v) => f.int(v, min, max) }),
  /** An integer in [min, max], or null (`none`). */
  intOrNull: (help: string, min: number, max?: number): FieldSpec<number | null> => ({ help, arg: '<n>', parse: (f, v) => f.nullable(v, (x) => f.int(x, min, max)) }),
  /** A number in [lo, hi] (ends optionally open). */
  num: (help: string, lo: number, hi: number, open: { openLo?: boolean; openHi?: boolean } = {}): FieldSpec<number> => ({ help, arg: '<x>', parse: (f, v) => f.range(v, lo, hi, open) }),
  /** A non-empty string. */
  str: (help: string, arg: string): FieldSpec<string> => ({ help, arg, parse: (f, v) => f.str(v) }),
  /** A non-empty string, or null (`none`). */
  strOrNull: (help: string, arg: string): FieldSpec<string | null> => ({ help, arg, parse: (f, v) => f.nullable(v, (x) => f.str(x)) }),
  /** A boolean switch (`--key` / `--no-key`). */
  bool: (help: string): FieldSpec<boolean> => ({ help, parse: (f, v) => f.bool(v) }),
  /** One of `options`. */
  oneOf: <T extends string>(help: string, options: readonly T[], arg = '<name>'): FieldSpec<T> => ({ help, arg, choices: options, parse: (f, v) => f.oneOf(v, options) }),
  /** A `YYYY-MM-DD` date. */
  date: (help: string): FieldSpec<string> => ({ help, arg: '<YYYY-MM-DD>', parse: (f, v) => f.date(v) }),
  /** A list of at least `min` strings (comma-separated on the command line). */
  list: (help: string, min: number): FieldSpec<string[]> => ({
    help,
    arg: '<list>',
    parse: (f, v) => {
      const l = f.list(v);
      if (l.length < min) f.fail(`give at least ${['no', 'one', 'two', 'three'][min] ?? min} language${min === 1 ? '' : 's'}`);
      return l;
    },
  }),
};

/** Read a JSON config file (config keys, camelCase) as a layer. */
export function readConfigLayer(file: string): ConfigLayer {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError('(file)', `cannot read config file (${(e as Error).message})`, file);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ConfigError('(file)', `invalid JSON (${(e as Error).message})`, file);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new ConfigError('(file)', 'expected a JSON object', file);
  return { source: file, values: json as RawConfig };
}

/** A resolved config and, per key, the source of its value. */
export interface Resolved<C> {
  readonly config: C;
  readonly sources: Record<keyof C & string, string>;
}

/**
 * Merge `layers` over a copy of `defaults`, validating each value with its field of `schema`.
 * Unknown keys are errors (to catch typos).
 * @throws ConfigError naming the key and the flag or file it came from
 */
export function mergeConfigLayers<C extends object>(schema: ConfigSchema<C>, defaults: C, layers: readonly ConfigLayer[]): Resolved<C> {
  const config = structuredClone(defaults);
  const sources = Object.fromEntries(Object.keys(defaults).map((k) => [k, 'default'])) as Record<keyof C & string, string>;
  const fields = schema as Record<string, FieldSpec<unknown>>;
  for (const layer of layers) {
    for (const [key, v] of Object.entries(layer.values)) {
      if (v === undefined) continue;
      if (!(key in defaults) || fields[key] === undefined) throw new ConfigError(key, `unknown setting (known: ${Object.keys(defaults).join(', ')})`, origin(key, layer.source));
      (config as Record<string, unknown>)[key] = fields[key].parse(new ConfigField(key, layer.source), v);
      sources[key as keyof C & string] = layer.source;
    }
  }
  return { config, sources };
}

/** The error for a cross-field check on `key`, naming where its value came from. */
export function configFailure(key: string, message: string, sources: Readonly<Record<string, string>>): ConfigError {
  return new ConfigError(key, message, origin(key, sources[key] ?? 'default'));
}

/** Keys among `keys` whose values differ between two configs (compared as JSON). */
export function changedKeys<C extends object>(a: C, b: C, keys: readonly (keyof C & string)[]): (keyof C & string)[] {
  return keys.filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
}
