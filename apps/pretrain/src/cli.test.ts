// End-to-end tests of the built CLI (`dist/cli.js`, produced by `npm test`'s build step or by
// `npx tsup` in apps/pretrain): a run killed with SIGKILL and resumed reproduces the losses and
// the final weights of an uninterrupted run bit for bit; SIGTERM / SIGINT save a checkpoint and
// exit; the run directory is locked; a refused resume changes nothing; bad input exits with a
// clear message.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readTrainingCheckpoint, CheckpointManager } from '@apertus/trainer';
import { appCliTest, runAndSignal, runDirState } from '@apertus/trainer/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// A very small run: UDHR English, 2 layers × hidden 32, 32-token sequences, 2 per batch, 16 steps.
const t = appCliTest({ beforeAll, afterAll }, path.resolve(import.meta.dirname, '..'), 'apertus-cli-', () => ({
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
}));
const { run, runAndKill, records } = t;

/** Every file below `root` with its size and contents hash (what a refused command must leave as it was). */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fs.readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!f.isFile()) continue;
    const p = path.join(f.parentPath, f.name);
    out[path.relative(root, p)] = `${fs.statSync(p).mtimeMs}:${createHash('sha256').update(fs.readFileSync(p)).digest('hex')}`;
  }
  return out;
}

const trainLosses = (out: string) => records(out, 'train').map((r) => [r.step, r.loss]);

