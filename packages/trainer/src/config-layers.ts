// Layered app configuration: defaults < (a checkpoint's settings) < config file < flags. Every
// value is validated by the app's parser with `ConfigField`, and errors name the key and where
// its value came from (the flag, or the file).

import fs from 'node:fs';

/** Builds the app's typed config error: `field` = config key, `source` = flag name or file. */
export type ConfigErrorFactory = (field: string, message: string, source: string) => Error;

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

/** Validators for one raw value of `key` from `source`; each throws the app's config error. */
export class ConfigField {
  /**
   * @param key - the config key being parsed
   * @param source - the layer the value came from
   * @param error - the app's error factory
   */
  constructor(readonly key: string, readonly source: string, private readonly error: ConfigErrorFactory) {}

  /** Throw the app's config error for this key. */
  fail(message: string): never {
    throw this.error(this.key, message, origin(this.key, this.source));
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
}

/** Read a JSON config file (config keys, camelCase) as a layer. */
export function readConfigLayer(file: string, error: ConfigErrorFactory): ConfigLayer {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw error('(file)', `cannot read config file (${(e as Error).message})`, file);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw error('(file)', `invalid JSON (${(e as Error).message})`, file);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw error('(file)', 'expected a JSON object', file);
  return { source: file, values: json as RawConfig };
}

/**
 * Merge `layers` over a copy of `defaults`, validating each value with `parse`. Unknown keys are
 * errors (to catch typos). Returns the config and, per key, the source of its value.
 */
export function mergeConfigLayers<C extends object>(
  defaults: C,
  layers: readonly ConfigLayer[],
  parse: (key: keyof C & string, v: unknown, source: string) => C[keyof C],
  error: ConfigErrorFactory,
): { config: C; sources: Record<keyof C & string, string> } {
  const config = structuredClone(defaults);
  const sources = Object.fromEntries(Object.keys(defaults).map((k) => [k, 'default'])) as Record<keyof C & string, string>;
  for (const layer of layers) {
    for (const [key, v] of Object.entries(layer.values)) {
      if (v === undefined) continue;
      if (!(key in defaults)) throw error(key, `unknown setting (known: ${Object.keys(defaults).join(', ')})`, origin(key, layer.source));
      (config as Record<string, unknown>)[key] = parse(key as keyof C & string, v, layer.source);
      sources[key as keyof C & string] = layer.source;
    }
  }
  return { config, sources };
}

/** The error for a cross-field check on `key`, naming where its value came from. */
export function configFailure(key: string, message: string, sources: Readonly<Record<string, string>>, error: ConfigErrorFactory): Error {
  return error(key, message, origin(key, sources[key] ?? 'default'));
}
