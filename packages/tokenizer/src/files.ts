// Reading and writing tokenizer.json / tokenizer_config.json files (Node `fs`).

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '@apertus/atomic-file';
import { TokenizerError } from './errors.js';
import { Tokenizer, withSpecialTokensMap, type LoadOptions, type TokenizerConfigJson, type TokenizerJson } from './tokenizer.js';

function read(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (cause) {
    throw new TokenizerError('Io', `cannot read file (${(cause as Error).message})`, { file: path, cause });
  }
}

/**
 * Load a tokenizer from a `tokenizer.json` path and, optionally, a `tokenizer_config.json` path.
 * Errors carry the file name.
 */
export function loadTokenizer(tokenizerPath: string, configPath?: string, options: Omit<LoadOptions, 'file' | 'configFile'> = {}): Tokenizer {
  const json = read(tokenizerPath);
  const config = configPath !== undefined ? read(configPath) : undefined;
  return Tokenizer.fromJSON(json, config, {
    ...options,
    file: tokenizerPath,
    ...(configPath !== undefined ? { configFile: configPath } : {}),
  });
}

function readJson(path: string): unknown {
  const text = read(path);
  try {
    return JSON.parse(text) as unknown;
  } catch (cause) {
    throw new TokenizerError('InvalidJson', `malformed JSON (${(cause as Error).message})`, { file: path, cause });
  }
}

/**
 * Load `dir/tokenizer.json` with `dir/tokenizer_config.json` and `dir/special_tokens_map.json`
 * when they exist (the map's special tokens over the config's, as transformers reads them: see
 * {@link withSpecialTokensMap}).
 */
export function loadTokenizerFromDirectory(dir: string, options: Omit<LoadOptions, 'file' | 'configFile'> = {}): Tokenizer {
  const cfg = join(dir, 'tokenizer_config.json'), map = join(dir, 'special_tokens_map.json');
  if (!existsSync(map)) return loadTokenizer(join(dir, 'tokenizer.json'), existsSync(cfg) ? cfg : undefined, options);
  const config = existsSync(cfg) ? readJson(cfg) : {};
  if (config === null || typeof config !== 'object' || Array.isArray(config)) throw new TokenizerError('InvalidField', 'tokenizer_config.json must be a JSON object', { file: cfg });
  const file = join(dir, 'tokenizer.json');
  return Tokenizer.fromJSON(read(file), withSpecialTokensMap(config as TokenizerConfigJson, readJson(map), map), { ...options, file, configFile: existsSync(cfg) ? cfg : map });
}

/** Write `tokenizer.json` (and `tokenizer_config.json` when given) into `dir`, each atomically. */
export function saveTokenizer(dir: string, tokenizerJson: TokenizerJson, config?: TokenizerConfigJson): void {
  try {
    writeFileAtomic(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson));
    if (config !== undefined) writeFileAtomic(join(dir, 'tokenizer_config.json'), JSON.stringify(config, null, 2));
  } catch (cause) {
    throw new TokenizerError('Io', `cannot write tokenizer files (${(cause as Error).message})`, { file: dir, cause });
  }
}
