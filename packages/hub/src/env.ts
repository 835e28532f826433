// The Hub settings of a Node process, read from the environment as Python huggingface_hub reads
// them, so that both use the same cache, token and endpoint:
// - endpoint: HF_ENDPOINT (default https://huggingface.co);
// - cache: HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
//   $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub;
// - token: HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the file `huggingface-cli login` / `hf auth
//   login` writes (HF_TOKEN_PATH, else $HF_HOME/token); none when HF_HUB_DISABLE_IMPLICIT_TOKEN is set;
// - offline: HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) set to 1, ON, YES or TRUE.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_ENDPOINT } from './http';

/** Where and how the Hub is reached. */
export interface HubSettings {
  /** Base URL of the Hub (no trailing slash). */
  readonly endpoint: string;
  /** The Hugging Face hub cache directory (holding `models--owner--name/`). */
  readonly cacheDir: string;
  /** Bearer token, or null. */
  readonly token: string | null;
  /** Never touch the network; use the cache only. */
  readonly offline: boolean;
}

export { DEFAULT_ENDPOINT };

type Env = Readonly<Record<string, string | undefined>>;

/** huggingface_hub's truth test of an environment variable. */
export function envFlag(value: string | undefined): boolean {
  return value !== undefined && ['1', 'ON', 'YES', 'TRUE'].includes(value.toUpperCase());
}

const expandUser = (p: string): string => (p === '~' || p.startsWith('~/') ? path.join(os.homedir(), p.slice(1)) : p);
const set = (v: string | undefined): v is string => v !== undefined && v !== '';

/** `$HF_HOME`, else `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`. */
export function hfHome(env: Env = process.env): string {
  if (set(env.HF_HOME)) return expandUser(env.HF_HOME);
  return path.join(set(env.XDG_CACHE_HOME) ? expandUser(env.XDG_CACHE_HOME) : path.join(os.homedir(), '.cache'), 'huggingface');
}

/** The hub cache directory (see the file header). */
export function hubCacheDir(env: Env = process.env): string {
  if (set(env.HF_HUB_CACHE)) return expandUser(env.HF_HUB_CACHE);
  if (set(env.HUGGINGFACE_HUB_CACHE)) return expandUser(env.HUGGINGFACE_HUB_CACHE);
  return path.join(hfHome(env), 'hub');
}

/** The token (see the file header), without surrounding white space or line breaks; null when there is none. */
export function hubToken(env: Env = process.env): string | null {
  if (envFlag(env.HF_HUB_DISABLE_IMPLICIT_TOKEN)) return null;
  const clean = (t: string | undefined): string | null => (t === undefined ? null : t.replace(/[\r\n]/g, '').trim() || null);
  const fromEnv = clean(env.HF_TOKEN) ?? clean(env.HUGGING_FACE_HUB_TOKEN);
  if (fromEnv !== null) return fromEnv;
  const file = set(env.HF_TOKEN_PATH) ? expandUser(env.HF_TOKEN_PATH) : path.join(hfHome(env), 'token');
  try {
    return clean(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/** The settings of `env` (default `process.env`), with `overrides` taking precedence. */
export function hubSettings(env: Env = process.env, overrides: Partial<HubSettings> = {}): HubSettings {
  return {
    endpoint: (overrides.endpoint ?? (set(env.HF_ENDPOINT) ? env.HF_ENDPOINT : DEFAULT_ENDPOINT)).replace(/\/+$/, ''),
    cacheDir: overrides.cacheDir ?? hubCacheDir(env),
    token: overrides.token !== undefined ? overrides.token : hubToken(env),
    offline: overrides.offline ?? (envFlag(env.HF_HUB_OFFLINE) || envFlag(env.TRANSFORMERS_OFFLINE)),
  };
}
