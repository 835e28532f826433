// The quantizers against llama.cpp's own (ggml_quantize_chunk of the libggml node-llama-cpp
// ships, through test/ggml_reference.py): the bytes must be identical, on Gaussian rows, outliers,
// all-positive and all-negative rows, zero and constant blocks, tiny magnitudes, exact ties and
// random rows (property test).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { quantizeQ4_0, quantizeQ4_K, quantizeQ5_0, quantizeQ5_1, quantizeQ5_K, quantizeQ6_K, quantizeQ8_0, Rng } from '@apertus/tensor';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ggmlReference } from '../ggml-reference.test-helper';

const QUANTIZERS = { Q4_K: quantizeQ4_K, Q5_K: quantizeQ5_K, Q6_K: quantizeQ6_K, Q8_0: quantizeQ8_0, Q4_0: quantizeQ4_0, Q5_0: quantizeQ5_0, Q5_1: quantizeQ5_1 } as const;
type Name = keyof typeof QUANTIZERS;

/** llama.cpp's bytes for each row set. */
function reference(cases: { name: string; type: Name; x: Float32Array }[]): Map<string, Uint8Array> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-kq-'));
  try {
    for (const c of cases) fs.writeFileSync(path.join(dir, `${c.name}.f32`), new Uint8Array(c.x.buffer, c.x.byteOffset, c.x.byteLength));
    fs.writeFileSync(path.join(dir, 'cases.txt'), cases.map((c) => `${c.name} ${c.type}`).join('\n') + '\n');
    ggmlReference('quantize', dir);
    return new Map(cases.map((c) => [c.name, new Uint8Array(fs.readFileSync(path.join(dir, `${c.name}.out`)))]));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function rows(rng: Rng): Record<string, Float32Array> {
  const n = 256 * 8;
  const gauss = Float32Array.from({ length: n }, () => rng.normal() * 0.05);
  const special = new Float32Array(n);
  for (let i = 0; i < n; i++) special[i] = i < 256 ? 0 : i < 512 ? 0.75 : i < 768 ? -1.5 : i < 1024 ? (i % 17) * 0.5 - 4 : i < 1280 ? (i % 2 ? 1e-20 : -3e-21) : (i % 32 === 5 ? 2 : 0);
  return {
    gauss,
    outliers: gauss.map((v, i) => (i % 97 === 0 ? v * 300 : v)),
    positive: gauss.map((v) => Math.abs(v) + 0.01),
    negative: gauss.map((v) => -Math.abs(v) - 0.003),
    special,
    weights: Float32Array.from({ length: n }, () => Math.fround(rng.normal() * 0.02 * (rng.uniform() < 0.01 ? 10 : 1))),
  };
}

describe('quantizers are llama.cpp\'s, byte for byte', () => {
  const rng = new Rng(11);
  const cases: { name: string; type: Name; x: Float32Array }[] = [];
  for (const type of Object.keys(QUANTIZERS) as Name[]) for (const [k, x] of Object.entries(rows(rng))) cases.push({ name: `${type}-${k}`, type, x });
  // Random rows of every scale from 1e-8 to 1e4 (the property test's inputs, drawn up front: one
  // reference run for all of them).
  const random = fc.sample(fc.tuple(fc.integer({ min: -8, max: 4 }), fc.integer({ min: 1, max: 2 ** 31 - 1 })), { numRuns: 40, seed: 4 });
  random.forEach(([exp, seed], i) => {
    const r = new Rng(seed), x = Float32Array.from({ length: 512 }, () => r.normal() * 10 ** exp);
    for (const type of ['Q4_K', 'Q5_K', 'Q6_K', 'Q5_0', 'Q5_1'] as const) cases.push({ name: `${type}-random${i}`, type, x });
  });
  const want = reference(cases);
  afterAll(() => want.clear());

  for (const type of Object.keys(QUANTIZERS) as Name[]) {
    it(`${type}`, () => {
      for (const c of cases.filter((c) => c.type === type)) {
        const ours = QUANTIZERS[type](c.x), ref = want.get(c.name)!;
        expect(ours.length, c.name).toBe(ref.length);
        const first = ours.findIndex((b, i) => b !== ref[i]);
        expect(first, `${c.name}: first differing byte`).toBe(-1);
      }
    });
  }
});
