// The alignment objective and data pipeline against independent computations:
//   • pairLoss = the spec's QRPO / DPO formulas (§3.5, §3.6) written out here in float64, on
//     log-probs of each row scored alone (no padding) with a float64 log-softmax, averaged over the
//     prompts of the whole step across micro-batches;
//   • the prepared pairs: quantile rewards recounted from the scored candidates, the §3.5 choice of
//     the best candidate, reference log-probs recomputed row by row, and a preparation continued
//     after a kill producing the very same file.

import fs from 'node:fs';
import path from 'node:path';
import { noGrad, Tensor } from '@apertus/tensor';
import { applyApertusChatTemplate } from '@apertus/tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collatePairs, pairLoss } from './align';
import { dataSettings, resolveAlignConfig, type AlignConfig } from './config';
import { makeTinyModel, tempDir, type TinyModel } from '@apertus/trainer/testing';
import { PosttrainError, dataFiles, loadPrompts, loadReward, prepareAlignData, sampleSeeds, type PairSide } from '@apertus/posttrain';

let root: string;
let tiny: TinyModel;

beforeAll(async () => {
  root = tempDir('apertus-align-unit-');
  tiny = await makeTinyModel(root, 'sft', 11);
}, 60_000);
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** log π(y|x) of one row alone: Σ over completion targets of log-softmax, float64. */
function rowLogp(ids: readonly number[], mask: readonly number[]): number {
  const n = ids.length - 1;
  const logits = noGrad(() => tiny.model.forward(Tensor.ints(ids.slice(0, n), [1, n])).toFloat32());
  const V = tiny.model.config.vocab_size;
  let lp = 0;
  for (let t = 0; t < n; t++) {
    if (!mask[t + 1]) continue;
    const row = logits.subarray(t * V, (t + 1) * V);
    let max = -Infinity;
    for (const x of row) max = Math.max(max, x);
    let z = 0;
    for (const x of row) z += Math.exp(x - max);
    lp += row[ids[t + 1]!]! - max - Math.log(z);
  }
  return lp;
}

function side(prompt: string, completion: string, rq: number, refOffset: number): PairSide & { policy: number } {
  const chat = applyApertusChatTemplate(tiny.tokenizer, [{ role: 'user', content: prompt }, { role: 'assistant', content: completion }], { variant: 'B', date: '2025-09-01' });
  const policy = rowLogp(chat.ids, chat.assistantMask);
  return { text: completion, source: 'sample', reward: rq, quantileReward: rq, ids: chat.ids, mask: chat.assistantMask, length: chat.assistantMask.reduce((s, m) => s + m, 0), refLogp: policy + refOffset, policy };
}

