// Evaluation plumbing on a tiny random Apertus model and a tiny trained tokenizer; every number is
// recomputed independently (full forward passes without KV cache, float64 log-softmax, direct
// crossEntropy, goldfish metrics on hand-built suffixes).

import type { ApertusModel } from '@apertus/model';
import { crossEntropy, noGrad, Tensor } from '@apertus/tensor';
import { applyApertusChatTemplate, type Tokenizer } from '@apertus/tokenizer';
import { beforeAll, describe, expect, it } from 'vitest';
import { evaluateMemorization, evaluatePerplexity, evaluateSuite, evaluateTranslation, type TranslationPrompt } from './eval';
import { formatEvalReport } from './eval-report';
import { logSoftmax64, tinyModel, tinyTokenizer } from './fixtures.test-helper';
import { corpusBleu } from './metrics/bleu';
import { corpusChrf } from './metrics/chrf';

let tok: Tokenizer;
let model: ApertusModel;
beforeAll(async () => {
  tok = await tinyTokenizer();
  model = tinyModel(tok.vocabSize, 21);
});

const DOCS = ['Alle Menschen sind frei und gleich an Würde und Rechten geboren.', 'Tut ils umans naschan libers ed eguals en dignitad ed en dretgs.'];

/** Σ −log p(ids[t+1] | ids[..t]) from one full forward, in float64. */
function sumNll64(ids: readonly number[]): number {
  const n = ids.length - 1;
  const V = model.config.vocab_size;
  const logits = noGrad(() => model.forward(Tensor.ints(ids.slice(0, n), [1, n]))).data as Float32Array;
  let s = 0;
  for (let t = 0; t < n; t++) s -= logSoftmax64(logits.subarray(t * V, (t + 1) * V))[ids[t + 1]!]!;
  return s;
}

/** Greedy decoding by full recomputation (no KV cache), stopping on `stop`. */
function greedy(prompt: readonly number[], steps: number, stop: readonly number[] = []): number[] {
  const ids = [...prompt];
  const out: number[] = [];
  const V = model.config.vocab_size;
  for (let s = 0; s < steps; s++) {
    const logits = noGrad(() => model.forward(Tensor.ints(ids, [1, ids.length]))).data as Float32Array;
    const last = logits.subarray((ids.length - 1) * V, ids.length * V);
    let best = 0;
    for (let v = 1; v < V; v++) if (last[v]! > last[best]!) best = v;
    if (stop.includes(best)) break;
    out.push(best);
    ids.push(best);
  }
  return out;
}

