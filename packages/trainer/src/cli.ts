// The command line of a training app: flags generated from the app's config schema (help with the
// app's defaults), `--config <file>`, `--resume` (the checkpoint's settings below the file and the
// flags) and `--overwrite`; SIGINT and SIGTERM finish the current step, save a checkpoint and exit
// with 128 + the signal number (a second signal exits at once); a summary on success; errors
// printed as one line (a stack only for unexpected ones) with exit status 2 for bad settings.

import { FLAGS, helpShown, reportFailure } from '@apertus/cli';
import { Command, Option } from 'commander';
import { checkpointLayer, validationTrend, type TrainingResult } from './run-training';
import { flagName, readConfigLayer, type ConfigLayer, type ConfigSchema, type FieldSpec, type RawConfig } from './config';
import { PosttrainError } from '@apertus/posttrain';
import { ConfigError, InterruptedError } from './errors';
import type { RunConfig } from './run-config';

/** How a training run is started by the CLI. */
export interface RunControl {
  /** `--resume`. */
  readonly resume: boolean;
  /** `--overwrite`. */
  readonly overwrite: boolean;
  /** Fires on SIGINT / SIGTERM. */
  readonly signal: AbortSignal;
}

/** A training app's command line. */
export interface TrainingCliSpec<C extends RunConfig, R extends TrainingResult> {
  /** Program name (`apertus-sft`). */
  readonly name: string;
  /** What it does (shown by `--help`). */
  readonly description: string;
  /** The app's config schema: one flag per field. */
  readonly schema: ConfigSchema<C>;
  /** The app's defaults (shown in the help). */
  readonly defaults: Readonly<C>;
  /** The app's config resolver (layers over the defaults, cross-field checks). */
  readonly resolve: (layers: readonly ConfigLayer[]) => C;
  /** Run (or resume) training. */
  readonly run: (config: C, control: RunControl) => Promise<R>;
  /** Lines added to the summary after the first (e.g. translation scores). */
  readonly summary?: (result: R) => string[];
  /** Exit status for an app error that is a usage error (2), when not a {@link ConfigError}. */
  readonly usageError?: (e: unknown) => boolean;
  /** Add subcommands (e.g. an experiment); `exit` sets the process's exit status. */
  readonly commands?: (program: Command, exit: (code: number) => void) => void;
}

const SIGNAL_NUMBER: Readonly<Record<string, number>> = { SIGINT: 2, SIGTERM: 15 };

function showDefault(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return ` (default ${v ? 'on' : 'off'})`;
  if (Array.isArray(v)) return ` (default ${v.map((x) => (x === '' ? '""' : String(x))).join(',')})`;
  if (typeof v === 'object') return '';
  return ` (default ${String(v)})`;
}

/**
 * Add one flag per field of `schema` to `cmd` (`--lr <x>`, `--goldfish` / `--no-goldfish`,
 * choices checked by commander; the shared flags of @apertus/cli in its spelling, `-o, --out
 * <path>`). Returns the map from commander's option names to config keys.
 */
export function addConfigFlags<C extends object>(cmd: Command, schema: ConfigSchema<C>, defaults: Readonly<C>): Map<string, string> {
  const keys = new Map<string, string>();
  for (const [key, spec] of Object.entries(schema) as [string, FieldSpec<unknown>][]) {
    if (spec.flag === false) continue;
    const flag = spec.flag === undefined ? flagName(key) : `--${spec.flag}`;
    const def = (defaults as Record<string, unknown>)[key];
    if (spec.arg === undefined) {
      cmd.option(flag, `${spec.help}${def === true ? ' (default)' : ''}`);
      cmd.option(`--no-${flag.slice(2)}`, `not: ${spec.help}${def === false ? ' (default)' : ''}`);
      keys.set(new Option(flag).attributeName(), key);
      continue;
    }
    // A flag every Apertus command shares (`--out`, `--model`, `--threads`…) is spelled as @apertus/cli spells it.
    const shared = Object.values(FLAGS).find((f) => f.flags.endsWith(`${flag} ${f.flags.split(' ').pop()}`) && f.flags.includes(' <'));
    const option = new Option(shared ? shared.flags : `${flag} ${spec.arg}`, `${spec.help}${showDefault(def)}`);
    if (spec.choices) option.choices(spec.choices);
    if (spec.repeatable) option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
    cmd.addOption(option);
    keys.set(option.attributeName(), key);
  }
  return keys;
}

