// The SFT objective against an independent computation: each conversation scored alone (no
// padding, default positions) with a float64 log-softmax written here, summed over its assistant
// tokens only, divided by the supervised tokens of the whole step. Also: gradient accumulation
// over micro-batches equals one big batch, and the schedule is
// Hugging Face's linear warm-up / decay.

import fs from 'node:fs';
import path from 'node:path';
import { backward, noGrad, Tensor } from '@apertus/tensor';
import { collateSft, packSft, tokenizeSftDataset, type SftBatch, type SftExample } from '@apertus/posttrain';
import { LrScheduler } from '@apertus/ademamix';
import { loadAdapter, loadCheckpoint } from '@apertus/model';
import { resolveModel } from '@apertus/hub';
import { ConfigError, epochSteps, linearDecaySchedule, readOptimizerState } from '@apertus/trainer';
import { makeTinyModel, tempDir, type TinyModel } from '@apertus/trainer/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveSftConfig } from './config';
import { lmBatchOfSft } from './batches';
import { runSft, sftLoss } from './sft';

const collate = (rows: readonly SftExample[], padId: number): SftBatch => collateSft(rows, { padId });

const resolveModelDir = async (location: string): Promise<string> => (await resolveModel(location)).path;

let root: string;
let tiny: TinyModel;
let examples: SftExample[];

