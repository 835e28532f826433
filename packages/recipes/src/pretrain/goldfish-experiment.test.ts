// The fast version of the Goldfish experiment (the full one is `apertus-pretrain goldfish`, numbers
// in the README): with the standard loss a tiny model trained for many epochs on a few documents
// recalls most of them verbatim; with the Goldfish loss (k = 4) it recalls far fewer.

import fs from 'node:fs';
import path from 'node:path';
import { readMetrics } from '@apertus/trainer';
import { tempDir } from '@apertus/trainer/testing';
import { describe, expect, it } from 'vitest';
import { runGoldfishExperiment } from './goldfish-experiment';

describe('Goldfish experiment (fast)', () => {
  it('standard loss memorises most documents verbatim, Goldfish k=4 far fewer', async () => {
    const out = tempDir('apertus-goldfish-');
    const r = await runGoldfishExperiment({ documents: 5, maxTokens: 96, steps: 70, lr: 4e-3, out, progress: 'off' });
    // Both runs went through the training loop: metrics and final models in their run directories.
    for (const run of ['standard', 'goldfish']) {
      const train = readMetrics(path.join(out, run, 'metrics.jsonl')).filter((m) => m.type === 'train');
      expect(train).toHaveLength(70);
      expect(fs.existsSync(path.join(out, run, 'model', 'model.safetensors'))).toBe(true);
    }
    expect(r.standard.finalLoss).toBe(readMetrics(path.join(out, 'standard', 'metrics.jsonl')).at(-1)!.loss);
    expect(r.settings.documents).toBe(5);
    // Standard loss: most documents come back exactly (the last 50 tokens, greedy).
    expect(r.standard.exactMatches).toBeGreaterThanOrEqual(4);
    expect(r.standard.meanLcsNorm).toBeGreaterThan(0.9);
    expect(r.standard.droppedFraction).toBe(0);
    // Goldfish: about a quarter of the targets never receive a gradient …
    expect(r.goldfish.droppedFraction).toBeGreaterThan(0.15);
    expect(r.goldfish.droppedFraction).toBeLessThan(0.35);
    // … so verbatim recall breaks: far fewer exact matches and much shorter common substrings.
    expect(r.goldfish.exactMatches).toBeLessThanOrEqual(1);
    expect(r.goldfish.exactMatches).toBeLessThan(r.standard.exactMatches);
    expect(r.goldfish.meanLcsNorm).toBeLessThan(r.standard.meanLcsNorm - 0.4);
    // Every document had held-out targets hidden by the mask, which the model never saw.
    for (const d of r.goldfish.perDocument) expect(d.droppedInHoldout).toBeGreaterThan(0);
    // Both runs fit their supervised tokens well, so the difference is not under-training.
    expect(r.goldfish.finalLoss).toBeLessThan(0.3);
    fs.rmSync(out, { recursive: true, force: true });
  }, 180_000);
});
