// End-to-end tests of the built CLI (`dist/cli.js`, produced by `npm test`'s build step or by
// `npx tsup` in apps/align), with a tiny random model as the SFT model: runs killed with SIGKILL
// during the reference sampling, during training and inside a checkpoint save, then resumed,
// reproduce the preference data, the losses, the evaluations and the final weights of an
// uninterrupted run bit for bit; bad input exits with a clear message.

import fs from 'node:fs';
import path from 'node:path';
import { loadAdapter, loadCheckpoint } from '@apertus/model';
import { CheckpointManager, readTrainingCheckpoint } from '@apertus/trainer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appCliTest, differingFiles, makeTinyModel } from '@apertus/trainer/testing';

const t = appCliTest({ beforeAll, afterAll }, path.resolve(import.meta.dirname, '..'), 'apertus-align-cli-', async (dir) => ({
  model: (await makeTinyModel(dir, 'sft', 3)).dir,
  languages: ['deu_1996', 'roh_rumgr', 'ita', 'eng'],
  numPrompts: 8,
  maxChars: 150,
  numReferences: 3,
  sampleMaxTokens: 12,
  sampleBatchSize: 2,
  numPairs: 1,
  microBatchSize: 2,
  gradAccumulation: 1,
  epochs: 2,
  lr: 1e-3,
  evalInterval: 4,
  evalMaxTokens: 3,
  checkpointInterval: 2,
  threads: 1,
  progress: 'lines',
}));
const { run, runAndKill, records } = t;

const file = (out: string, ...p: string[]) => fs.readFileSync(path.join(out, ...p));

