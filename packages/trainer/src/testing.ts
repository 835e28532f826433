// @apertus/trainer/testing — fixtures for the tests of the training apps: a very small Apertus
// model directory (2 layers × hidden 32, random weights) with a byte-level BPE tokenizer trained on
// four UDHR declarations, saved in Hugging Face format like apertus-pretrain's output, so a test can
// fine-tune, align or evaluate it in seconds; and helpers that run an app's built CLI (to completion,
// or until a signal is sent to it) around a temporary directory and config file, and read what a
// killed run left behind.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readUdhr } from '@apertus/data';
import { ApertusModel, saveCheckpoint } from '@apertus/model';
import { testModelConfig } from '@apertus/model/testing';
import { Tokenizer, trainApertusBpe } from '@apertus/tokenizer';
import { CheckpointManager, readTrainingCheckpoint } from './checkpoint';
import { readMetrics } from './metrics';
import type { TrainingSample } from './batch';
import type { MetricRecord } from './trainer-state';

/** A saved tiny model and its tokenizer. */
export interface TinyModel {
  /** The model directory (config.json, model.safetensors, tokenizer files). */
  readonly dir: string;
  /** The model as saved (float32). */
  readonly model: ApertusModel;
  /** Its tokenizer. */
  readonly tokenizer: Tokenizer;
}

/** Train the tokenizer and save a random tiny model under `root/name`. */
export async function makeTinyModel(root: string, name = 'base', seed = 5): Promise<TinyModel> {
  const texts: string[] = [];
  for await (const d of readUdhr({ languages: ['deu_1996', 'roh_rumgr', 'ita', 'eng'] })) texts.push(d.text);
  const trained = trainApertusBpe(texts, { vocabSize: 1400 });
  const tokenizer = Tokenizer.fromJSON(trained.tokenizerJson, trained.tokenizerConfig);
  const config = testModelConfig({ vocab_size: tokenizer.vocabSize, max_position_embeddings: 1024, rope_scaling: null, bos_token_id: 1, eos_token_id: 2, pad_token_id: 3 });
  const model = ApertusModel.init(config, seed);
  const dir = path.join(root, name);
  saveCheckpoint(model, dir, { dtype: 'f32', files: { 'tokenizer.json': JSON.stringify(trained.tokenizerJson), 'tokenizer_config.json': JSON.stringify(trained.tokenizerConfig) } });
  return { dir, model, tokenizer };
}

