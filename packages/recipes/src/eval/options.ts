// The options of an evaluation (apertus-eval's flags), validated into the suite settings and the
// stage list; a bad value is a TrainerOptionError naming the flag.

import fs from 'node:fs';
import path from 'node:path';
import { TrainerOptionError } from '@apertus/trainer';
import { DEFAULT_SUITE, type Stage, type SuiteOptions } from './suite';

/** The stages evaluated when no `--model` is given: the README's default runs, those that exist. */
export const DEFAULT_STAGES: readonly Stage[] = Object.freeze([
  { name: 'base', location: 'runs/udhr-tiny' },
  { name: 'SFT', location: 'runs/sft-udhr' },
  { name: 'aligned', location: 'runs/align-udhr' },
]);

/** Parse `name=dir` (or a bare `dir`, named after its last path component). */
export function parseStage(spec: string): Stage {
  const eq = spec.indexOf('=');
  if (eq === 0) throw new TrainerOptionError('--model', `expected name=dir or dir, got ${JSON.stringify(spec)}`);
  if (eq > 0) {
    const location = spec.slice(eq + 1);
    if (location === '') throw new TrainerOptionError('--model', `no directory after "=" in ${JSON.stringify(spec)}`);
    return { name: spec.slice(0, eq), location };
  }
  if (spec.trim() === '') throw new TrainerOptionError('--model', 'empty model path');
  return { name: path.basename(path.resolve(spec)), location: spec };
}

function int(flag: string, v: string | undefined, min: number, max: number, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (v.trim() === '' || !Number.isInteger(n) || n < min || n > max) throw new TrainerOptionError(flag, `expected an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
  return n;
}

function num(flag: string, v: string | undefined, lo: number, hi: number, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < lo || n > hi) throw new TrainerOptionError(flag, `expected a number in [${lo}, ${hi}], got ${JSON.stringify(v)}`);
  return n;
}

/** Raw flag values as commander hands them over. */
export interface RawEvalFlags {
  readonly model?: readonly string[];
  readonly heldOut?: string;
  readonly languages?: string;
  readonly splitFraction?: string;
  readonly splitSeed?: string;
  readonly contextLength?: string;
  readonly maxChars?: string;
  readonly maxTokens?: string;
  readonly date?: string;
  readonly probes?: string;
  readonly probeLanguage?: string;
  readonly suffixLength?: string;
  readonly minPrefix?: string;
  readonly probeTokens?: string;
}

/**
 * Validate the flags: the stages (explicit `--model`s, or the default runs that exist) and the
 * suite settings.
 * @throws TrainerOptionError naming the flag
 */
export function parseEvalFlags(flags: RawEvalFlags): { stages: Stage[]; suite: SuiteOptions; skipped: Stage[] } {
  let stages: Stage[];
  const skipped: Stage[] = [];
  if (flags.model !== undefined && flags.model.length > 0) stages = flags.model.map(parseStage);
  else {
    stages = DEFAULT_STAGES.filter((s) => fs.existsSync(s.location));
    skipped.push(...DEFAULT_STAGES.filter((s) => !fs.existsSync(s.location)));
    if (stages.length === 0) throw new TrainerOptionError('--model', `none of the default runs (${DEFAULT_STAGES.map((s) => s.location).join(', ')}) exists; pass --model name=dir`);
  }
  const names = new Set<string>();
  for (const s of stages) {
    if (names.has(s.name)) throw new TrainerOptionError('--model', `two models are named "${s.name}"; name them with name=dir`);
    names.add(s.name);
  }
  const d = DEFAULT_SUITE;
  if (flags.date !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(flags.date)) throw new TrainerOptionError('--date', `expected YYYY-MM-DD, got ${JSON.stringify(flags.date)}`);
  const languages = flags.languages === undefined ? d.languages : flags.languages.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (languages.length === 0) throw new TrainerOptionError('--languages', 'give at least one language');
  const heldOut = flags.heldOut === undefined ? d.heldOut : flags.heldOut === 'none' ? null : flags.heldOut;
  const suite: SuiteOptions = {
    heldOut,
    languages,
    splitFraction: num('--split-fraction', flags.splitFraction, 0, 1, d.splitFraction),
    splitSeed: int('--split-seed', flags.splitSeed, 0, 2 ** 32 - 1, d.splitSeed),
    contextLength: int('--context-length', flags.contextLength, 1, 1 << 20, d.contextLength),
    maxChars: int('--max-chars', flags.maxChars, 0, 1_000_000, d.maxChars),
    maxTokens: int('--max-tokens', flags.maxTokens, 1, 1 << 16, d.maxTokens),
    date: flags.date ?? d.date,
    probes: int('--probes', flags.probes, 0, 100_000, d.probes),
    probeLanguage: flags.probeLanguage ?? d.probeLanguage,
    suffixLength: int('--suffix-length', flags.suffixLength, 1, 1 << 16, d.suffixLength),
    minPrefix: int('--min-prefix', flags.minPrefix, 1, 1 << 16, d.minPrefix),
    probeTokens: int('--probe-tokens', flags.probeTokens, 2, 1 << 20, d.probeTokens),
  };
  return { stages, suite, skipped };
}
