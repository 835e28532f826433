// A miniature ablation (a 1-layer model, 4 steps, 2 seeds): the table, JSON and plot have the
// documented structure, the statistics are those of the runs, and a second ablation with one of
// the seeds reproduces that seed's runs exactly.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@apertus/trainer';
import { ABLATION_ARMS, runAblation, type AblationResult } from './ablation';

const base = {
  languages: ['eng'],
  vocabSize: 1300,
  model: { hidden_size: 32, intermediate_size: 96, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1 },
  seqLength: 32,
  microBatchSize: 4,
  evalSamples: 4,
};
let dir: string;
let result: AblationResult;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-ablate-'));
  result = await runAblation({ out: path.join(dir, 'a'), seeds: [1, 2], steps: 4, evalInterval: 2, base, goldfish: { documents: 2, steps: 3 } });
}, 600_000);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

describe('apertus-pretrain ablate (miniature)', () => {
  it('trains every arm with every seed and reports mean, spread and the paired difference', () => {
    expect(result.arms.map((a) => a.id)).toEqual(['swiglu-adamw', 'xielu-adamw', 'swiglu-ademamix', 'xielu-ademamix']);
    expect(result.settings.model.swiglu).toMatchObject({ hidden_act: 'swiglu', intermediate_size: 64 });
    expect(result.settings.model.xielu).toMatchObject({ hidden_act: 'xielu', intermediate_size: 96 });
    const baseline = result.arms[0]!;
    for (const a of result.arms) {
      expect(a.runs.map((r) => r.seed)).toEqual([1, 2]);
      for (const r of a.runs) {
        expect(r.curve.map((p) => p.step)).toEqual([0, 2, 4]);
        expect(r.curve.every((p) => Number.isFinite(p.valLoss))).toBe(true);
        expect(r.finalLoss).toBe(r.curve[2]!.valLoss);
        // Step 0 is the untrained model: about log(V) for a vocabulary of 1300.
        expect(Math.abs(r.curve[0]!.valLoss - Math.log(1300))).toBeLessThan(0.5);
      }
      const finals = a.runs.map((r) => r.finalLoss);
      expect(a.final.mean).toBeCloseTo(mean(finals), 12);
      expect(a.final.sd).toBeCloseTo(Math.abs(finals[0]! - finals[1]!) / Math.SQRT2, 12);
      expect(a.deltaVsBaseline.mean).toBeCloseTo(mean(finals.map((f, i) => f - baseline.runs[i]!.finalLoss)), 12);
    }
    expect(baseline.deltaVsBaseline).toEqual({ mean: 0, sd: 0, n: 2 });
    // The two MLPs are matched: parameter counts within 1 %, and the arms really differ.
    const [sw, xi] = [result.arms[0]!.runs[0]!.parameters, result.arms[1]!.runs[0]!.parameters];
    expect(Math.abs(sw - xi) / xi).toBeLessThan(0.01);
    expect(result.arms[0]!.runs[0]!.finalLoss).not.toBe(result.arms[1]!.runs[0]!.finalLoss);
    expect(result.arms[0]!.runs[0]!.finalLoss).not.toBe(result.arms[2]!.runs[0]!.finalLoss);
  });

  it('writes the Markdown table, the JSON and one plot of the curves', () => {
    const md = fs.readFileSync(result.files.markdown, 'utf8');
    const rows = md.split('\n').filter((l) => l.startsWith('| '));
    expect(rows[0]).toMatch(/^\| configuration \| parameters \| final validation loss \(mean ± sd, 2 seeds\) \| Δ vs baseline/);
    for (const [i, a] of ABLATION_ARMS.entries()) {
      const r = result.arms[i]!;
      expect(rows[1 + i]).toContain(`| ${a.label} |`);
      expect(rows[1 + i]).toContain(`${r.final.mean.toFixed(4)} ± ${r.final.sd.toFixed(4)}`);
    }
    expect(rows[1]).toContain('| 2.037 |');
    expect(rows[2]).toContain('1.997 (−0.040)');
    expect(rows[3]).toContain('2.002 (−0.035)');
    expect(rows[5]).toBe('| loss | memorised here | paper (100 documents, 100 epochs) |');
    expect(rows[6]).toBe(`| standard | ${result.goldfish!.standard.exactMatches}/2 | 84/100 |`);
    expect(rows[7]).toBe(`| Goldfish | ${result.goldfish!.goldfish.exactMatches}/2 | 0/100 |`);
    const json = JSON.parse(fs.readFileSync(result.files.json, 'utf8')) as AblationResult;
    expect(json.arms).toEqual(JSON.parse(JSON.stringify(result.arms)));
    const html = fs.readFileSync(result.files.plot, 'utf8');
    for (const a of ABLATION_ARMS) expect(html).toContain(`data-series="${a.label}"`);
    expect((html.match(/<polyline /g) ?? []).length).toBe(4);
    // Only metrics, plot and config of each run are kept.
    expect(fs.existsSync(path.join(dir, 'a/runs/xielu-adamw-seed2/metrics.jsonl'))).toBe(true);
    expect(fs.existsSync(path.join(dir, 'a/runs/xielu-adamw-seed2/checkpoints'))).toBe(false);
  });

  it('is reproducible: the same seed gives the same curves; a saved Goldfish result is reused', async () => {
    const gfFile = path.join(dir, 'goldfish.json');
    fs.writeFileSync(gfFile, JSON.stringify(result.goldfish));
    const again = await runAblation({ out: path.join(dir, 'b'), seeds: [2], steps: 4, evalInterval: 2, base, goldfish: { resultFile: gfFile } });
    again.arms.forEach((a, i) => expect(a.runs[0]).toEqual({ ...result.arms[i]!.runs[1]!, seconds: a.runs[0]!.seconds }));
    expect(again.goldfish).toEqual(result.goldfish);
    expect(again.goldfishSource).toBe(gfFile);
  }, 600_000);

  it('rejects bad seeds and unreadable Goldfish results with typed errors', async () => {
    await expect(runAblation({ out: path.join(dir, 'c'), seeds: [1, 1] })).rejects.toThrow(ConfigError);
    await expect(runAblation({ out: path.join(dir, 'c'), seeds: [] })).rejects.toThrow(/seeds/);
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '{"standard": {}}');
    await expect(runAblation({ out: path.join(dir, 'c'), goldfish: { resultFile: bad } })).rejects.toThrow(/bad.json is not a result/);
    await expect(runAblation({ out: path.join(dir, 'c'), goldfish: { resultFile: path.join(dir, 'missing.json') } })).rejects.toThrow(/cannot read the Goldfish result/);
    expect(fs.existsSync(path.join(dir, 'c'))).toBe(false);
  });
});
