// End-to-end tests of the built CLI (`dist/cli.js`, produced by `npm test`'s build step or by
// `npx tsup` in apps/sft), on a tiny random base model and the bundled UDHR task restricted to
// four languages: a run killed with SIGKILL (also mid-checkpoint) and resumed reproduces the
// losses, evaluations and final weights of an uninterrupted run bit for bit; bad input exits with
// a clear message.

import fs from 'node:fs';
import path from 'node:path';
import { CheckpointManager } from '@apertus/trainer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appCliTest, differingFiles, makeTinyModel, runDirState } from '@apertus/trainer/testing';

const t = appCliTest({ beforeAll, afterAll }, path.resolve(import.meta.dirname, '..'), 'apertus-sft-cli-', async (dir) => ({
  model: (await makeTinyModel(dir)).dir,
  languages: ['deu_1996', 'roh_rumgr', 'ita', 'eng'],
  maxExamples: 40,
  maxChars: 150,
  maxLength: 320,
  microBatchSize: 2,
  gradAccumulation: 2,
  steps: 10,
  lr: 3e-3,
  evalInterval: 5,
  evalMaxTokens: 3,
  checkpointInterval: 2,
  threads: 1,
  progress: 'lines',
}));
const { run, runAndKill, records } = t;

describe('apertus-sft CLI', () => {
  it('a run killed with SIGKILL (also mid-checkpoint) and resumed reproduces the uninterrupted run bit for bit', async () => {
    const a = path.join(t.dir, 'a');
    const done = run(['--out', a]);
    expect(done.stderr).not.toMatch(/error/);
    expect(done.status).toBe(0);
    expect(done.stdout).toMatch(/data: UDHR translation task, 40 conversations/);
    expect(done.stdout).toMatch(/translation @ step 0: German → Romansh/);
    expect(done.stdout).toMatch(/checkpoint saved: .*step-000010/);
    const reference = records(a, 'train').map((r) => [r.step, r.loss, r.lossTokens]);
    expect(reference.map(([s]) => s)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    // the conversations of the bundled task are written out as JSONL
    const lines = fs.readFileSync(path.join(a, 'data', 'train.jsonl'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(40);
    expect(JSON.parse(lines[0]!).messages[1].role).toBe('assistant');
    // the final model is a chat model: generation stops at <|assistant_end|>
    expect(JSON.parse(fs.readFileSync(path.join(a, 'model', 'generation_config.json'), 'utf8')).eos_token_id[0]).toBe(68);

    // Run b checkpoints every step (so a kill often lands inside a save) and is killed twice.
    const b = path.join(t.dir, 'b');
    const first = await runAndKill(['--out', b, '--checkpoint-interval', '1'], /checkpoint saved: .*step-000003/, 15);
    expect(first.signal).toBe('SIGKILL');
    const afterFirst = runDirState(b);
    expect(afterFirst).toEqual({ step: afterFirst.savedStep, savedStep: expect.any(Number), modelWritten: false });
    expect(afterFirst.step).toBeGreaterThanOrEqual(3);
    expect(afterFirst.step).toBeLessThan(10);

    // killed again right after the first checkpoint of the resumed run (often inside the next save)
    const second = await runAndKill(['--out', b, '--checkpoint-interval', '1', '--resume'], /resuming from[\s\S]*checkpoint saved/, 15);
    expect(second.signal, second.stdout + second.stderr).toBe('SIGKILL');
    const afterSecond = runDirState(b);
    expect(afterSecond.step).toBeGreaterThan(afterFirst.step!);
    expect(afterSecond.step).toBeLessThan(10);

    const resumed = run(['--out', b, '--resume']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`resuming from .*${CheckpointManager.dirName(afterSecond.step!)}`));
    expect(records(b, 'train').map((r) => [r.step, r.loss, r.lossTokens])).toEqual(reference);
    expect(records(b, 'eval').map((r) => r.valLoss)).toEqual(records(a, 'eval').map((r) => r.valLoss));
    expect(records(b, 'translation').map((r) => [r.step, r.chrf])).toEqual(records(a, 'translation').map((r) => [r.step, r.chrf]));
    expect(differingFiles(a, b, ['checkpoints/step-000010/model.safetensors', 'checkpoints/step-000010/optimizer.safetensors', 'model/model.safetensors'])).toEqual([]);
  }, 300_000);

  it('refuses to resume with changed training settings and to start over an existing run', () => {
    const a = path.join(t.dir, 'a');
    const changed = run(['--out', a, '--resume', '--lr', '0.01']);
    expect(changed.status).toBe(1);
    expect(changed.stderr).toMatch(/cannot resume from .*step-000010: settings differ from the checkpoint's: lr \(0\.003 → 0\.01\)/);
    const fresh = run(['--out', a]);
    expect(fresh.status).toBe(2);
    expect(fresh.stderr).toMatch(/already holds checkpoints \(latest step-000010\); pass --resume/);
  });

  it('rejects invalid flag values, a missing model and a bad conversation file with a message naming them', () => {
    const x = path.join(t.dir, 'x');
    const lr = run(['--out', x, '--lr', 'fast']);
    expect(lr.status).toBe(2);
    expect(lr.stderr).toBe('apertus-sft: error: --lr: lr: expected a number, got "fast"\n');
    const date = run(['--out', x, '--date', 'yesterday']);
    expect(date.status).toBe(2);
    expect(date.stderr).toMatch(/--date: date: expected a YYYY-MM-DD date, got "yesterday"/);
    const missing = run(['--out', x, '--model', path.join(t.dir, 'nope')]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/nope: no such file or directory, and not a Hub id \(owner\/name\[@revision\]\[:QUANT\]\)\n$/);
    const bad = path.join(t.dir, 'bad.jsonl');
    fs.writeFileSync(bad, '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]}\n{"messages": [{"role": "user", "content": "hi"}]}\n');
    const badData = run(['--out', x, '--data', bad]);
    expect(badData.status).toBe(1);
    expect(badData.stderr).toMatch(/bad\.jsonl:2: messages: no assistant message/);
    expect(fs.existsSync(path.join(x, 'checkpoints'))).toBe(false);
  });
});
