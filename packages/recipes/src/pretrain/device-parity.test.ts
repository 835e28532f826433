// `--device webgpu` against `--device cpu` on the tiny architecture (4 layers, hidden 128, GQA 4/2
// heads, head_dim 32, intermediate 512): the same per-step training losses over 20 steps, the same
// continued losses when a checkpoint saved on one device resumes on the other (both directions),
// and the same 64 greedy tokens. Without a GPU, WebGPU runs on SwiftShader (a CPU Vulkan driver,
// from Debian's chromium); the test sets it when no driver is named, and fails (never skips) with
// what to install when there is none.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApertusModel, generate, presetConfig } from '@apertus/model';
import { currentDevice, SWIFTSHADER_ICD, useDevice } from '@apertus/tensor';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { resolvePretrainConfig } from './config';
import { runPretraining } from './pretrain';

if (process.env.VK_ICD_FILENAMES === undefined && process.env.VK_DRIVER_FILES === undefined) process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;

const STEPS = 20;
const HALF = 15;
/** Loss agreement between devices (relative): f32 kernels that sum in different orders. */
const RTOL = 1e-4;

let root: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-device-'));
});
afterAll(async () => {
  await useDevice('cpu');
  fs.rmSync(root, { recursive: true, force: true });
});

/**
 * The tiny preset's architecture with a small batch: 2 rows of 32 tokens per step (the default
 * run uses 8 × 128), so that 20 steps on SwiftShader stay within CI time. Checkpoints at steps 15
 * and 20; the resumed runs continue from step 15. Learning rate 3e-4 (the default run: 3e-3): at
 * 3e-3 the two trajectories, whose float32 sums differ in order from the first step (~1e-7
 * relative), were measured to part by 2e-4 relative at step 10 — the training dynamics amplify
 * rounding, no kernel is off by that much.
 */
function config(out: string, device: 'cpu' | 'webgpu') {
  return resolvePretrainConfig([{
    source: 'test',
    values: {
      out, device, preset: 'tiny', languages: ['eng', 'fra'], vocabSize: 1400,
      seqLength: 32, microBatchSize: 2, steps: STEPS, lr: 3e-4, evalInterval: STEPS, evalSamples: 2, prompts: [], sampleTokens: 1,
      checkpointInterval: HALF, keepCheckpoints: 0, progress: 'off',
    },
  }]).config;
}

function trainLosses(metrics: readonly { type: string; step?: unknown; loss?: unknown }[]): number[] {
  return metrics.filter((m) => m.type === 'train').map((m) => m.loss as number);
}

function expectLossesClose(got: readonly number[], want: readonly number[]): void {
  expect(got).toHaveLength(want.length);
  got.forEach((g, i) => expect(Math.abs(g - want[i]!) / Math.abs(want[i]!), `step ${i + 1}: ${g} vs ${want[i]}`).toBeLessThanOrEqual(RTOL));
}

/** A copy of `run` whose latest checkpoint is the one at step HALF (as if it had stopped there). */
function stoppedAtHalf(run: string, name: string): string {
  const dir = path.join(root, name);
  fs.cpSync(run, dir, { recursive: true });
  for (const d of fs.readdirSync(path.join(dir, 'checkpoints'))) {
    if (/^step-\d+$/.test(d) && Number(d.slice(5)) > HALF) fs.rmSync(path.join(dir, 'checkpoints', d), { recursive: true });
  }
  fs.writeFileSync(path.join(dir, 'checkpoints', 'latest'), `step-${String(HALF).padStart(6, '0')}\n`);
  fs.rmSync(path.join(dir, 'model'), { recursive: true, force: true });
  return dir;
}

describe('device webgpu against device cpu (tiny architecture)', () => {
  const runs: Record<'cpu' | 'webgpu', { dir: string; losses: number[] }> = {} as never;

  test('20 training steps give the same per-step losses within 1e-4 relative', async () => {
    for (const device of ['cpu', 'webgpu'] as const) {
      const dir = path.join(root, device);
      const r = await runPretraining(config(dir, device), { log: () => {} });
      expect(currentDevice().device).toBe(device);
      runs[device] = { dir, losses: trainLosses(r.metrics) };
    }
    expect(runs.cpu.losses).toHaveLength(STEPS);
    // The losses move: the comparison is not of 20 copies of ln(V).
    expect(runs.cpu.losses[STEPS - 1]!).toBeLessThan(runs.cpu.losses[0]! - 0.5);
    expectLossesClose(runs.webgpu.losses, runs.cpu.losses);
  }, 1_800_000);

  test('a checkpoint saved on one device resumes on the other with the same continued losses', async () => {
    for (const [from, to] of [['cpu', 'webgpu'], ['webgpu', 'cpu']] as const) {
      const dir = stoppedAtHalf(runs[from].dir, `${from}-to-${to}`);
      const r = await runPretraining(config(dir, to), { resume: true, log: () => {} });
      expect(currentDevice().device).toBe(to);
      const losses = trainLosses(r.metrics);
      // Steps 1–15 are the saved run's records; 16–20 were computed on the other device.
      expect(losses.slice(0, HALF)).toEqual(runs[from].losses.slice(0, HALF));
      expectLossesClose(losses.slice(HALF), runs[from].losses.slice(HALF));
    }
  }, 1_800_000);

  test('greedy generation of 64 tokens gives identical tokens', async () => {
    // The tiny preset as initialised (vocabulary 8192): 20 training steps on two sentences leave a
    // model that repeats one token, while random weights give varied, well-separated argmaxes.
    const model = ApertusModel.init(presetConfig('tiny'), 7);
    const prompt = [1, 5, 17, 300, 42];
    const opts = { maxTokens: 64, temperature: 0, stopTokenIds: [] as number[] };
    await useDevice('cpu');
    const cpu = generate(model, prompt, opts).tokens;
    await useDevice('webgpu');
    const gpu = generate(model, prompt, opts).tokens;
    expect(cpu).toHaveLength(64);
    expect(new Set(cpu).size).toBeGreaterThan(8);
    expect(gpu).toEqual(cpu);
  }, 1_800_000);
});
