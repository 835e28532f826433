// Command-line plumbing shared by apertus-chat and apertus-generate: I/O streams, number parsers,
// the common model and sampling options (commander errors become CliError through parseCommand).

import { MODEL_SPEC_HELP, withDownloadDisplay, type DownloadProgress } from '@apertus/hub';
import { loadServedModel, parseCommand, Scheduler, type ServedModel } from '@apertus/serve/engine';
import { DEVICES, DEVICE_HELP, useDevice, type Device } from '@apertus/tensor';
import { Command, InvalidArgumentError, Option } from 'commander';

/** Where a CLI reads and writes; tests pass streams, the binaries pass the process's. */
export interface AppIo {
  /** User input (lines). */
  input: NodeJS.ReadableStream;
  /** Generated text and normal output. */
  output: { write(text: string): unknown };
  /** Diagnostics (and the download bar, when it is a terminal). Default: `output`. */
  error?: { write(text: string): unknown; readonly isTTY?: boolean };
  /** Use ANSI colours (dim reasoning). Default false. */
  color?: boolean;
  /**
   * The input is an interactive terminal: a prompt, and Ctrl-C stops a reply (twice quits). When
   * `output` is a stream, readline's line editing and history too. Default false.
   */
  terminal?: boolean;
}

/** Parser of a number option within [min, max] (integer if asked). */
export function numberArg(name: string, min: number, max: number, integer = false): (v: string) => number {
  return (v: string) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
      throw new InvalidArgumentError(`${name} must be ${integer ? 'an integer' : 'a number'} in [${min}, ${max}]`);
    }
    return n;
  };
}

/** Options every app takes: the checkpoint and sampling. */
export interface CommonOptions {
  model: string;
  device: Device;
  temperature?: number;
  topP?: number;
  topK: number;
  seed?: number;
  maxTokens?: number;
  ctx?: number;
  system?: string;
  think: boolean;
  stop: string[];
}

/** Add the shared options to a command. */
export function addCommonOptions(cmd: Command): Command {
  return cmd
    .requiredOption('-m, --model <model>', MODEL_SPEC_HELP)
    .addOption(new Option('--device <device>', DEVICE_HELP).choices(DEVICES).default('cpu'))
    .option('-t, --temperature <t>', 'sampling temperature, 0 = greedy (default: generation_config, else 0.8)', numberArg('--temperature', 0, 2))
    .option('--top-p <p>', 'nucleus sampling (default: generation_config, else 0.9)', numberArg('--top-p', Number.MIN_VALUE, 1))
    .option('--top-k <k>', 'top-k sampling, 0 = off', numberArg('--top-k', 0, 1e9, true), 0)
    .option('--seed <n>', 'sampler seed', numberArg('--seed', -Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true))
    .option('-n, --max-tokens <n>', 'maximum new tokens', numberArg('--max-tokens', 1, 1e9, true))
    .option('--ctx <n>', 'context limit (default: max_position_embeddings)', numberArg('--ctx', 1, 1e9, true))
    .option('-s, --system <text>', 'system prompt (default: the Apertus one)')
    .option('--think', 'let the model deliberate before answering (Deliberation: enabled)', false)
    .option('--stop <text...>', 'stop strings', [])
    .exitOverride();
}

/**
 * Parse argv with `cmd`; returns null when help/version was printed. Commander errors become
 * CliError naming the option.
 */
export function parseArgs(cmd: Command, argv: readonly string[], io: AppIo): Command | null {
  const err = io.error ?? io.output;
  cmd.configureOutput({ writeOut: (s) => io.output.write(s), writeErr: (s) => err.write(s), outputError: () => {} });
  return parseCommand(cmd, argv);
}

/**
 * Select `--device`, then load what `--model` designates (a model directory, a run directory, a
 * .gguf file or a Hub id, downloaded with a progress display on `progress`). Throws the loader's
 * typed errors, and `WebgpuUnavailableError` (naming what to install) when the device cannot be had.
 */
export async function loadModelAt(spec: string, device: Device, onWarning?: (message: string) => void, progress?: AppIo['error']): Promise<ServedModel> {
  await useDevice(device);
  const load = (onProgress?: (p: DownloadProgress) => void) => loadServedModel(spec, { ...(onWarning ? { onWarning } : {}), ...(onProgress ? { onProgress } : {}) });
  return progress ? withDownloadDisplay(progress, load) : load();
}

/**
 * Load `--model` on `--device` and a one-sequence scheduler over it (context `--ctx`, at most the
 * model's; a prefix cache of `prefixCacheMiB` when given). Resolves null, after telling `io`, when
 * the model cannot be loaded.
 */
export async function openScheduler(app: string, o: CommonOptions, io: AppIo, prefixCacheMiB: number | false = false): Promise<{ served: ServedModel; scheduler: Scheduler } | null> {
  const err = (s: string) => (io.error ?? io.output).write(s);
  let served: ServedModel;
  try {
    served = await loadModelAt(o.model, o.device, (m) => err(`warning: ${m}\n`), io.error ?? io.output);
  } catch (e) {
    err(`${app}: cannot load ${o.model} on ${o.device}: ${(e as Error).message}\n`);
    return null;
  }
  const scheduler = new Scheduler(served, {
    maxBatch: 1,
    ...(prefixCacheMiB !== false ? { prefixCacheBytes: prefixCacheMiB * 2 ** 20 } : {}),
    ...(o.ctx !== undefined ? { contextLength: Math.min(o.ctx, served.model.config.max_position_embeddings) } : {}),
  });
  return { served, scheduler };
}
