import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { loadCheckpoint } from '@apertus/model';
import { Tensor, noGrad } from '@apertus/tensor';
import { loadTokenizerFromDirectory } from '@apertus/tokenizer';
import { CheckpointManager, CheckpointWriteError, readMetrics, readTrainingCheckpoint, type TrainingResult as RunResult } from '@apertus/trainer';
import { resolvePretrainConfig, type PretrainConfig } from './config';
import { runPretraining } from './pretrain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let dir: string;
let result: RunResult;
let cfg: PretrainConfig;

function config(out: string, values: Record<string, unknown> = {}): PretrainConfig {
  return resolvePretrainConfig([
    {
      source: 'test',
      values: {
        out,
        languages: ['eng', 'fra'],
        vocabSize: 1400,
        model: { hidden_size: 48, intermediate_size: 96, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2 },
        seqLength: 48,
        microBatchSize: 4,
        steps: 30,
        lr: 5e-3,
        evalInterval: 10,
        evalSamples: 8,
        sampleTokens: 6,
        checkpointInterval: 10,
        keepCheckpoints: 2,
        progress: 'off',
        ...values,
      },
    },
  ]).config;
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-pretrain-'));
  cfg = config(path.join(dir, 'run'));
  result = await runPretraining(cfg, { log: () => {} });
}, 300_000);
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('runPretraining', () => {
  it('trains with a falling validation loss and logs every step, evaluation and sample', () => {
    expect(result.step).toBe(30);
    expect(result.interrupted).toBe(false);
    const records = readMetrics(result.files.metrics);
    expect(records).toEqual(result.metrics);
    const train = records.filter((r) => r.type === 'train');
    expect(train.map((r) => r.step)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(train[0]!.lr).toBe(0); // Megatron's lr(0) = 0 on the first update
    expect(train.every((r) => Number.isFinite(r.loss) && (r.gradNorm as number) > 0)).toBe(true);
    const evals = records.filter((r) => r.type === 'eval');
    expect(evals.map((r) => r.step)).toEqual([0, 10, 20, 30]);
    const v = evals.map((r) => r.valLoss as number);
    expect(v[0]).toBeGreaterThan(Math.log(1400) - 0.5); // ≈ uniform at initialisation
    expect(v[3]).toBeLessThan(v[0]! - 1);
    expect(records.filter((r) => r.type === 'sample').length).toBe(4 * 2);
    // Goldfish (k=50, h=50 by default) removed a few targets: kept < supervised positions.
    expect(train.some((r) => (r.keptTokens as number) < 4 * 48)).toBe(true);
  });

  it('writes the loss curve, the config, pruned checkpoints and a final Hugging Face model', () => {
    const html = fs.readFileSync(result.files.plot, 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html.match(/<polyline data-series="validation loss"[^>]*points="([^"]*)"/)![1]!.split(' ').length).toBe(4);
    expect(JSON.parse(fs.readFileSync(result.files.config, 'utf8')).steps).toBe(30);
    const manager = new CheckpointManager(path.join(cfg.out, 'checkpoints'));
    expect(manager.list().map((c) => c.step)).toEqual([20, 30]);
    expect(result.checkpoint).toBe(manager.latest()!.dir);
    const ckpt = readTrainingCheckpoint(result.checkpoint!);
    expect(ckpt.state.step).toBe(30);
    expect(ckpt.state.metrics).toEqual(result.metrics);
    for (const f of ['tokenizer.json', 'tokenizer_config.json', 'config.json', 'model.safetensors']) expect(fs.existsSync(path.join(result.modelDir!, f))).toBe(true);
    // One EOS for a base model: config.json, generation_config.json and tokenizer_config.json agree.
    const saved = (f: string) => JSON.parse(fs.readFileSync(path.join(result.modelDir!, f), 'utf8'));
    const eos = loadTokenizerFromDirectory(result.modelDir!).eosTokenId;
    expect([saved('config.json').eos_token_id, saved('generation_config.json').eos_token_id, eos]).toEqual([2, 2, 2]);
    // The exported bf16 model computes what the f32 checkpoint computes, up to bf16 rounding.
    const bf16 = loadCheckpoint(result.modelDir!, { precision: 'f32' }).model;
    const ids = Tensor.ints([1, 20, 300, 4, 500, 60], [1, 6]);
    const a = noGrad(() => ckpt.model.forward(ids)).toFloat32();
    const b = noGrad(() => bf16.forward(ids)).toFloat32();
    let diff = 0;
    for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
    expect(diff).toBeLessThan(0.1);
    expect(diff).toBeGreaterThan(0);
  });

  it('an abort signal stops after the current step with a checkpoint; --resume finishes the run identically', async () => {
    const out = path.join(dir, 'stopped');
    const controller = new AbortController();
    let seen = 0;
    const stopped = await runPretraining(config(out), {
      log: (m) => {
        if (m.startsWith('eval @ step 10')) controller.abort();
        seen++;
      },
      signal: controller.signal,
    });
    expect(seen).toBeGreaterThan(0);
    expect(stopped.interrupted).toBe(true);
    expect(stopped.step).toBe(10);
    expect(stopped.modelDir).toBeNull();
    const finished = await runPretraining(config(out), { resume: true, log: () => {} });
    expect(finished.step).toBe(30);
    const losses = (r: RunResult) => r.metrics.filter((m) => m.type === 'train').map((m) => m.loss);
    expect(losses(finished)).toEqual(losses(result));
  });

  it('a full disk during a checkpoint fails with a clear error and keeps the previous checkpoint', async () => {
    const out = path.join(dir, 'full');
    // Simulate a full disk for files under checkpoints/ once the step-10 checkpoint exists.
    const { openSync, writeSync, writeFileSync } = fs;
    const files = new Map<number, string>();
    let armed = false;
    const full = (target: unknown) => armed && String(target).includes(`${path.sep}checkpoints${path.sep}`);
    const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const patched = {
      openSync: (p: fs.PathLike, ...rest: unknown[]) => {
        const fd = (openSync as (...a: unknown[]) => number)(p, ...rest);
        files.set(fd, String(p));
        return fd;
      },
      writeSync: (fd: number, ...rest: unknown[]) => {
        if (full(files.get(fd))) throw enospc();
        return (writeSync as (...a: unknown[]) => number)(fd, ...rest);
      },
      writeFileSync: (p: unknown, ...rest: unknown[]) => {
        if (full(typeof p === 'number' ? files.get(p) : p)) throw enospc();
        return (writeFileSync as (...a: unknown[]) => void)(p, ...rest);
      },
    };
    Object.assign(fs, patched);
    syncBuiltinESMExports();
    let err: unknown = null;
    try {
      await runPretraining(config(out, { steps: 20 }), {
        log: (m) => {
          if (m.startsWith('checkpoint saved') && m.includes('step-000010')) armed = true;
        },
      });
    } catch (e) {
      err = e;
    } finally {
      Object.assign(fs, { openSync, writeSync, writeFileSync });
      syncBuiltinESMExports();
    }
    expect(err).toBeInstanceOf(CheckpointWriteError);
    expect((err as Error).message).toMatch(/cannot write checkpoint .*step-000020: disk full \(no space left on device\); the previous checkpoint .*step-000010 is intact/);
    const manager = new CheckpointManager(path.join(out, 'checkpoints'));
    expect(manager.latest()!.step).toBe(10);
    expect(fs.readdirSync(path.join(out, 'checkpoints')).sort()).toEqual(['latest', 'step-000010']);
    expect(readTrainingCheckpoint(manager.latest()!.dir).state.step).toBe(10);
    // with space again, --resume continues from step 10 to the end
    const resumed = await runPretraining(config(out, { steps: 20 }), { resume: true, log: () => {} });
    expect(resumed.step).toBe(20);
  });
});
