// Reading and writing tokenizer.json / tokenizer_config.json files (Node `fs`).

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '@apertus/atomic-file';
import { TokenizerError } from './errors.js';
import { Tokenizer, type LoadOptions, type TokenizerConfigJson, type TokenizerJson } from './tokenizer.js';

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

/** Load `dir/tokenizer.json` (+ `dir/tokenizer_config.json` when it exists). */
export function loadTokenizerFromDirectory(dir: string, options: Omit<LoadOptions, 'file' | 'configFile'> = {}): Tokenizer {
  const cfg = join(dir, 'tokenizer_config.json');
  return loadTokenizer(join(dir, 'tokenizer.json'), existsSync(cfg) ? cfg : undefined, options);
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
