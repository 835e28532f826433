// End-to-end tests of the built CLI (`dist/cli.js`, produced by `npm test`'s build step or by
// `npx tsup` in apps/pretrain): a run killed with SIGKILL and resumed reproduces the losses and
// the final weights of an uninterrupted run bit for bit; bad input exits with a clear message.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readMetrics, readTrainingCheckpoint, CheckpointManager } from '@apertus/trainer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const APP = path.resolve(import.meta.dirname, '..');
const CLI = path.join(APP, 'dist', 'cli.js');
let dir: string;
let configFile: string;

beforeAll(() => {
  if (!fs.existsSync(CLI)) {
    const r = spawnSync('npx', ['tsup'], { cwd: APP, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`building the CLI failed:\n${r.stdout}\n${r.stderr}`);
  }
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-cli-'));
  configFile = path.join(dir, 'run.json');
  // A very small run: UDHR English, 2 layers × hidden 32, 32-token sequences, 2 per batch, 16 steps.
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      languages: ['eng'],
      vocabSize: 1300,
      model: { hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2 },
      seqLength: 32,
      microBatchSize: 2,
      gradAccumulation: 2,
      steps: 16,
      evalInterval: 8,
      evalSamples: 4,
      sampleTokens: 4,
      checkpointInterval: 4,
      goldfishK: 4,
      goldfishH: 13,
      progress: 'lines',
    }),
  );
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function run(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, '--config', configFile, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Start a run and SIGKILL it `delayMs` after it prints a line matching `trigger`. */
function runAndKill(args: string[], trigger: RegExp, delayMs: number): Promise<{ signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, '--config', configFile, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let armed = false;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (!armed && trigger.test(stdout)) {
        armed = true;
        setTimeout(() => child.kill('SIGKILL'), delayMs);
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (_code, signal) => resolve({ signal, stdout, stderr }));
  });
}

const trainLosses = (out: string) => readMetrics(path.join(out, 'metrics.jsonl')).filter((r) => r.type === 'train').map((r) => [r.step, r.loss]);

describe('apertus-pretrain CLI', () => {
  it('a run killed with SIGKILL (also mid-checkpoint) and resumed reproduces the uninterrupted run bit for bit', async () => {
    const a = path.join(dir, 'a');
    const done = run(['--out', a]);
    expect(done.stderr).not.toMatch(/error/);
    expect(done.status).toBe(0);
    expect(done.stdout).toMatch(/checkpoint saved: .*step-000016/);
    const reference = trainLosses(a);
    expect(reference.map(([s]) => s)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));

    // Run b checkpoints every step (so a kill often lands inside a save) and is killed twice.
    const b = path.join(dir, 'b');
    const first = await runAndKill(['--out', b, '--checkpoint-interval', '1'], /checkpoint saved: .*step-000003/, 15);
    expect(first.signal).toBe('SIGKILL');
    const manager = new CheckpointManager(path.join(b, 'checkpoints'));
    const afterFirst = manager.latest()!;
    expect(afterFirst.step).toBeGreaterThanOrEqual(3);
    expect(afterFirst.step).toBeLessThan(16);
    expect(readTrainingCheckpoint(afterFirst.dir).state.step).toBe(afterFirst.step); // complete and loadable
    expect(fs.existsSync(path.join(b, 'model'))).toBe(false);

    const second = await runAndKill(['--out', b, '--checkpoint-interval', '1', '--resume'], /resuming from/, 40);
    expect(second.signal, second.stdout + second.stderr).toBe('SIGKILL');
    const afterSecond = manager.latest()!;
    expect(afterSecond.step).toBeGreaterThanOrEqual(afterFirst.step);
    expect(readTrainingCheckpoint(afterSecond.dir).state.step).toBe(afterSecond.step);

    const resumed = run(['--out', b, '--resume']);
    expect(resumed.status).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`resuming from .*${CheckpointManager.dirName(afterSecond.step)}`));
    expect(trainLosses(b)).toEqual(reference); // same steps, bit-identical losses, no duplicates
    const evals = (out: string) => readMetrics(path.join(out, 'metrics.jsonl')).filter((r) => r.type === 'eval').map((r) => r.valLoss);
    expect(evals(b)).toEqual(evals(a));
    const weights = (out: string) => fs.readFileSync(path.join(out, 'checkpoints', 'step-000016', 'model.safetensors'));
    expect(weights(b).equals(weights(a))).toBe(true);
    expect(fs.readFileSync(path.join(b, 'model', 'model.safetensors')).equals(fs.readFileSync(path.join(a, 'model', 'model.safetensors')))).toBe(true);
  }, 240_000);

  it('refuses to resume with changed training settings and to start over an existing run', () => {
    const a = path.join(dir, 'a');
    const changed = run(['--out', a, '--resume', '--lr', '0.01']);
    expect(changed.status).toBe(1);
    expect(changed.stderr).toMatch(/cannot resume from .*step-000016: settings differ from the checkpoint's: lr \(0\.003 → 0\.01\)/);
    const fresh = run(['--out', a]);
    expect(fresh.status).toBe(2);
    expect(fresh.stderr).toMatch(/already holds checkpoints \(latest step-000016\); pass --resume/);
  });

  it('rejects invalid flag values and missing data with a message naming them', () => {
    const lr = run(['--out', path.join(dir, 'x'), '--lr', 'fast']);
    expect(lr.status).toBe(2);
    expect(lr.stderr).toBe('apertus-pretrain: error: --lr: lr: expected a number, got "fast"\n');
    const batch = run(['--out', path.join(dir, 'x'), '--micro-batch-size', '-3']);
    expect(batch.status).toBe(2);
    expect(batch.stderr).toMatch(/--micro-batch-size: microBatchSize: expected an integer in \[1, 65536\], got "-3"/);
    const missing = run(['--out', path.join(dir, 'x'), '--data', path.join(dir, 'missing.jsonl')]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/missing\.jsonl: data not found or not accessible \(ENOENT\)/);
    expect(fs.existsSync(path.join(dir, 'x', 'checkpoints'))).toBe(false);
  });
});
