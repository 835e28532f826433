// The flags every Apertus command spells the same way. A command adds the ones it takes with
// `flag(name)`, so `--model`, `--threads`, `--device`, `--port`, `--host`, `--ctx`… have one
// name, one short alias, one value placeholder and one parser everywhere. Short aliases follow
// llama.cpp where it has one (`-m` model, `-t` threads, `-c` context, `-n` new tokens, `-p` prompt).

import { DEVICE_HELP, DEVICES, setGemmThreads } from '@apertus/tensor';
import { Option } from 'commander';
import { integerValue, numberValue, portValue } from './values';

/** One shared flag: its commander spelling, help, and value parser or choices. */
export interface FlagSpec {
  /** Commander flags: `-m, --model <model>`. */
  readonly flags: string;
  /** Help text (a command may add to it). */
  readonly help: string;
  /** Parses and checks the value (throws commander's InvalidArgumentError). */
  readonly parse?: (value: string) => unknown;
  /** Allowed values. */
  readonly choices?: readonly string[];
}

/** Most CPU threads a command may be given (the GEMM workers' limit). */
export const MAX_THREADS = 64;

/** The shared flags, by name. */
export const FLAGS = {
  model: { flags: '-m, --model <model>', help: 'the model: a Hugging Face model directory, a run directory (its model/, else its latest checkpoint), a .gguf file or a Hub id owner/name[@revision][:QUANT]' },
  threads: { flags: '-t, --threads <n>', help: 'CPU threads of the matrix products (default: all cores)', parse: integerValue(1, MAX_THREADS) },
  device: { flags: '--device <device>', help: DEVICE_HELP, choices: DEVICES },
  port: { flags: '--port <port>', help: 'TCP port to listen on (0 picks a free one)', parse: portValue },
  host: { flags: '--host <host>', help: 'address to bind (localhost only by default)' },
  ctx: { flags: '-c, --ctx <n>', help: "context limit in tokens, prompt + output (default: the model's max_position_embeddings)", parse: integerValue(1, 2 ** 31 - 1) },
  maxTokens: { flags: '-n, --max-tokens <n>', help: 'most new tokens per reply', parse: integerValue(1, 2 ** 31 - 1) },
  temperature: { flags: '--temperature <t>', help: 'sampling temperature, 0 = greedy', parse: numberValue(0, 2) },
  topP: { flags: '--top-p <p>', help: 'nucleus sampling: keep the most likely tokens up to this probability mass', parse: numberValue(0, 1, { openMin: true }) },
  topK: { flags: '--top-k <k>', help: 'keep the k most likely tokens, 0 = off', parse: integerValue(0, 2 ** 31 - 1) },
  seed: { flags: '--seed <n>', help: 'sampler seed', parse: integerValue(-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER) },
  system: { flags: '-s, --system <text>', help: 'system prompt (default: the Apertus one)' },
  prompt: { flags: '-p, --prompt <text>', help: 'the prompt' },
  out: { flags: '-o, --out <path>', help: 'where to write the result' },
  json: { flags: '--json', help: 'print one JSON object instead of text' },
  quiet: { flags: '-q, --quiet', help: 'print less' },
} as const satisfies Record<string, FlagSpec>;

/** Name of a shared flag. */
export type FlagName = keyof typeof FLAGS;

/**
 * The commander Option of shared flag `name`; `help` replaces its help text, `extra` is appended
 * to it, `defaultValue` sets its default (shown in `--help`).
 */
export function flag(name: FlagName, o: { help?: string; extra?: string; defaultValue?: unknown; required?: boolean } = {}): Option {
  const spec: FlagSpec = FLAGS[name];
  const option = new Option(spec.flags, `${o.help ?? spec.help}${o.extra ? ` ${o.extra}` : ''}`);
  if (spec.parse) option.argParser(spec.parse);
  if (spec.choices) option.choices(spec.choices);
  if (o.defaultValue !== undefined) option.default(o.defaultValue);
  if (o.required) option.makeOptionMandatory();
  return option;
}

/** Apply `--threads` (absent: all cores, the default of the kernels). */
export function applyThreads(threads: number | undefined | null): void {
  if (threads !== undefined && threads !== null) setGemmThreads(threads);
}