beforeAll(async () => {
  root = tempDir('apertus-sft-unit-');
  tiny = await makeTinyModel(root);
  const conversations = [
    { messages: [{ role: 'user' as const, content: 'Translate from German to Italian:\nAlle Menschen sind frei.' }, { role: 'assistant' as const, content: 'Tutti gli esseri umani nascono liberi.' }] },
    {
      messages: [
        { role: 'system' as const, content: 'Be brief.' },
        { role: 'user' as const, content: 'Hallo' },
        { role: 'assistant' as const, content: 'Allegra!' },
        { role: 'user' as const, content: 'Und auf Englisch?' },
        { role: 'assistant' as const, content: 'Hello!' },
      ],
    },
    { messages: [{ role: 'user' as const, content: 'Article 3?' }, { role: 'assistant' as const, content: 'Everyone has the right to life, liberty and security of person.' }] },
    { messages: [{ role: 'user' as const, content: 'Ciao' }, { role: 'assistant' as const, content: 'Bun di' }] },
  ];
  examples = (await tokenizeSftDataset(tiny.tokenizer, conversations, { date: '2025-09-01' })).examples;
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** Σ over assistant targets of −log p(target), one row alone, float64 log-softmax. */
function rowNll(ex: SftExample): { nll: number; count: number } {
  const n = ex.ids.length - 1;
  const logits = noGrad(() => tiny.model.forward(Tensor.ints(ex.ids.slice(0, n), [1, n])).toFloat32());
  const V = tiny.model.config.vocab_size;
  let nll = 0;
  let count = 0;
  for (let t = 0; t < n; t++) {
    if (!ex.assistantMask[t + 1]) continue;
    const row = logits.subarray(t * V, (t + 1) * V);
    let max = -Infinity;
    for (const x of row) max = Math.max(max, x);
    let z = 0;
    for (const x of row) z += Math.exp(x - max);
    nll += -(row[ex.ids[t + 1]!]! - max - Math.log(z));
    count++;
  }
  return { nll, count };
}

describe('SFT loss', () => {
  it('is Σ assistant-token NLL / supervised tokens of the whole step, whatever the padding and the split into micro-batches', () => {
    const ref = examples.map(rowNll);
    const N = ref.reduce((s, r) => s + r.count, 0);
    const expected = ref.reduce((s, r) => s + r.nll, 0) / N;
    // every assistant turn is supervised: row 1 has two answers, each with its <|assistant_end|>
    expect(ref[1]!.count).toBe(tiny.tokenizer.encodeIds('Allegra!', { addSpecialTokens: false }).length + tiny.tokenizer.encodeIds('Hello!', { addSpecialTokens: false }).length + 2);
    const micro = [collate(examples.slice(0, 3), 3), collate(examples.slice(3), 3)];
    expect(micro[0]!.padding.some((p) => p > 0)).toBe(true);
    const normalizer = micro.reduce((s, b) => s + b.lossTokens, 0);
    expect(normalizer).toBe(N);
    const got = noGrad(() => micro.reduce((s, b) => s + sftLoss(tiny.model, lmBatchOfSft(b), normalizer).item(), 0));
    expect(got).toBeCloseTo(expected, 4);
  });

  it('accumulating the gradients of two micro-batches gives the gradient of one batch', () => {
    const params = tiny.model.parameters();
    const grads = (batches: ReturnType<typeof collate>[]): Float32Array[] => {
      for (const [, p] of params) p.zeroGrad();
      const normalizer = batches.reduce((s, b) => s + b.lossTokens, 0);
      for (const b of batches) backward(sftLoss(tiny.model, lmBatchOfSft(b), normalizer));
      return params.map(([, p]) => Float32Array.from(p.grad!.toFloat32()));
    };
    const split = grads([collate(examples.slice(0, 1), 3), collate(examples.slice(1), 3)]);
    const whole = grads([collate(examples, 3)]);
    let maxDiff = 0;
    let maxAbs = 0;
    split.forEach((g, i) => g.forEach((x, j) => {
      maxDiff = Math.max(maxDiff, Math.abs(x - whole[i]![j]!));
      maxAbs = Math.max(maxAbs, Math.abs(whole[i]![j]!));
    }));
    expect(maxAbs).toBeGreaterThan(1e-3);
    expect(maxDiff / maxAbs).toBeLessThan(1e-4);
  });
});

describe('SFT packing', () => {
  it('packed and unpacked batches give the same per-example losses: no cross-document attention, positions restart, loss on completions only', () => {
    const packed = packSft(examples, { maxLength: 512 });
    expect(packed.length).toBeLessThan(examples.length);
    const b = collateSft(packed, { padId: 3 });
    const lm = lmBatchOfSft(b);
    let seen = 0;
    noGrad(() => {
      packed.forEach((row, r) => {
        let start = 0;
        for (const n of row.docLengths!) {
          const ids = Array.from(row.ids).slice(start, start + n);
          const ex = examples.find((e) => e.ids.length === n && e.ids.every((x, i) => x === ids[i]))!;
          // This document's supervised targets inside the packed batch (its last token predicts nothing).
          const mask = new Float32Array(b.lossMask.length);
          for (let t = start; t < start + n - 1; t++) mask[r * b.length + b.padding[r]! + t] = b.lossMask[r * b.length + b.padding[r]! + t]!;
          const count = mask.reduce((a, m) => a + m, 0);
          expect(count).toBe(ex.assistantMask.slice(1).reduce((a, m) => a + m, 0));
          const inPack = sftLoss(tiny.model, { ...lm, mask, keptTokens: count }, count).item();
          const alone = sftLoss(tiny.model, lmBatchOfSft(collate([ex], 3)), count).item();
          expect(Math.abs(inPack - alone)).toBeLessThan(1e-6);
          expect(inPack).toBeCloseTo(rowNll(ex).nll / count, 5);
          seen++;
          start += n;
        }
      });
    });
    expect(seen).toBe(examples.length);
  });

  it('packing is a validated boolean setting, off by default', () => {
    expect(resolveSftConfig([]).config.packing).toBe(false);
    expect(resolveSftConfig([{ source: 'test', values: { packing: true } }]).config.packing).toBe(true);
    expect(() => resolveSftConfig([{ source: 'test', values: { packing: 'yes' } }])).toThrow(ConfigError);
  });
});

describe('schedule and run length', () => {
  it('warms up linearly over ⌈ratio·T⌉ steps and decays linearly to 0 at T (Hugging Face get_linear_schedule_with_warmup)', () => {
    const { config } = resolveSftConfig([{ source: 'test', values: { lr: 0.01, warmupRatio: 0.1, steps: 25 } }]);
    const s = new LrScheduler(linearDecaySchedule(config, 25));
    const lrs: number[] = [];
    for (let i = 0; i < 25; i++) {
      lrs.push(s.lr);
      s.step(1);
    }
    // W = ceil(2.5) = 3: 0, 1/3, 2/3 of the peak, then (25 − s)/22
    expect(lrs.slice(0, 4)).toEqual([0, 0.01 * (1 / 3), 0.01 * (2 / 3), 0.01]);
    expect(lrs[24]).toBeCloseTo((0.01 * 1) / 22, 15);
    expect(epochSteps({ ...config, steps: null, epochs: 2, microBatchSize: 4, gradAccumulation: 2 }, 17)).toBe(6);
  });
});

describe('model directory', () => {
  it('finds the model directory of a run, a checkpoints folder or the directory itself', async () => {
    expect(await resolveModelDir(tiny.dir)).toBe(tiny.dir);
    const run = tempDir('apertus-sft-run-');
    fs.mkdirSync(path.join(run, 'checkpoints'));
    fs.cpSync(tiny.dir, path.join(run, 'checkpoints', 'step-000004'), { recursive: true });
    fs.writeFileSync(path.join(run, 'checkpoints', 'latest'), 'step-000004\n');
    fs.writeFileSync(path.join(run, 'config.json'), '{"out": "run"}'); // a run's config, not a model
    expect(await resolveModelDir(run)).toBe(path.join(run, 'checkpoints', 'step-000004'));
    fs.cpSync(tiny.dir, path.join(run, 'model'), { recursive: true });
    expect(await resolveModelDir(run)).toBe(path.join(run, 'model'));
    await expect(resolveModelDir(path.join(run, 'nothing'))).rejects.toThrow(/no such file or directory, and not a Hub id/);
    fs.rmSync(run, { recursive: true, force: true });
  });
});

/** Validation loss of the run below: at step 0, after 6 LoRA steps, after 6 LoRA + chat-token steps (deterministic: this test is its generator). */
const PINNED_TOKEN_RUN = [7.2315, 7.2155, 7.1652];

describe('LoRA SFT', () => {
  it('trains only a PEFT adapter: the base in model/ is bit-identical, the optimizer holds adapter moments only, the adapter changes the model', async () => {
    const out = path.join(root, 'lora');
    const { config } = resolveSftConfig([{ source: 'test', values: {
      out, model: tiny.dir, languages: ['deu_1996', 'roh_rumgr', 'ita', 'eng'], maxExamples: 16, maxChars: 120, maxLength: 256,
      microBatchSize: 4, steps: 3, lr: 2e-2, evalTranslation: false, threads: 1, progress: 'off',
      lora: { r: 4, lora_alpha: 8, target_modules: 'all-linear' },
    } }]);
    const lines: string[] = [];
    const r = await runSft(config, { log: (m) => lines.push(m) });
    expect(r.step).toBe(3);
    expect(lines.join('\n')).toMatch(/LoRA r 4, α 8 on q_proj,k_proj,v_proj,o_proj,up_proj,down_proj: \d+ trainable parameters \(\d+\.\d+% of/);
    expect(fs.readFileSync(path.join(out, 'model', 'model.safetensors')).equals(fs.readFileSync(path.join(tiny.dir, 'model.safetensors')))).toBe(true);
    const { adapter, baseModel } = loadAdapter(path.join(out, 'adapter'), tiny.model.config);
    expect(baseModel).toBe(tiny.dir);
    expect([...adapter.modules.values()].some(({ B }) => B.data.some((v) => v !== 0))).toBe(true);
    const opt = readOptimizerState(r.checkpoint!);
    expect(Object.keys(opt.tensors).length).toBeGreaterThan(0);
    expect(Object.keys(opt.tensors).every((k) => k.includes('.lora_'))).toBe(true);
    const ids = Tensor.ints(examples[0]!.ids.slice(0, 12), [1, 12]);
    const tuned = noGrad(() => loadCheckpoint(path.join(out, 'model')).model.forward(ids)).data;
    expect(tuned).not.toEqual(noGrad(() => tiny.model.forward(ids)).data);
  }, 300_000);

  it('trainable_token_indices: the chat tokens\' rows train with the adapter and lower the held-out loss below LoRA alone (pinned values of this run)', async () => {
    const chat = Array.from({ length: 12 }, (_, i) => 61 + i); // <|system_start|> … <|tools_suffix|>
    const run = async (name: string, lora: Record<string, unknown>) => {
      const { config } = resolveSftConfig([{ source: 'test', values: {
        out: path.join(root, name), model: tiny.dir, languages: ['deu_1996', 'roh_rumgr', 'ita', 'eng'], maxExamples: 16, maxChars: 120, maxLength: 256,
        microBatchSize: 4, steps: 6, lr: 2e-2, evalInterval: 6, evalTranslation: false, threads: 1, progress: 'off',
        lora: { r: 4, lora_alpha: 8, target_modules: 'all-linear', ...lora },
      } }]);
      const r = await runSft(config, { log: () => undefined });
      const val = r.metrics.filter((m) => m.type === 'eval').map((m) => m.valLoss as number);
      return { r, first: val[0]!, last: val.at(-1)! };
    };
    const plain = await run('lora-plain', {});
    const tokens = await run('lora-tokens', { trainable_token_indices: { embed_tokens: chat, lm_head: chat } });
    expect(tokens.first).toBe(plain.first);
    expect(tokens.last).toBeLessThan(plain.last);
    [plain.first, plain.last, tokens.last].forEach((v, i) => expect(Math.abs(v - PINNED_TOKEN_RUN[i]!)).toBeLessThan(5e-4));
    const opt = readOptimizerState(tokens.r.checkpoint!);
    expect(Object.keys(opt.tensors).some((k) => k.includes('.token_adapter.trainable_tokens_delta'))).toBe(true);
    const { adapter } = loadAdapter(path.join(root, 'lora-tokens', 'adapter'), tiny.model.config);
    expect(adapter.config.trainable_token_indices).toEqual({ embed_tokens: chat, lm_head: chat });
  }, 300_000);

  it('a bad lora setting is a config error naming the key', () => {
    expect(() => resolveSftConfig([{ source: 'run.json', values: { lora: { r: 2, target_modules: ['gate'] } } }])).toThrow(ConfigError);
    expect(() => resolveSftConfig([{ source: 'flags', values: { lora: '{"lora_dropout": 2}' } }])).toThrow(/--lora.*lora_dropout/);
    expect(resolveSftConfig([{ source: 'flags', values: { lora: 'none' } }]).config.lora).toBeNull();
  });
});
