import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { AdEMAMix, LrScheduler, constantSchedule } from '@apertus/ademamix';
import { ApertusModel, loadCheckpoint, presetConfig } from '@apertus/model';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CHECKSUM_FILE,
  CheckpointManager,
  CheckpointReadError,
  writeChecksums,
  CheckpointWriteError,
  LATEST_FILE,
  causalLmLoss,
  collateLm,
  readTrainerState,
  readTrainingCheckpoint,
  trainStep,
  writeTrainingCheckpoint,
  type TrainerState,
} from './index';

const CONFIG = presetConfig('tiny', { vocab_size: 48, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 8 });

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-ckpt-'));
});
afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

function state(step: number, extra: Record<string, number> = {}): TrainerState {
  return { format: 'apertus-trainer-state', version: 1, step, tokens: step * 10, samples: step, scheduler: { count: step }, loader: { epoch: 0, cursor: step, seed: 1 }, metrics: [{ type: 'train', step, loss: 1 / (step + 1) }], config: null, extra };
}

const batch = collateLm([{ tokens: [1, 5, 9, 13, 2, 1, 7, 8], labels: [5, 9, 13, 2, 1, 7, 8, 2], lossMask: [1, 1, 1, 1, 0, 1, 1, 1] }]);

function trained(steps: number): { model: ApertusModel; opt: AdEMAMix; sched: LrScheduler } {
  const model = ApertusModel.init(CONFIG, 4);
  const opt = new AdEMAMix(model.parameters(), { lr: 1e-2, alpha: 8, alphaWarmup: 10, beta3Warmup: 10, weightDecay: 0.1 });
  const sched = new LrScheduler(constantSchedule(1e-2, { warmup: 3 }));
  for (let i = 0; i < steps; i++) step(model, opt, sched);
  return { model, opt, sched };
}

function step(model: ApertusModel, opt: AdEMAMix, sched: LrScheduler): number {
  return trainStep({ params: model.parameters(), optimizer: opt, scheduler: sched, microBatches: [batch], weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(model, b, { normalizer: n }), clip: 1 }).loss;
}

/** Replace fs.writeSync so that the `failAt`-th call (1-based) throws ENOSPC; returns a restore function. */
function diskFullAfter(failAt: number): { restore: () => void; calls: () => number } {
  const original = fs.writeSync;
  let calls = 0;
  (fs as { writeSync: typeof fs.writeSync }).writeSync = ((...args: Parameters<typeof fs.writeSync>) => {
    calls++;
    if (calls >= failAt) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
    return (original as (...a: unknown[]) => number)(...args);
  }) as typeof fs.writeSync;
  syncBuiltinESMExports();
  return {
    restore: () => {
      (fs as { writeSync: typeof fs.writeSync }).writeSync = original;
      syncBuiltinESMExports();
    },
    calls: () => calls,
  };
}