describe('apertus-pretrain CLI', () => {
  it('a run killed with SIGKILL (also mid-checkpoint) and resumed reproduces the uninterrupted run bit for bit', async () => {
    const a = path.join(t.dir, 'a');
    const done = run(['--out', a]);
    expect(done.stderr).not.toMatch(/error/);
    expect(done.status).toBe(0);
    expect(done.stdout).toMatch(/checkpoint saved: .*step-000016/);
    // The progress line names the device.
    expect(done.stderr).toMatch(/^step 16\/16 \(100%\) \| loss [\d.]+ \| lr \S+ \| \S+ tok\/s \| cpu \| /m);
    const reference = trainLosses(a);
    expect(reference.map(([s]) => s)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));

    // Run b checkpoints every step (so a kill often lands inside a save) and is killed twice.
    const b = path.join(t.dir, 'b');
    const first = await runAndKill(['--out', b, '--checkpoint-interval', '1'], /checkpoint saved: .*step-000003/, 15);
    expect(first.signal).toBe('SIGKILL');
    const afterFirst = runDirState(b);
    expect(afterFirst).toEqual({ step: afterFirst.savedStep, savedStep: expect.any(Number), modelWritten: false }); // complete and loadable
    expect(afterFirst.step).toBeGreaterThanOrEqual(3);
    expect(afterFirst.step).toBeLessThan(16);

    const second = await runAndKill(['--out', b, '--checkpoint-interval', '1', '--resume'], /resuming from/, 40);
    expect(second.signal, second.stdout + second.stderr).toBe('SIGKILL');
    const afterSecond = runDirState(b);
    expect(afterSecond.step).toBeGreaterThanOrEqual(afterFirst.step!);
    expect(afterSecond.savedStep).toBe(afterSecond.step);

    const resumed = run(['--out', b, '--resume']);
    expect(resumed.status).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`resuming from .*${CheckpointManager.dirName(afterSecond.step!)}`));
    expect(trainLosses(b)).toEqual(reference); // same steps, bit-identical losses, no duplicates
    const evals = (out: string) => records(out, 'eval').map((r) => r.valLoss);
    expect(evals(b)).toEqual(evals(a));
    const weights = (out: string) => fs.readFileSync(path.join(out, 'checkpoints', 'step-000016', 'model.safetensors'));
    expect(weights(b).equals(weights(a))).toBe(true);
    expect(fs.readFileSync(path.join(b, 'model', 'model.safetensors')).equals(fs.readFileSync(path.join(a, 'model', 'model.safetensors')))).toBe(true);
  }, 240_000);

  it('SIGTERM and SIGINT each finish the step, save a resumable checkpoint and exit 128 + n; --resume then matches the uninterrupted run', async () => {
    const reference = trainLosses(path.join(t.dir, 'a'));
    for (const [signal, code] of [['SIGTERM', 143], ['SIGINT', 130]] as const) {
      const out = path.join(t.dir, `signal-${signal}`);
      const stopped = await runAndSignal(t.cli, ['--config', t.configFile, '--out', out], /checkpoint saved: .*step-000004/, { signal });
      expect(stopped.code, stopped.stderr).toBe(code);
      expect(stopped.stderr).toContain(`${signal}: finishing the current step and saving a checkpoint`);
      const step = Number(/interrupted: (\d+) of 16 steps/.exec(stopped.stdout)![1]);
      expect(step).toBeGreaterThanOrEqual(4);
      expect(step).toBeLessThan(16);
      const latest = new CheckpointManager(path.join(out, 'checkpoints')).latest()!;
      expect(latest.step).toBe(step);
      expect(readTrainingCheckpoint(latest.dir).state.step).toBe(step);
      expect(fs.existsSync(path.join(out, 'model'))).toBe(false);
      expect(fs.existsSync(path.join(out, 'run.lock'))).toBe(false);
      const resumed = run(['--out', out, '--resume']);
      expect(resumed.status, resumed.stderr).toBe(0);
      expect(trainLosses(out)).toEqual(reference);
    }
  }, 300_000);

  it('a run directory is locked by its owner: a second run is refused, a stale lock is taken over', async () => {
    const out = path.join(t.dir, 'locked');
    // A run far too long to finish during the test: it holds the lock until it is killed.
    const child = spawn(process.execPath, [t.cli, '--config', t.configFile, '--out', out, '--steps', '100000'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    await new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => ((stdout += d.toString()), /checkpoint saved/.test(stdout) && resolve())));
    const second = run(['--out', out, '--resume', '--steps', '100000']);
    expect(second.status).toBe(1);
    expect(second.stderr).toMatch(new RegExp(`run\\.lock: the run directory is in use by process ${child.pid} on ${os.hostname()}`));
    child.kill('SIGKILL');
    await new Promise((resolve) => child.on('exit', resolve));
    expect(JSON.parse(fs.readFileSync(path.join(out, 'run.lock'), 'utf8')).pid).toBe(child.pid); // left behind by the killed owner
    const resumed = run(['--out', out, '--overwrite', '--steps', '4']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`taking over the stale lock of process ${child.pid}`));
    expect(fs.existsSync(path.join(out, 'run.lock'))).toBe(false);
  }, 240_000);

  it('refuses to resume with changed training settings or a damaged checkpoint, changing nothing on disk', () => {
    const a = path.join(t.dir, 'a');
    const before = snapshot(a);
    const changed = run(['--out', a, '--resume', '--lr', '0.01']);
    expect(changed.status).toBe(1);
    expect(changed.stderr).toMatch(/cannot resume from .*step-000016: settings differ from the checkpoint's: lr \(0\.003 → 0\.01\)/);
    expect(snapshot(a)).toEqual(before);
    // A truncated checkpoint file: a one-line typed error naming the file, no stack trace.
    const c = path.join(t.dir, 'damaged');
    fs.cpSync(a, c, { recursive: true });
    const weights = path.join(c, 'checkpoints', 'step-000016', 'model.safetensors');
    fs.truncateSync(weights, fs.statSync(weights).size - 64);
    const damagedBefore = snapshot(c);
    const damaged = run(['--out', c, '--resume', '--steps', '16']);
    expect(damaged.status).toBe(1);
    expect(damaged.stderr).toMatch(/^apertus-pretrain: .*step-000016\/model\.safetensors: checksum mismatch \(sha256 [0-9a-f]{64}, expected [0-9a-f]{64}\): the file is truncated or damaged\n$/);
    expect(snapshot(c)).toEqual(damagedBefore);
    const fresh = run(['--out', a]);
    expect(fresh.status).toBe(2);
    expect(fresh.stderr).toMatch(/already holds checkpoints \(latest step-000016\); pass --resume/);
  });

  it('rejects invalid flag values and missing data with a message naming them', () => {
    const lr = run(['--out', path.join(t.dir, 'x'), '--lr', 'fast']);
    expect(lr.status).toBe(2);
    expect(lr.stderr).toBe('apertus-pretrain: --lr: lr: expected a number, got "fast"\n');
    const batch = run(['--out', path.join(t.dir, 'x'), '--micro-batch-size', '-3']);
    expect(batch.status).toBe(2);
    expect(batch.stderr).toMatch(/--micro-batch-size: microBatchSize: expected an integer in \[1, 65536\], got "-3"/);
    const missing = run(['--out', path.join(t.dir, 'x'), '--data', path.join(t.dir, 'missing.jsonl')]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/missing\.jsonl: data not found or not accessible \(ENOENT\)/);
    expect(fs.existsSync(path.join(t.dir, 'x', 'checkpoints'))).toBe(false);
    const device = run(['--out', path.join(t.dir, 'x'), '--device', 'tpu']);
    expect(device.status).toBe(2);
    expect(device.stderr).toBe("apertus-pretrain: --device: 'tpu' is invalid: allowed choices are cpu, webgpu.\n");
  });

  it('--device webgpu without a Vulkan driver fails with what is missing and what to install, before touching --out', () => {
    const before = process.env.VK_ICD_FILENAMES;
    process.env.VK_ICD_FILENAMES = path.join(t.dir, 'no-such-icd.json');
    try {
      const r = run(['--out', path.join(t.dir, 'gpu'), '--device', 'webgpu']);
      expect(r.status).toBe(1);
      // The last line is ours (the Vulkan loader and Dawn print their own warnings before it), with no stack.
      const last = r.stderr.trimEnd().split('\n').at(-1)!;
      expect(last).toMatch(/^apertus-pretrain: webgpu: no WebGPU adapter .*no Vulkan driver: VK_ICD_FILENAMES names .*no-such-icd\.json, which does not exist; .*apt install chromium and set VK_ICD_FILENAMES=\/usr\/lib\/chromium\/vk_swiftshader_icd\.json/);
      expect(r.stderr).not.toMatch(/\.(js|ts):\d+:\d+/);
      expect(fs.existsSync(path.join(t.dir, 'gpu'))).toBe(false);
    } finally {
      if (before === undefined) delete process.env.VK_ICD_FILENAMES;
      else process.env.VK_ICD_FILENAMES = before;
    }
  });
});
