// LoRA training through the trainer's step and checkpoints: only the adapter is optimised and
// stored in the optimizer state, the base never moves, and a resumed run continues bit for bit.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AdamW, LrScheduler, constantSchedule } from '@apertus/ademamix';
import { ApertusModel, LoraAdapter, parseLoraConfig, presetConfig } from '@apertus/model';
import { afterAll, describe, expect, it } from 'vitest';
import { causalLmLoss, collateLm, readTrainingCheckpoint, trainStep, writeTrainingCheckpoint, type TrainerState } from './index';

const CONFIG = presetConfig('tiny', { vocab_size: 48, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 2, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 8, initializer_range: 0.2 });
const batch = collateLm([{ tokens: [1, 5, 9, 13, 2, 1, 7, 8], labels: [5, 9, 13, 2, 1, 7, 8, 2], lossMask: [1, 1, 1, 1, 0, 1, 1, 1] }]);
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-lora-ckpt-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function step(model: ApertusModel, opt: AdamW, sched: LrScheduler): number {
  return trainStep({ params: model.parameters(), optimizer: opt, scheduler: sched, microBatches: [batch], weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(model, b, { normalizer: n }), clip: 1 }).loss;
}

describe('LoRA training checkpoints', () => {
  it('optimise only the adapter, keep the base bit-identical, and resume bit for bit', () => {
    const model = ApertusModel.init(CONFIG, 4);
    const base = new Map([...model.params].map(([n, t]) => [n, t.data.slice()]));
    LoraAdapter.init(CONFIG, parseLoraConfig({ r: 2, lora_alpha: 4, target_modules: 'all-linear' }), 9).attach(model);
    const opt = new AdamW(model.parameters(), { lr: 1e-2, weightDecay: 0 });
    const sched = new LrScheduler(constantSchedule(1e-2));
    const losses = [1, 2, 3].map(() => step(model, opt, sched));
    expect(losses[2]).toBeLessThan(losses[0]!);
    for (const [n, t] of model.params) expect(t.data).toEqual(base.get(n));
    const sd = opt.stateDict();
    const adapterNames = model.parameters().map(([n]) => n);
    expect(adapterNames.every((n) => n.startsWith('base_model.model.') && /lora_[AB]\.weight$/.test(n))).toBe(true);
    for (const k of Object.keys(sd.tensors)) expect(adapterNames.some((n) => k.includes(n))).toBe(true);

    const dir = path.join(root, 'step-3');
    fs.mkdirSync(dir);
    const state: TrainerState = { format: 'apertus-trainer-state', version: 1, step: 3, tokens: 0, samples: 0, scheduler: sched.stateDict(), loader: {}, metrics: [], config: null, extra: {} };
    writeTrainingCheckpoint(dir, { model, optimizer: opt, state });
    expect(fs.existsSync(path.join(dir, 'adapter_model.safetensors'))).toBe(true);
    const loaded = readTrainingCheckpoint(dir);
    expect(loaded.model.adapter).not.toBeNull();
    const opt2 = new AdamW(loaded.model.parameters(), { lr: 1e-2, weightDecay: 0 });
    opt2.loadStateDict(loaded.optimizerState);
    const sched2 = new LrScheduler(constantSchedule(1e-2), loaded.state.scheduler.count);
    const cont = [1, 2].map(() => step(loaded.model, opt2, sched2));
    const ref = [1, 2].map(() => step(model, opt, sched));
    expect(cont).toEqual(ref);
    for (const [n, t] of loaded.model.params) expect(t.data).toEqual(base.get(n));
  });
});