describe('evaluatePerplexity', () => {
  it('equals exp of the mean NLL, computed in float64 and with crossEntropy directly', () => {
    const streams = DOCS.map((d) => [...tok.encodeIds(d), 2]);
    expect(streams[0]![0]).toBe(1);
    const r = evaluatePerplexity(model, tok, DOCS);
    const tokens = streams.reduce((a, s) => a + s.length - 1, 0);
    const sum = streams.reduce((a, s) => a + sumNll64(s), 0);
    expect(r.tokens).toBe(tokens);
    expect(r.windows).toBe(2);
    expect(r.documents).toBe(2);
    expect(r.sumNll).toBeCloseTo(sum, 3);
    // float32 logits: agreement to ~1e-7 relative
    expect(Math.abs(r.perplexity / Math.exp(sum / tokens) - 1)).toBeLessThan(1e-5);
    // one document: perplexity = exp(crossEntropy mean) of a single forward
    const s0 = streams[0]!;
    const n = s0.length - 1;
    const ce = noGrad(() => crossEntropy(model.forward(Tensor.ints(s0.slice(0, n), [1, n])), Tensor.ints(s0.slice(1), [1, n])).item());
    expect(Math.abs(evaluatePerplexity(model, tok, [DOCS[0]!]).perplexity / Math.exp(ce) - 1)).toBeLessThan(1e-5);
  });

  it('windows long streams so each token is predicted once, and packs documents on request', () => {
    const ids = [...tok.encodeIds(DOCS[0]!), 2];
    const C = 8;
    const r = evaluatePerplexity(model, tok, [DOCS[0]!], { contextLength: C });
    expect(r.tokens).toBe(ids.length - 1);
    expect(r.windows).toBe(Math.ceil((ids.length - 1) / C));
    // the windows restart the context: their NLLs are those of the independent slices
    let expected = 0;
    for (let s = 0; s + 1 < ids.length; s += C) expected += sumNll64(ids.slice(s, s + C + 1));
    expect(r.sumNll).toBeCloseTo(expected, 3);
    // packed: one stream over both documents (context crosses the boundary)
    const packed = [...tok.encodeIds(DOCS[0]!), 2, ...tok.encodeIds(DOCS[1]!), 2];
    const p = evaluatePerplexity(model, tok, DOCS, { mode: 'packed' });
    expect([p.tokens, p.windows]).toEqual([packed.length - 1, 1]);
    expect(p.sumNll).toBeCloseTo(sumNll64(packed), 3);
    // token-id documents are used as given
    expect(evaluatePerplexity(model, tok, [packed]).sumNll).toBeCloseTo(p.sumNll, 4);
  });

  it('rejects empty input and bad options', () => {
    expect(() => evaluatePerplexity(model, tok, [[5]])).toThrow(/no token/);
    expect(() => evaluatePerplexity(model, tok, DOCS, { contextLength: 0 })).toThrow(/contextLength/);
  });
});

describe('evaluateTranslation', () => {
  const prompts: TranslationPrompt[] = [
    { messages: [{ role: 'user', content: 'Translate from German to Romansh:\nAlle Menschen sind frei.' }], reference: 'Tut ils umans naschan libers.' },
    { messages: [{ role: 'user', content: 'Translate from German to Romansh:\nJeder hat das Recht auf Leben.' }], reference: 'Mintgin ha il dretg da la vita.' },
    { messages: [{ role: 'user', content: 'Translate from German to Romansh:\nNiemand darf in Sklaverei gehalten werden.' }], reference: 'Nagin na dastga vegnir tegnì en sclavitad.' },
  ];
  const render = (p: TranslationPrompt): number[] => applyApertusChatTemplate(tok, p.messages, { addGenerationPrompt: true, date: '2025-09-21' }).ids;

  it('decodes greedily and scores with corpus chrF / chrF++ / BLEU', () => {
    const r = evaluateTranslation(model, tok, prompts, { maxTokens: 6, batchSize: 2, date: '2025-09-21' });
    expect(r.outputs).toHaveLength(3);
    prompts.forEach((p, i) => {
      const ids = render(p);
      expect(ids.at(-1)).toBe(67); // <|assistant_start|>
      const expected = greedy(ids, 6, [2, 68, 72]);
      expect(r.outputs[i]!.tokens).toEqual(expected);
      expect(r.outputs[i]!.finishReason).toBe(expected.length < 6 ? 'stop' : 'length');
      expect(r.outputs[i]!.hypothesis).toBe(tok.decode(expected, { skipSpecialTokens: true }));
    });
    const hyps = r.outputs.map((o) => o.hypothesis);
    const refs = prompts.map((p) => p.reference);
    expect(r.chrf).toBe(corpusChrf(hyps, refs).score);
    expect(r.chrfPlusPlus).toBe(corpusChrf(hyps, refs, { wordOrder: 2 }).score);
    expect(r.bleu).toBe(corpusBleu(hyps, refs).score);
  });

  it('stops on the stop ids', () => {
    const first = greedy(render(prompts[0]!), 1)[0]!;
    const r = evaluateTranslation(model, tok, [prompts[0]!], { maxTokens: 6, date: '2025-09-21', stopTokenIds: [first] });
    expect(r.outputs[0]).toMatchObject({ tokens: [], finishReason: 'stop', hypothesis: '' });
    expect(r.chrf).toBe(0);
  });
});

