// `generation_config.json` of a Hugging Face checkpoint: sampling defaults and special token ids.

import type { ApertusConfig } from './config';
import { ConfigError } from './errors';

/** Contents of `generation_config.json` that matter here (fields not listed are kept as read). */
export interface GenerationConfig {
  bos_token_id?: number;
  eos_token_id?: number | number[];
  pad_token_id?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  do_sample?: boolean;
  max_new_tokens?: number;
}

/**
 * Validate `generation_config.json` against the model: token ids are integers inside the
 * vocabulary, sampling defaults are in range. Throws ConfigError naming the file and field, so a
 * bad file fails at load instead of making every request a 400. Fields it does not use are kept.
 */
export function parseGenerationConfig(json: unknown, config: ApertusConfig, file: string): GenerationConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new ConfigError('(root)', 'must be a JSON object', file);
  const j = json as Record<string, unknown>;
  const V = config.vocab_size;
  const tokenId = (field: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= V) throw new ConfigError(field, `must be a token id in [0, ${V}) (vocab_size of config.json), got ${JSON.stringify(v)}`, file);
    return v;
  };
  const number = (field: string, ok: (x: number) => boolean, range: string): void => {
    const v = j[field];
    if (v === undefined || v === null) return;
    if (typeof v !== 'number' || !Number.isFinite(v) || !ok(v)) throw new ConfigError(field, `must be ${range}, got ${JSON.stringify(v)}`, file);
  };
  for (const field of ['bos_token_id', 'pad_token_id'] as const) if (j[field] !== undefined && j[field] !== null) tokenId(field, j[field]);
  const eos = j.eos_token_id;
  if (eos !== undefined && eos !== null) {
    if (Array.isArray(eos)) {
      if (eos.length === 0) throw new ConfigError('eos_token_id', 'must not be an empty list', file);
      eos.forEach((e, i) => tokenId(`eos_token_id[${i}]`, e));
    } else tokenId('eos_token_id', eos);
  }
  number('temperature', (x) => x >= 0, 'a number ≥ 0');
  number('top_p', (x) => x > 0 && x <= 1, 'a number in (0, 1]');
  number('top_k', (x) => Number.isInteger(x) && x >= 0, 'an integer ≥ 0');
  number('max_new_tokens', (x) => Number.isInteger(x) && x >= 1, 'a positive integer');
  number('repetition_penalty', (x) => x > 0, 'a number > 0');
  if (j.do_sample !== undefined && j.do_sample !== null && typeof j.do_sample !== 'boolean') throw new ConfigError('do_sample', `must be a boolean, got ${JSON.stringify(j.do_sample)}`, file);
  return j as GenerationConfig;
}