describe('pairLoss', () => {
  const make = () => [
    { promptIndex: 0, chosen: side('Translate to Italian:\nAlle Menschen', 'Tutti gli esseri umani', 0.8, 0.7), rejected: side('Translate to Italian:\nAlle Menschen', 'Tutti tutti', 0.2, -1.3), refRewards: [] },
    { promptIndex: 1, chosen: side('Hallo', 'Allegra, co vai?', 1, -0.4), rejected: side('Hallo', 'x', 0, 2.1), refRewards: [] },
    { promptIndex: 2, chosen: side('Article 3', 'Everyone has the right to life, liberty and security of person.', 0.6, 0.05), rejected: side('Article 3', 'No.', 0.4, -0.2), refRewards: [] },
  ];
  const lossOf = (cfg: AlignConfig, pairs: ReturnType<typeof make>): number => {
    const micro = [collatePairs(pairs.slice(0, 2), 3), collatePairs(pairs.slice(2), 3)];
    return noGrad(() => micro.reduce((s, b) => s + pairLoss(tiny.model, b, cfg, pairs.length).item(), 0));
  };
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

  it('Apertus QRPO: (R_q − β_i log Z_i − β_i·(log π_θ − log π_ref))², β_i = min(β/|y|, 0.1), mean of chosen and rejected, mean over prompts', () => {
    const pairs = make();
    const { config } = resolveAlignConfig([{ source: 'test', values: { loss: 'qrpo', qrpoVariant: 'apertus', beta: 5 } }]);
    const one = (s: ReturnType<typeof side>) => {
      const b = Math.min(5 / s.length, 0.1);
      const betaLogZ = b * Math.log(b) + 1; // β_i ≤ 0.2: the approximation
      return (s.quantileReward - betaLogZ - b * (s.policy - s.refLogp)) ** 2;
    };
    const expected = mean(pairs.map((p) => (one(p.chosen) + one(p.rejected)) / 2));
    expect(pairs.some((p) => p.chosen.length < 50)).toBe(true); // so the clamp at 0.1 is exercised
    expect(lossOf(config, pairs)).toBeCloseTo(expected, 4);
  });

  it('CLAIRE QRPO (identity): log Z = log β + 1/β with a fixed β', () => {
    const pairs = make();
    const { config } = resolveAlignConfig([{ source: 'test', values: { loss: 'qrpo', qrpoVariant: 'claire', beta: 0.5 } }]);
    const one = (s: ReturnType<typeof side>) => (s.quantileReward - 0.5 * (Math.log(0.5) + 2) - 0.5 * (s.policy - s.refLogp)) ** 2;
    expect(lossOf(config, pairs)).toBeCloseTo(mean(pairs.map((p) => (one(p.chosen) + one(p.rejected)) / 2)), 4);
  });

  it('DPO, plain and length-normalised (Apertus baseline): −log σ(β_w Δ_w − β_l Δ_l)', () => {
    const pairs = make();
    const dpo = (bw: (p: (typeof pairs)[number]) => number, bl: (p: (typeof pairs)[number]) => number) =>
      mean(pairs.map((p) => Math.log1p(Math.exp(-(bw(p) * (p.chosen.policy - p.chosen.refLogp) - bl(p) * (p.rejected.policy - p.rejected.refLogp))))));
    const plain = resolveAlignConfig([{ source: 'test', values: { loss: 'dpo', dpoLengthNormalized: false, beta: 0.3 } }]).config;
    expect(lossOf(plain, pairs)).toBeCloseTo(dpo(() => 0.3, () => 0.3), 5);
    const apertus = resolveAlignConfig([{ source: 'test', values: { loss: 'dpo' } }]).config; // β = 5 per token
    expect(lossOf(apertus, pairs)).toBeCloseTo(dpo((p) => 5 / p.chosen.length, (p) => 5 / p.rejected.length), 5);
  });
});

