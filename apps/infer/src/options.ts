// Command-line plumbing shared by apertus-chat and apertus-generate: I/O streams and the common
// model and sampling options, spelled as every Apertus command spells them (@apertus/cli).

import { applyThreads, flag, parseCommand } from '@apertus/cli';
import { MODEL_SPEC_HELP, withDownloadDisplay, type DownloadProgress } from '@apertus/hub';
import { loadServedModel, Scheduler, type ServedModel } from '@apertus/serve/engine';
import { useDevice, type Device } from '@apertus/tensor';
import type { Command } from 'commander';

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

/** Options every app takes: the checkpoint, where it runs, and sampling. */
export interface CommonOptions {
  model: string;
  device: Device;
  threads?: number;
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
    .addOption(flag('model', { required: true, help: MODEL_SPEC_HELP }))
    .addOption(flag('threads'))
    .addOption(flag('device', { defaultValue: 'cpu' }))
    .addOption(flag('temperature', { extra: '(default: generation_config, else 0.8)' }))
    .addOption(flag('topP', { extra: '(default: generation_config, else 0.9)' }))
    .addOption(flag('topK', { defaultValue: 0 }))
    .addOption(flag('seed'))
    .addOption(flag('maxTokens'))
    .addOption(flag('ctx'))
    .addOption(flag('system'))
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
 * .gguf file or a Hub id, downloaded with a progress display on `progress`), named after its
 * checkpoint (`runs/udhr-tiny` and `runs/udhr-tiny/model` → `udhr-tiny`). Throws the loader's
 * typed errors, and `WebgpuUnavailableError` (naming what to install) when the device cannot be had.
 */
export async function loadModelAt(spec: string, device: Device, onWarning?: (message: string) => void, progress?: AppIo['error']): Promise<ServedModel> {
  await useDevice(device);
  const load = (onProgress?: (p: DownloadProgress) => void) => loadServedModel(spec, { ...(onWarning ? { onWarning } : {}), ...(onProgress ? { onProgress } : {}) });
  return progress ? withDownloadDisplay(progress, load) : load();
}

/**
 * Apply `--threads`, load `--model` on `--device` and a one-sequence scheduler over it (context `--ctx`, at most the
 * model's; a prefix cache of `prefixCacheMiB` when given). Resolves null, after telling `io`, when
 * the model cannot be loaded.
 */
export async function openScheduler(app: string, o: CommonOptions, io: AppIo, prefixCacheMiB: number | false = false): Promise<{ served: ServedModel; scheduler: Scheduler } | null> {
  const err = (s: string) => (io.error ?? io.output).write(s);
  applyThreads(o.threads);
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
