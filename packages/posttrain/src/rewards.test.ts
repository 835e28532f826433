// Reward sources: JS function wrapper, an HTTP endpoint served on 127.0.0.1, the checkpoint scorer
// (checked against log-probabilities computed independently in float64) and the chrF default.

import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { applyApertusChatTemplate, type Tokenizer } from '@apertus/tokenizer';
import { Tensor, noGrad } from '@apertus/tensor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PosttrainError } from './errors';
import { logSoftmax64, tinyModel, tinyTokenizer } from './fixtures.test-helper';
import { sentenceChrf } from './metrics/chrf';
import { chrfReward, httpReward, jsReward, loadReward, modelReward, scoreCompletions } from './rewards';

let server: Server;
let base: string;
const seen: unknown[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const send = (status: number, text: string): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(text);
      };
      if (req.url === '/reward') {
        const j = JSON.parse(body) as { prompt: string; completion: string; reference: string | null };
        seen.push(j);
        send(200, JSON.stringify({ reward: j.completion.length + (j.reference === null ? 0 : 0.5) }));
      } else if (req.url === '/500') send(500, 'boom');
      else if (req.url === '/text') send(200, 'not json');
      else if (req.url === '/nan') send(200, '{"reward": "high"}');
      else if (req.url === '/slow') setTimeout(() => send(200, '{"reward": 1}'), 500);
      else send(404, '{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('httpReward', () => {
  it('POSTs {prompt, completion, reference} and reads {reward}', async () => {
    const r = httpReward(`${base}/reward`);
    expect(await r('p', 'abcd', 'ref')).toBe(4.5);
    expect(await r('p', 'ab')).toBe(2);
    expect(seen).toEqual([
      { prompt: 'p', completion: 'abcd', reference: 'ref' },
      { prompt: 'p', completion: 'ab', reference: null },
    ]);
  });

  it('fails with RewardFailed on statuses, bad bodies, timeouts and refused connections', async () => {
    await expect(httpReward(`${base}/500`)('p', 'c')).rejects.toMatchObject({ code: 'RewardFailed', file: `${base}/500`, message: expect.stringMatching(/HTTP 500: boom/) });
    await expect(httpReward(`${base}/text`)('p', 'c')).rejects.toThrow(/not JSON/);
    await expect(httpReward(`${base}/nan`)('p', 'c')).rejects.toMatchObject({ field: 'reward' });
    await expect(httpReward(`${base}/slow`, { timeoutMs: 50 })('p', 'c')).rejects.toThrow(/within 50 ms/);
    await expect(httpReward('http://127.0.0.1:1/none')('p', 'c')).rejects.toThrow(PosttrainError);
  });
});

describe('jsReward and scoreCompletions', () => {
  it('passes numbers through, in order, with bounded concurrency', async () => {
    let inFlight = 0;
    let peak = 0;
    const slowLength = jsReward(async (_p, c) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return c.length;
    });
    expect(await scoreCompletions(slowLength, 'p', ['a', 'bbb', '', 'cc', 'dddd'], undefined, { concurrency: 2 })).toEqual([1, 3, 0, 2, 4]);
    expect(peak).toBe(2);
  });

  it('turns throws and non-numbers into RewardFailed', async () => {
    await expect(jsReward(() => Number.NaN)('p', 'c')).rejects.toMatchObject({ code: 'RewardFailed' });
    await expect(jsReward(() => 'x' as unknown as number)('p', 'c')).rejects.toThrow(/not a finite number/);
    await expect(jsReward(() => { throw new Error('nope'); })('p', 'c')).rejects.toThrow(/threw: nope/);
    await expect(scoreCompletions(() => Infinity, 'p', ['a'])).rejects.toMatchObject({ code: 'RewardFailed' });
  });
});

describe('chrfReward', () => {
  it('is sentence chrF / 100 against the reference', () => {
    const r = chrfReward();
    expect(r('prompt', 'Tut ils umans naschan libers', 'Tut ils umans naschan libers ed eguals')).toBeCloseTo(
      sentenceChrf('Tut ils umans naschan libers', 'Tut ils umans naschan libers ed eguals').score / 100,
      15,
    );
    expect(r('p', 'same text', 'same text')).toBe(1);
    expect(() => r('p', 'c')).toThrow(/needs a reference/);
  });
});

describe('modelReward', () => {
  let tok: Tokenizer;
  beforeAll(async () => {
    tok = await tinyTokenizer();
  });

  it('is the mean log-probability of the answer tokens and <|assistant_end|>', async () => {
    const model = tinyModel(tok.vocabSize, 11);
    const reward = modelReward(model, tok, { date: '2025-09-21' });
    const prompt = 'Translate from German to Romansh:\nAlle Menschen sind frei.';
    const completion = 'Tut ils umans naschan libers.';
    const got = await reward(prompt, completion);
    // independent: full forward, float64 log-softmax, average over the supervised targets
    const chat = applyApertusChatTemplate(tok, [{ role: 'user', content: prompt }, { role: 'assistant', content: completion }], { variant: 'B', date: '2025-09-21' });
    const n = chat.ids.length - 1;
    const logits = noGrad(() => model.forward(Tensor.ints(chat.ids.slice(0, n), [1, n]))).data as Float32Array;
    const V = model.config.vocab_size;
    let sum = 0;
    let count = 0;
    for (let t = 0; t < n; t++) {
      if (!chat.assistantMask[t + 1]) continue;
      sum += logSoftmax64(logits.subarray(t * V, (t + 1) * V))[chat.ids[t + 1]!]!;
      count++;
    }
    expect(count).toBe(tok.encodeIds(completion, { addSpecialTokens: false }).length + 1);
    expect(got).toBeCloseTo(sum / count, 5);
    expect(got).toBeLessThan(0);
  });

  it('refuses inputs longer than the context', () => {
    const model = tinyModel(tok.vocabSize, 11, 32);
    expect(() => modelReward(model, tok, { date: '2025-09-21' })('p', 'c')).toThrow(/context/);
  });
});

describe('loadReward', () => {
  it('loads a JavaScript reward module, rejects modules without a function, and builds chrF from "chrf"', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-reward-'));
    const mod = path.join(dir, 'reward.mjs');
    fs.writeFileSync(mod, 'export default (prompt, completion, reference) => completion.length - (reference ?? "").length;\n');
    const r = await loadReward(`js:${mod}`);
    expect(await r.fn('p', 'abcd', 'ab')).toBe(2);
    const bad = path.join(dir, 'bad.mjs');
    fs.writeFileSync(bad, 'export const x = 1;\n');
    await expect(loadReward(`js:${bad}`)).rejects.toThrow(/bad\.mjs: the reward module must export a function/);
    await expect(loadReward(`js:${path.join(dir, 'none.mjs')}`)).rejects.toThrow(/none\.mjs: reward module not found/);
    const nan = path.join(dir, 'nan.mjs');
    fs.writeFileSync(nan, 'export function reward() { return NaN; }\n');
    await expect((await loadReward(`js:${nan}`)).fn('p', 'c')).rejects.toThrow(/not a finite number/);
    const chrf = await loadReward('chrf');
    expect(await chrf.fn('p', 'Tut ils umans', 'Tut ils umans')).toBe(1);
    await expect(loadReward('bleu')).rejects.toThrow(PosttrainError);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