describe('evaluateMemorization', () => {
  it('exact match, lcs_norm and Rouge-L against hand-built suffixes', () => {
    const prefix = tok.encodeIds('Alle Menschen sind frei und gleich');
    const g = greedy(prefix, 6);
    const altered = [g[0]!, g[1]!, (g[2]! + 1) % model.config.vocab_size, g[3]!, g[4]!, g[5]!];
    const r = evaluateMemorization(model, [[...prefix, ...g], [...prefix, ...altered], [1, 2, 3]], { suffixLength: 6 });
    expect(r.probes).toBe(2);
    expect(r.skipped).toBe(1);
    expect(r.results[0]).toMatchObject({ exactMatch: true, lcsNorm: 1, rougeL: 1, generated: g });
    // generated g vs altered reference: longest common run g3..g5 = 3 of 6; LCS = 5, so P = R = 5/6
    expect(r.results[1]!.exactMatch).toBe(false);
    expect(r.results[1]!.lcsNorm).toBe(0.5);
    expect(r.results[1]!.rougeL).toBeCloseTo(5 / 6, 12);
    expect(r.exactMatchRate).toBe(0.5);
    expect(r.meanLcsNorm).toBe(0.75);
  });

  it('uses a fixed prefix length when given', () => {
    const seq = tok.encodeIds('Alle Menschen sind frei und gleich an Würde und Rechten geboren.');
    const r = evaluateMemorization(model, [seq], { prefixLength: 4, suffixLength: 3 });
    expect(r.results[0]!.generated).toEqual(greedy(seq.slice(0, 4), 3));
    expect(r.results[0]!.exactMatch).toBe(r.results[0]!.generated.every((t, i) => t === seq[4 + i]));
  });
});

describe('formatEvalReport and evaluateSuite', () => {
  it('formats stages side by side', () => {
    const md = formatEvalReport([
      { name: 'base', report: { perplexity: 812.345, chrf: 3.2, exactMatch: 0.5 } },
      { name: 'SFT', report: { perplexity: 95.1, chrf: 18.25, bleu: 2.5 } },
      { name: 'aligned', report: { perplexity: 97, chrf: 21.5, bleu: 3, exactMatch: 0 } },
    ]);
    expect(md).toBe(
      [
        '| Metric | base | SFT | aligned |',
        '|---|---:|---:|---:|',
        '| Perplexity, held-out text ↓ | 812.35 | 95.10 | 97.00 |',
        '| chrF, held-out translation ↑ | 3.20 | 18.25 | 21.50 |',
        '| BLEU, held-out translation ↑ | – | 2.50 | 3.00 |',
        '| Memorization: exact match ↓ | 50.00% | – | 0.00% |',
        '',
      ].join('\n'),
    );
    expect(() => formatEvalReport([])).toThrow(/no stage/);
  });

  it('collects the headline numbers of each evaluation', () => {
    const seqs = [tok.encodeIds('Alle Menschen sind frei und gleich an Würde und Rechten geboren.')];
    const prompts: TranslationPrompt[] = [{ messages: [{ role: 'user', content: 'Translate from German to Romansh:\nAlle Menschen sind frei.' }], reference: 'Tut ils umans naschan libers.' }];
    const report = evaluateSuite(model, tok, {
      heldOut: DOCS,
      translation: prompts,
      translationOptions: { maxTokens: 4, date: '2025-09-21' },
      memorization: seqs,
      memorizationOptions: { suffixLength: 4 },
    });
    const t = evaluateTranslation(model, tok, prompts, { maxTokens: 4, date: '2025-09-21' });
    const m = evaluateMemorization(model, seqs, { suffixLength: 4 });
    expect(report).toEqual({
      perplexity: evaluatePerplexity(model, tok, DOCS).perplexity,
      chrf: t.chrf,
      chrfPlusPlus: t.chrfPlusPlus,
      bleu: t.bleu,
      exactMatch: m.exactMatchRate,
      lcsNorm: m.meanLcsNorm,
      rougeL: m.meanRougeL,
    });
  });
});