/** A fresh temporary directory. */
export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** The built command line of the app in `appDir` (`dist/cli.js`), built with tsup when it is missing. */
export function builtCli(appDir: string): string {
  const cli = path.join(appDir, 'dist', 'cli.js');
  if (!fs.existsSync(cli)) {
    const r = spawnSync('npx', ['tsup'], { cwd: appDir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`building the CLI failed:\n${r.stdout}\n${r.stderr}`);
  }
  return cli;
}

/** What a finished CLI process printed and how it ended. */
export interface CliRun {
  /** Exit status (null when it was killed by a signal). */
  readonly code: number | null;
  /** The signal that killed it, if any. */
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run `node cli ...args` to completion. */
export function runCli(cli: string, args: readonly string[], timeoutMs = 120_000): CliRun {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: timeoutMs });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** Start `node cli ...args` and send it `signal` `delayMs` after its stdout matches `trigger`; resolves when it exits. */
export function runAndSignal(cli: string, args: readonly string[], trigger: RegExp, options: { readonly signal?: NodeJS.Signals; readonly delayMs?: number } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let armed = false;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (!armed && trigger.test(stdout)) {
        armed = true;
        setTimeout(() => child.kill(options.signal ?? 'SIGKILL'), options.delayMs ?? 0);
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/**
 * The files (paths relative to the run directories `a` and `b`) whose bytes differ between the two
 * runs, a missing file counting as different: `[]` when a resumed run reproduced the uninterrupted one.
 */
export function differingFiles(a: string, b: string, files: readonly string[]): string[] {
  const read = (dir: string, f: string): Buffer | null => (fs.existsSync(path.join(dir, f)) ? fs.readFileSync(path.join(dir, f)) : null);
  return files.filter((f) => {
    const x = read(a, f);
    const y = read(b, f);
    return x === null || y === null || !x.equals(y);
  });
}

/** The commands of a training app's CLI test around one config file (see {@link appCli}). */
export interface AppCli {
  /** Run with `--config <file> ...args` to completion. */
  run(args: readonly string[]): { status: number | null; stdout: string; stderr: string };
  /** Start with `--config <file> ...args` and SIGKILL it `delayMs` after it prints a line matching `trigger`. */
  runAndKill(args: readonly string[], trigger: RegExp, delayMs: number): Promise<CliRun>;
  /** The records of one `type` in `<out>/metrics.jsonl`. */
  records(out: string, type: string): MetricRecord[];
}

/**
 * The commands of a CLI test: `where` gives the built CLI and the config file (called at each
 * command, so both may be set up in `beforeAll`).
 */
export function appCli(where: () => { readonly cli: string; readonly configFile: string }): AppCli {
  return {
    run: (args) => {
      const r = runCli(where().cli, ['--config', where().configFile, ...args]);
      return { status: r.code, stdout: r.stdout, stderr: r.stderr };
    },
    runAndKill: (args, trigger, delayMs) => runAndSignal(where().cli, ['--config', where().configFile, ...args], trigger, { delayMs }),
    records: (out, type) => readMetrics(path.join(out, 'metrics.jsonl')).filter((r) => r.type === type),
  };
}

/** The suite hooks of the test runner (vitest's `beforeAll` and `afterAll`). */
export interface SuiteHooks {
  beforeAll(fn: () => Promise<void>, timeoutMs?: number): void;
  afterAll(fn: () => void): void;
}

/** A training app's CLI test around one temporary directory and config file (see {@link appCliTest}). */
export interface AppCliTest extends AppCli {
  /** The built CLI (set before the tests). */
  readonly cli: string;
  /** The test's temporary directory (set before the tests, removed after them). */
  readonly dir: string;
  /** `<dir>/run.json`, the config file every command is given (set before the tests). */
  readonly configFile: string;
}

/**
 * The CLI test of the app in `appDir`: before the tests (`hooks.beforeAll`, up to 2 minutes) the
 * CLI is built when it is missing and a temporary directory named `prefix…` is made, holding
 * `run.json` written from `config(dir)` (which may first save models there); after them
 * (`hooks.afterAll`) the directory is removed. The commands are those of {@link appCli}.
 */
export function appCliTest(hooks: SuiteHooks, appDir: string, prefix: string, config: (dir: string) => unknown): AppCliTest {
  let state: { cli: string; dir: string; configFile: string } | undefined;
  const get = () => {
    if (state === undefined) throw new Error('appCliTest: used before its beforeAll hook ran');
    return state;
  };
  hooks.beforeAll(async () => {
    const cli = builtCli(appDir);
    const dir = tempDir(prefix);
    const configFile = path.join(dir, 'run.json');
    state = { cli, dir, configFile };
    fs.writeFileSync(configFile, JSON.stringify(await config(dir)));
  }, 120_000);
  hooks.afterAll(() => {
    if (state !== undefined) fs.rmSync(state.dir, { recursive: true, force: true });
  });
  return {
    ...appCli(() => get()),
    get cli() {
      return get().cli;
    },
    get dir() {
      return get().dir;
    },
    get configFile() {
      return get().configFile;
    },
  };
}

/** What an interrupted run left in its run directory. */
export interface RunDirState {
  /** Step of the latest checkpoint (`checkpoints/latest`); null when none was saved. */
  readonly step: number | null;
  /** Step recorded in that checkpoint's trainer state (equal to `step` when it is complete and loadable); null when none was saved. */
  readonly savedStep: number | null;
  /** Whether the final `model/` was written. */
  readonly modelWritten: boolean;
}

/** The latest checkpoint of the run directory `out` (read in full, so a damaged one throws) and whether `model/` exists. */
export function runDirState(out: string): RunDirState {
  const latest = new CheckpointManager(path.join(out, 'checkpoints')).latest();
  return {
    step: latest?.step ?? null,
    savedStep: latest ? readTrainingCheckpoint(latest.dir).state.step : null,
    modelWritten: fs.existsSync(path.join(out, 'model')),
  };
}

/**
 * `n` synthetic training rows of `T` tokens (ids 4–63 from a seeded LCG; the labels are the next
 * tokens, every fifth masked; two documents per row): the data of the unit tests of a step.
 */
export function syntheticLmRows(n: number, T: number, seed: number): TrainingSample[] {
  let x = seed;
  const next = () => (x = (x * 1103515245 + 12345) % 2147483648) % 60 + 4;
  return Array.from({ length: n }, () => {
    const window = Array.from({ length: T + 1 }, next);
    return {
      tokens: window.slice(0, T),
      labels: window.slice(1),
      lossMask: window.slice(1).map((_, i) => (i % 5 === 3 ? 0 : 1)),
      positionIds: window.slice(0, T).map((_, i) => i),
      documentIds: window.slice(0, T).map((_, i) => (i < T / 2 ? 0 : 1)),
    };
  });
}
