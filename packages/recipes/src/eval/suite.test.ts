// The evaluation suite against independent computations: the held-out split recomputed from
// unitHash, perplexity from a float64 log-softmax over the model's logits, and the option parser's
// messages naming each flag.

import fs from 'node:fs';
import path from 'node:path';
import { readUdhr, unitHash } from '@apertus/data';
import { convertCheckpoint } from '@apertus/gguf';
import { noGrad, Tensor } from '@apertus/tensor';
import { APERTUS_EOS_ID } from '@apertus/tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyModel, tempDir, type TinyModel } from '@apertus/trainer/testing';
import { parseEvalFlags, parseStage } from './options';
import { DEFAULT_SUITE, evaluateStage, formatStages, loadSuiteTexts, probeSequences, type SuiteOptions } from './suite';

let root: string;
let tiny: TinyModel;

beforeAll(async () => {
  root = tempDir('apertus-eval-suite-');
  tiny = await makeTinyModel(root);
}, 120_000);
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('suite', () => {
  it('holds out the pretraining validation split (unitHash(28, "id:<id>") < 0.1) and probes training documents only', async () => {
    const texts = await loadSuiteTexts({ ...DEFAULT_SUITE, languages: ['roh_rumgr', 'ita'], maxChars: 300, probes: 4 });
    const validation: string[] = [];
    const train: string[] = [];
    for await (const d of readUdhr({ languages: ['roh_rumgr', 'ita'] })) (unitHash(28, `id:${d.id}`) < 0.1 ? validation : train).push(d.text);
    expect(validation.length).toBeGreaterThan(0);
    expect(texts.heldOut).toEqual(validation);
    const english: string[] = [];
    for await (const d of readUdhr({ languages: ['eng'] })) if (unitHash(28, `id:${d.id}`) >= 0.1) english.push(d.text);
    expect(texts.probeDocuments).toEqual(english);
    expect(texts.translation.length).toBeGreaterThan(5);
    for (const t of texts.translation) {
      expect(t.reference.length).toBeLessThanOrEqual(300);
      expect(t.messages[0]!.content).toMatch(/^Translate from German to Romansh:\n/);
    }
  });

  it('perplexity is exp(Σ NLL / tokens) over each document with BOS and EOS, computed independently here', async () => {
    const file = path.join(root, 'held.jsonl');
    const docs = ['Tut ils umans naschan libers ed eguals en dignitad ed en dretgs.', 'Ognuno ha diritto alla vita.'];
    fs.writeFileSync(file, docs.map((text) => JSON.stringify({ text })).join('\n'));
    const suite: SuiteOptions = { ...DEFAULT_SUITE, heldOut: file, maxChars: 150, maxTokens: 2, probes: 2, suffixLength: 6, minPrefix: 4, probeTokens: 40 };
    const texts = await loadSuiteTexts(suite);
    const r = await evaluateStage({ name: 'tiny', location: tiny.dir }, texts, suite);
    let nll = 0;
    let tokens = 0;
    const V = tiny.model.config.vocab_size;
    for (const d of docs) {
      const ids = [...tiny.tokenizer.encodeIds(d), APERTUS_EOS_ID];
      expect(ids[0]).toBe(1); // <s>
      const n = ids.length - 1;
      const logits = noGrad(() => tiny.model.forward(Tensor.ints(ids.slice(0, n), [1, n])).toFloat32());
      for (let t = 0; t < n; t++) {
        const row = logits.subarray(t * V, (t + 1) * V);
        const max = Math.max(...row);
        let z = 0;
        for (const x of row) z += Math.exp(x - max);
        nll -= row[ids[t + 1]!]! - max - Math.log(z);
      }
      tokens += n;
    }
    expect(r.perplexityTokens).toBe(tokens);
    expect(r.report.perplexity).toBeCloseTo(Math.exp(nll / tokens), 2);
    expect(r.translations).toHaveLength(texts.translation.length);
    expect(r.translations.every((t) => t.tokens.length <= 2)).toBe(true);
    expect(r.probes).toBe(2);
    expect(probeSequences(tiny.tokenizer, texts.probeDocuments, suite).every((s) => s.length >= 10 && s.length <= 40)).toBe(true);
    const table = formatStages([r], texts, suite);
    expect(table).toMatch(/^\| Metric \| tiny \|\n\|---\|---:\|\n\| Perplexity, held-out text ↓ \| \d+\.\d\d \|/);
    expect(table).toMatch(/Memorization: exact match ↓ \| \d+\.\d\d% \|/);
    // The same model as an F32 GGUF file evaluates alike: its products run the same float32
    // operations in another order (each logit moves by ~1e-6 of Σ|x·w| at these widths), so the
    // perplexity agrees far within 1e-4 relative; the greedy translations are the same tokens.
    const gguf = path.join(root, 'tiny.F32.gguf');
    convertCheckpoint(tiny.dir, gguf, 'F32');
    const g = await evaluateStage({ name: 'gguf', location: gguf }, texts, suite);
    expect(g.modelDir).toBe(gguf);
    expect(Math.abs(g.report.perplexity! / r.report.perplexity! - 1)).toBeLessThan(1e-4);
    expect(g.translations.map((t) => t.tokens)).toEqual(r.translations.map((t) => t.tokens));
  });
});

describe('options', () => {
  it('parses name=dir stages and rejects bad values naming the flag', () => {
    expect(parseStage('SFT=runs/sft-udhr')).toEqual({ name: 'SFT', location: 'runs/sft-udhr' });
    expect(parseStage('runs/align-udhr/')).toEqual({ name: 'align-udhr', location: 'runs/align-udhr/' });
    expect(() => parseStage('=x')).toThrow('--model: expected name=dir or dir, got "=x"');
    expect(() => parseEvalFlags({ model: ['a=x', 'a=y'] })).toThrow('--model: two models are named "a"');
    expect(() => parseEvalFlags({ model: ['x'], maxTokens: '0' })).toThrow('--max-tokens: expected an integer in [1, 65536], got "0"');
    expect(() => parseEvalFlags({ model: ['x'], splitFraction: '2' })).toThrow('--split-fraction: expected a number in [0, 1], got "2"');
    expect(parseEvalFlags({ model: ['x'], heldOut: 'none', probes: '0' }).suite).toMatchObject({ heldOut: null, probes: 0 });
  });
});