describe('CheckpointManager', () => {
  it('names, lists, points at the latest and prunes to keepLast', () => {
    const m = new CheckpointManager(root, { keepLast: 2 });
    expect(m.latest()).toBeNull();
    for (const s of [3, 6, 9]) m.save(s, (dir) => fs.writeFileSync(path.join(dir, 'x.txt'), String(s)));
    expect(fs.readdirSync(root).sort()).toEqual([LATEST_FILE, 'step-000006', 'step-000009']);
    expect(fs.readFileSync(path.join(root, LATEST_FILE), 'utf8')).toBe('step-000009\n');
    expect(m.latest()).toEqual({ step: 9, dir: path.join(root, 'step-000009') });
    expect(m.list().map((c) => c.step)).toEqual([6, 9]);
    expect(fs.readFileSync(path.join(root, 'step-000009', 'x.txt'), 'utf8')).toBe('9');
    expect(CheckpointManager.dirName(1234567)).toBe('step-1234567');
  });

  it('falls back to the newest complete directory when the pointer is missing or dangling', () => {
    const m = new CheckpointManager(root, { keepLast: 0 });
    m.save(1, () => {});
    m.save(2, () => {});
    fs.writeFileSync(path.join(root, LATEST_FILE), 'step-000099\n');
    expect(m.latest()?.step).toBe(2);
    fs.rmSync(path.join(root, LATEST_FILE));
    expect(m.latest()?.step).toBe(2);
    // leftovers of an interrupted save are ignored and cleaned up by the next save
    fs.mkdirSync(path.join(root, '.step-000003.tmp-1-x-0'));
    expect(m.list().map((c) => c.step)).toEqual([1, 2]);
    m.save(4, () => {});
    expect(fs.readdirSync(root).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('a writer that throws leaves latest on the previous checkpoint and no partial directory', () => {
    const m = new CheckpointManager(root);
    m.save(5, (dir) => fs.writeFileSync(path.join(dir, 'a'), 'ok'));
    const err = (() => {
      try {
        m.save(10, (dir) => {
          fs.writeFileSync(path.join(dir, 'a'), 'half');
          throw new Error('crash in the middle');
        });
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(CheckpointWriteError);
    expect((err as CheckpointWriteError).previous).toBe(path.join(root, 'step-000005'));
    expect((err as CheckpointWriteError).diskFull).toBe(false);
    expect(fs.readdirSync(root).sort()).toEqual([LATEST_FILE, 'step-000005']);
    expect(m.latest()?.step).toBe(5);
  });

  it('rejects invalid options with typed errors', () => {
    expect(() => new CheckpointManager(root, { keepLast: -1 })).toThrow(/keepLast/);
    expect(() => new CheckpointManager(root).save(-2, () => {})).toThrow(/step/);
  });
});

describe('training checkpoints', () => {
  it('round-trips weights, optimizer moments and state bit-exactly, and training continues identically', () => {
    const a = trained(3);
    const m = new CheckpointManager(root);
    const dir = m.save(3, (tmp) => writeTrainingCheckpoint(tmp, { model: a.model, optimizer: a.opt, state: state(3, { best: 1.5 }), files: { 'tokenizer.json': '{}' } }));
    for (const f of ['config.json', 'generation_config.json', 'model.safetensors', 'optimizer.safetensors', 'optimizer.json', 'trainer_state.json', 'tokenizer.json']) {
      expect(fs.existsSync(path.join(dir, f))).toBe(true);
    }
    const loaded = readTrainingCheckpoint(dir);
    for (const [name, p] of a.model.parameters()) expect(loaded.model.params.get(name)!.data).toEqual(p.data);
    expect(loaded.state).toEqual(state(3, { best: 1.5 }));
    // the HF directory alone loads with @apertus/model
    expect(loadCheckpoint(dir, { precision: 'f32' }).model.config).toEqual(a.model.config);

    const opt = new AdEMAMix(loaded.model.parameters(), { lr: 1e-2, alpha: 8, alphaWarmup: 10, beta3Warmup: 10, weightDecay: 0.1 });
    opt.loadStateDict(loaded.optimizerState);
    const sched = new LrScheduler(constantSchedule(1e-2, { warmup: 3 }), loaded.state.scheduler.count);
    const cont = [1, 2, 3].map(() => step(loaded.model, opt, sched));
    const ref = [1, 2, 3].map(() => step(a.model, a.opt, a.sched));
    expect(cont).toEqual(ref); // bit-identical losses
    for (const [name, p] of a.model.parameters()) expect(loaded.model.params.get(name)!.data).toEqual(p.data);
  });

  it('a full disk at any write leaves latest on the previous complete checkpoint (every failure point)', () => {
    const a = trained(2);
    const m = new CheckpointManager(root);
    m.save(2, (tmp) => writeTrainingCheckpoint(tmp, { model: a.model, optimizer: a.opt, state: state(2) }));
    step(a.model, a.opt, a.sched);
    // Count the write calls of one save, then fail at each of them in turn.
    const probe = diskFullAfter(Number.POSITIVE_INFINITY);
    const probeRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-probe-'));
    try {
      new CheckpointManager(probeRoot).save(3, (tmp) => writeTrainingCheckpoint(tmp, { model: a.model, optimizer: a.opt, state: state(3) }));
    } finally {
      probe.restore();
      fs.rmSync(probeRoot, { recursive: true, force: true });
    }
    const total = probe.calls();
    expect(total).toBeGreaterThan(3);
    for (let failAt = 1; failAt <= total; failAt++) {
      const fault = diskFullAfter(failAt);
      let err: unknown = null;
      try {
        m.save(3, (tmp) => writeTrainingCheckpoint(tmp, { model: a.model, optimizer: a.opt, state: state(3) }));
      } catch (e) {
        err = e;
      } finally {
        fault.restore();
      }
      expect(err, `failure at write ${failAt}`).toBeInstanceOf(CheckpointWriteError);
      expect((err as CheckpointWriteError).diskFull).toBe(true);
      expect((err as Error).message).toMatch(/disk full.*step-000002 is intact/);
      expect(fs.readdirSync(root).sort()).toEqual([LATEST_FILE, 'step-000002']);
      expect(m.latest()?.step).toBe(2);
      expect(readTrainerState(m.latest()!.dir).step).toBe(2);
    }
    // and with space again the save succeeds
    m.save(3, (tmp) => writeTrainingCheckpoint(tmp, { model: a.model, optimizer: a.opt, state: state(3) }));
    expect(readTrainingCheckpoint(m.latest()!.dir).state.step).toBe(3);
  });

  it('reports corrupt or missing checkpoint files with the file and field', () => {
    const a = trained(1);
    const m = new CheckpointManager(root);
    const dir = m.save(1, (tmp) => writeTrainingCheckpoint(tmp, { model: a.model, optimizer: a.opt, state: state(1) }));
    const st = path.join(dir, 'trainer_state.json');
    fs.writeFileSync(st, JSON.stringify({ ...state(1), step: -1 }));
    // The manifest catches the change before anything is parsed …
    expect(() => readTrainingCheckpoint(dir)).toThrow(CheckpointReadError);
    expect(() => readTrainingCheckpoint(dir)).toThrow(/trainer_state\.json: checksum mismatch \(sha256 [0-9a-f]{64}, expected [0-9a-f]{64}\): the file is truncated or damaged/);
    // … and the fields are still validated when the manifest agrees.
    writeChecksums(dir);
    expect(() => readTrainingCheckpoint(dir)).toThrow(/trainer_state\.json \(step\): expected a non-negative integer/);
    fs.writeFileSync(st, '{"format": "apertus-trainer-state", "ver');
    writeChecksums(dir);
    expect(() => readTrainingCheckpoint(dir)).toThrow(/invalid JSON/);
    fs.writeFileSync(st, JSON.stringify(state(1)));
    writeChecksums(dir);
    fs.rmSync(path.join(dir, 'optimizer.safetensors'));
    expect(() => readTrainingCheckpoint(dir)).toThrow(/optimizer\.safetensors: listed in checksums\.sha256 but missing/);
    fs.rmSync(path.join(dir, CHECKSUM_FILE));
    expect(() => readTrainingCheckpoint(dir)).toThrow(/checksums\.sha256: missing/);
    expect(() => readTrainingCheckpoint(path.join(root, 'nope'))).toThrow(/checkpoint directory not found/);
  });

  it('a truncated or bit-flipped checkpoint is a typed error naming the file; a NaN weight names the tensor', () => {
    const a = trained(1);
    const m = new CheckpointManager(root);
    const dir = m.save(1, (tmp) => writeTrainingCheckpoint(tmp, { model: a.model, optimizer: a.opt, state: state(1) }));
    // `sha256sum -c` reads the same manifest.
    const lines = fs.readFileSync(path.join(dir, CHECKSUM_FILE), 'utf8').trim().split('\n');
    expect(lines.map((l) => l.slice(66)).sort()).toEqual(['config.json', 'generation_config.json', 'model.safetensors', 'optimizer.json', 'optimizer.safetensors', 'trainer_state.json']);
    const weights = path.join(dir, 'model.safetensors');
    const bytes = fs.readFileSync(weights);
    fs.writeFileSync(weights, bytes.subarray(0, bytes.length - 100));
    expect(() => readTrainingCheckpoint(dir)).toThrow(CheckpointReadError);
    expect(() => readTrainingCheckpoint(dir)).toThrow(/model\.safetensors: checksum mismatch/);
    const flipped = Buffer.from(bytes);
    flipped[flipped.length - 1]! ^= 0x10;
    fs.writeFileSync(weights, flipped);
    expect(() => readTrainingCheckpoint(dir)).toThrow(/model\.safetensors: checksum mismatch/);
    // A checkpoint whose weights hold a NaN (a diverged run saved as is) is refused with the
    // tensor's name, by the loader's finiteness check (@apertus/model), before any training state is built.
    const nan = Buffer.from(bytes);
    nan.writeFloatLE(Number.NaN, nan.length - 4);
    fs.writeFileSync(weights, nan);
    writeChecksums(dir);
    const err = (() => {
      try {
        readTrainingCheckpoint(dir);
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(CheckpointReadError);
    expect((err as Error).message).toMatch(/cannot load the model \(.*model\.safetensors: model\.norm\.weight: holds a non-finite value \(NaN or ±Inf\) at element \d+/);
  });
});