describe('apertus-align CLI', () => {
  it('runs killed while sampling, while training and while saving, then resumed, reproduce the uninterrupted run bit for bit', async () => {
    const a = path.join(t.dir, 'a');
    const done = run(['--out', a]);
    expect(done.stderr).not.toMatch(/error/);
    expect(done.status).toBe(0);
    expect(done.stdout).toMatch(/data: 8 pairs from 8 prompts \(24 samples/);
    expect(done.stdout).toMatch(/training: QRPO \(apertus, length-normalised, β 5\) on 8 pairs, 8 steps × 2 pairs/);
    expect(done.stdout).toMatch(/checkpoint saved: .*step-000008/);
    const reference = records(a, 'train').map((r) => [r.step, r.loss, r.gradNorm, r.logRatioChosen]);
    expect(reference.map(([s]) => s)).toEqual(Array.from({ length: 8 }, (_, i) => i + 1));
    // step 1 starts from π_ref itself: the policy/reference log-ratios are (numerically) zero
    expect(Math.abs(reference[0]![3] as number)).toBeLessThan(1e-3);

    // b: killed after the first sampling group, so the preparation has to continue.
    const b = path.join(t.dir, 'b');
    const k1 = await runAndKill(['--out', b, '--checkpoint-interval', '1'], /sampled 3 reference completions for prompts 1–2 /, 0);
    expect(k1.signal).toBe('SIGKILL');
    expect(fs.existsSync(path.join(b, 'data', 'pairs.jsonl'))).toBe(false);
    // killed again during training, right after a checkpoint (often inside the next save)
    const k2 = await runAndKill(['--out', b, '--checkpoint-interval', '1', '--resume'], /checkpoint saved: .*step-000003/, 15);
    expect(k2.signal).toBe('SIGKILL');
    expect(k2.stdout).toMatch(/continuing the reference sampling at prompt group [234]\/4/);
    const manager = new CheckpointManager(path.join(b, 'checkpoints'));
    const latest = manager.latest()!;
    expect(latest.step).toBeGreaterThanOrEqual(3);
    expect(latest.step).toBeLessThan(8);
    expect(readTrainingCheckpoint(latest.dir).state.step).toBe(latest.step);

    const resumed = run(['--out', b, '--resume']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/data: reusing .*pairs\.jsonl \(8 pairs from 8 prompts\)/);
    expect(resumed.stdout).toMatch(new RegExp(`resuming from .*${CheckpointManager.dirName(latest.step)}`));
    expect(records(b, 'train').map((r) => [r.step, r.loss, r.gradNorm, r.logRatioChosen])).toEqual(reference);
    expect(records(b, 'eval').map((r) => r.valLoss)).toEqual(records(a, 'eval').map((r) => r.valLoss));
    expect(differingFiles(a, b, ['data/pairs.jsonl', 'checkpoints/step-000008/model.safetensors', 'checkpoints/step-000008/optimizer.safetensors', 'model/model.safetensors'])).toEqual([]);
  }, 300_000);

  it('DPO runs on the same prepared data', () => {
    const a = path.join(t.dir, 'a');
    const d = path.join(t.dir, 'dpo');
    fs.mkdirSync(path.join(d, 'data'), { recursive: true });
    for (const f of ['samples.jsonl', 'rewards.jsonl', 'pairs.jsonl', 'prepared.json']) fs.copyFileSync(path.join(a, 'data', f), path.join(d, 'data', f));
    const r = run(['--out', d, '--loss', 'dpo', '--steps', '2', '--no-eval-translation']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/data: reusing/);
    expect(r.stdout).toMatch(/training: DPO \(β 5\/\|y\|\)/);
    // DPO starts at −log σ(0) = log 2
    expect(records(d, 'train')[0]!.loss).toBeCloseTo(Math.LN2, 3);
  });

  it('LoRA DPO: the reference is the base without the adapter (loss log 2 at the start), the base stays as it was, the adapter is saved in PEFT layout', () => {
    const a = path.join(t.dir, 'a');
    const d = path.join(t.dir, 'lora-dpo');
    fs.mkdirSync(path.join(d, 'data'), { recursive: true });
    for (const f of ['samples.jsonl', 'rewards.jsonl', 'pairs.jsonl', 'prepared.json']) fs.copyFileSync(path.join(a, 'data', f), path.join(d, 'data', f));
    const r = run(['--out', d, '--loss', 'dpo', '--steps', '3', '--lr', '5e-2', '--no-eval-translation', '--lora', '{"r":2,"lora_alpha":4,"target_modules":"all-linear"}']);
    expect(r.status, r.stderr).toBe(0);
    const train = records(d, 'train');
    expect(train[0]!.loss).toBeCloseTo(Math.LN2, 3);
    expect(train[2]!.loss).not.toBeCloseTo(Math.LN2, 3);
    const sft = JSON.parse(fs.readFileSync(t.configFile, 'utf8')).model as string;
    expect(file(d, 'model', 'model.safetensors').equals(fs.readFileSync(path.join(sft, 'model.safetensors')))).toBe(true);
    const { adapter, baseModel } = loadAdapter(path.join(d, 'adapter'), loadCheckpoint(sft).model.config);
    expect(baseModel).toBe(sft);
    expect(adapter.modules.size).toBe(2 * 6);
    const opt = readTrainingCheckpoint(new CheckpointManager(path.join(d, 'checkpoints')).latest()!.dir).optimizerState;
    expect(Object.keys(opt.tensors).length).toBeGreaterThan(0);
    expect(Object.keys(opt.tensors).every((k) => k.includes('.lora_'))).toBe(true);
    expect(run(['--out', path.join(t.dir, 'bad-lora'), '--lora', '{"r":0}']).stderr).toMatch(/--lora.*r: expected an integer ≥ 1/);
  });

  it('refuses changed settings on resume, an existing run, bad flags and bad prompt files', () => {
    const a = path.join(t.dir, 'a');
    const changed = run(['--out', a, '--resume', '--beta', '3']);
    expect(changed.status).toBe(1);
    expect(changed.stderr).toMatch(/cannot resume from .*step-000008: settings differ from the checkpoint's: beta \(null → 3\)/);
    const fresh = run(['--out', a]);
    expect(fresh.status).toBe(2);
    expect(fresh.stderr).toMatch(/already holds checkpoints \(latest step-000008\); pass --resume/);
    const x = path.join(t.dir, 'x');
    const reward = run(['--out', x, '--reward', 'bleu']);
    expect(reward.status).toBe(2);
    expect(reward.stderr).toMatch(/--reward: reward: expected chrf, an http\(s\):\/\/ URL, model:<dir> or js:<module file>, got "bleu"/);
    const transform = run(['--out', x, '--transform', 'log']);
    expect(transform.status).toBe(2);
    expect(transform.stderr).toMatch(/the Apertus QRPO form uses the identity transform; use --qrpo-variant claire/);
    const prompts = path.join(t.dir, 'prompts.jsonl');
    fs.writeFileSync(prompts, '{"prompt": "Hallo"}\n{"messages": []}\n');
    const bad = run(['--out', x, '--prompts', prompts]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/prompts\.jsonl:2: messages: the last message must be a user message/);
    expect(fs.existsSync(path.join(x, 'checkpoints'))).toBe(false);
  });
});