/** Print an error as one line (with the stack only for unexpected built-in errors; see @apertus/cli); the exit status. */
export function reportError(name: string, e: unknown, usageError: (e: unknown) => boolean = () => false): number {
  if (e instanceof InterruptedError || (e instanceof PosttrainError && e.code === 'Interrupted')) {
    process.stderr.write(`${name}: interrupted: ${e.message}\n`);
    return 130;
  }
  return reportFailure(name, e, undefined, (x) => x instanceof ConfigError || usageError(x));
}

/** Run `fn` with SIGINT / SIGTERM aborting its signal (a second one exits at once); the signal received, if any. */
export async function withStopSignals<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<{ value: T; stoppedBy: string | null }> {
  const controller = new AbortController();
  let stoppedBy: string | null = null;
  const onSignal = (sig: NodeJS.Signals): void => {
    if (controller.signal.aborted) process.exit(128 + (SIGNAL_NUMBER[sig] ?? 0));
    stoppedBy = sig;
    process.stderr.write(`\n${sig}: finishing the current step and saving a checkpoint (send it again to quit now)\n`);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return { value: await fn(controller.signal), stoppedBy };
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** Build the program of a training app (flags, the training action, the app's subcommands). */
export function trainingProgram<C extends RunConfig, R extends TrainingResult>(spec: TrainingCliSpec<C, R>, exit: (code: number) => void): Command {
  const program = new Command(spec.name)
    .description(spec.description)
    .option('--config <file>', 'JSON config file (keys as the flags in camelCase); flags override it')
    .option('--resume', 'continue from the latest checkpoint in --out')
    .option('--overwrite', 'discard checkpoints already in --out and start again')
    .exitOverride()
    // Errors are printed by reportError, as one line naming the command (commander's own line would not).
    .configureOutput({ outputError: () => {} })
    // Flags after a subcommand belong to it (`ablate --steps 50`), not to training.
    .enablePositionalOptions();
  const keys = addConfigFlags(program, spec.schema, spec.defaults);
  program.action(async (opts: Record<string, unknown>) => {
    const fileLayer = typeof opts.config === 'string' ? readConfigLayer(opts.config) : null;
    const values: Record<string, unknown> = {};
    for (const [attr, key] of keys) if (opts[attr] !== undefined) values[key] = opts[attr];
    const layers: ConfigLayer[] = [];
    if (opts.resume) {
      // The checkpoint's settings are the base; the file and flags may only repeat them (checked
      // by the training loop) or change output, evaluation and display settings.
      const out = values.out ?? fileLayer?.values.out ?? spec.defaults.out;
      const saved = typeof out === 'string' ? checkpointLayer(out) : null;
      if (saved) layers.push(saved);
    }
    if (fileLayer) layers.push(fileLayer);
    layers.push({ source: 'flags', values: values as RawConfig });
    const config = spec.resolve(layers);
    const { value: result, stoppedBy } = await withStopSignals((signal) => spec.run(config, { resume: opts.resume === true, overwrite: opts.overwrite === true, signal }));
    const trend = validationTrend(result.metrics);
    const lines = [
      `${result.interrupted ? 'interrupted' : 'done'}: ${result.step} of ${result.totalSteps} steps${trend ? `, ${trend}` : ''}`,
      ...(spec.summary?.(result) ?? []),
      `  metrics     ${result.files.metrics}`,
      `  loss curve  ${result.files.plot}`,
      `  checkpoint  ${result.checkpoint ?? '(none)'}`,
      ...(result.modelDir ? [`  model       ${result.modelDir}`] : []),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    exit(result.interrupted ? 128 + (SIGNAL_NUMBER[stoppedBy ?? 'SIGINT'] ?? 2) : 0);
  });
  spec.commands?.(program, exit);
  return program;
}

/** Parse `argv` and run the training app; sets `process.exitCode`. */
export async function runTrainingCli<C extends RunConfig, R extends TrainingResult>(spec: TrainingCliSpec<C, R>, argv: readonly string[] = process.argv): Promise<void> {
  let code = 0;
  const program = trainingProgram(spec, (c) => {
    code = c;
  });
  try {
    await program.parseAsync([...argv]);
  } catch (e) {
    code = helpShown(e) ? 0 : reportError(spec.name, e, spec.usageError);
  }
  process.exitCode = code;
}