describe('preference data', () => {
  it('samples, scores, selects pairs and precomputes reference log-probs as §3.5 says; a killed preparation continues to the same result', async () => {
    const out = path.join(root, 'run');
    const cfg = resolveAlignConfig([
      {
        source: 'test',
        values: { out, model: tiny.dir, languages: ['deu_1996', 'roh_rumgr', 'ita', 'eng'], numPrompts: 6, maxChars: 150, numReferences: 3, sampleMaxTokens: 10, sampleBatchSize: 4 },
      },
    ]).config;
    const { prompts, heldOut } = await loadPrompts(cfg);
    expect(prompts).toHaveLength(6);
    expect(prompts.every((p) => p.offline.length === 1 && p.offline[0] === p.reference)).toBe(true);
    expect(heldOut.length).toBeGreaterThan(0);
    const reward = await loadReward('chrf');
    let loads = 0;
    const options = { cfg, settings: dataSettings(cfg), prompts, modelDir: tiny.dir, reward: reward.fn, log: () => {}, reference: () => (loads++, { model: tiny.model, tokenizer: tiny.tokenizer }) };
    const data = await prepareAlignData(options);
    expect(loads).toBe(1);
    const files = dataFiles(out);
    const rewardLines = fs.readFileSync(files.rewards, 'utf8').trim().split('\n').slice(1).map((l) => JSON.parse(l) as { prompt: number; offline: number[]; samples: number[] });
    expect(rewardLines).toHaveLength(6);
    expect(data.pairs).toHaveLength(6); // one pair per prompt
    for (const p of data.pairs) {
      const r = rewardLines[p.promptIndex]!;
      expect(p.refRewards).toEqual(r.samples);
      const rq = (x: number) => r.samples.filter((y) => y <= x).length / r.samples.length;
      expect(p.chosen.quantileReward).toBe(rq(p.chosen.reward));
      expect(p.rejected.quantileReward).toBe(rq(p.rejected.reward));
      // the reference translation scores chrF 1 against itself (R_q = 1), and so does the best
      // sample (it counts itself): the chosen side is one of these two, the best bucket's first
      expect(r.offline[0]).toBe(1);
      expect(p.chosen.quantileReward).toBe(1);
      expect(p.chosen.reward).toBe(p.chosen.source === 'offline' ? 1 : Math.max(...r.samples));
      // rejected: the lowest R_q among the samples (first of the worst bucket, else of the middle)
      expect(p.rejected.quantileReward).toBe(Math.min(...r.samples.map(rq)));
      for (const s of [p.chosen, p.rejected]) {
        expect(s.length).toBe(s.mask.reduce((a, m) => a + m, 0));
        expect(s.refLogp).toBeCloseTo(rowLogp(s.ids, s.mask), 3);
      }
    }
    const pairsBytes = fs.readFileSync(files.pairs);

    // Everything cached: the reference model is not even loaded.
    const again = await prepareAlignData(options);
    expect(loads).toBe(1);
    expect(again.fingerprint).toBe(data.fingerprint);

    // A preparation killed after the first sampling group (and a torn line) continues to the same pairs.
    const sampleLines = fs.readFileSync(files.samples, 'utf8').split('\n');
    fs.writeFileSync(files.samples, `${sampleLines[0]}\n${sampleLines[1]}\n{"group": 1, "compl`);
    fs.rmSync(files.rewards);
    fs.rmSync(files.prepared);
    fs.rmSync(files.pairs);
    const logs: string[] = [];
    const continued = await prepareAlignData({ ...options, log: (m: string) => logs.push(m) });
    expect(logs.join('\n')).toMatch(/continuing the reference sampling at prompt group 2\/2/);
    expect(fs.readFileSync(files.pairs).equals(pairsBytes)).toBe(true);
    expect(continued.fingerprint).toBe(data.fingerprint);

    // Another data setting: the cached files are not reused.
    loads = 0;
    await prepareAlignData({ ...options, settings: dataSettings({ ...cfg, numReferences: 2 }), cfg: { ...cfg, numReferences: 2 } });
    expect(loads).toBe(1);
  });

  it('stops after the current prompt group when interrupted, keeping what was sampled', async () => {
    const out = path.join(root, 'interrupted');
    const cfg = resolveAlignConfig([{ source: 'test', values: { out, model: tiny.dir, languages: ['deu_1996', 'roh_rumgr', 'ita', 'eng'], numPrompts: 4, maxChars: 150, numReferences: 2, sampleMaxTokens: 4, sampleBatchSize: 2 } }]).config;
    const { prompts } = await loadPrompts(cfg);
    const controller = new AbortController();
    controller.abort();
    const reward = await loadReward('chrf');
    const run = prepareAlignData({ cfg, settings: dataSettings(cfg), prompts, modelDir: tiny.dir, reward: reward.fn, log: () => {}, signal: controller.signal, reference: () => ({ model: tiny.model, tokenizer: tiny.tokenizer }) });
    await expect(run).rejects.toMatchObject({ name: 'PosttrainError', code: 'Interrupted' });
    await expect(run).rejects.toThrow(PosttrainError);
    await expect(run).rejects.toThrow('stopped the reference sampling after prompt group 1/2');
    const lines = fs.readFileSync(dataFiles(out).samples, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(2); // header + group 0
    expect(JSON.parse(lines[1]!).completions).toHaveLength(2);
  });

  it('gives each sampling pass its own seed', () => {
    const s = sampleSeeds(1, 0, 8);
    expect(new Set(s).size).toBe(8);
    expect(sampleSeeds(1, 1, 8)).not.toEqual(s);
    expect(sampleSeeds(1, 0, 8)).toEqual(s);
  });
});
