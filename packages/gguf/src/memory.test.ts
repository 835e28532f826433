// Memory of an 8B-shaped Q4_K model: the real Apertus-8B shapes (32 layers, hidden 4096, FFN
// 21504, vocabulary 131072) with random Q4_K blocks, written to a temp file (≈4.6 GB), loaded and
// run for a prefill and a decode step in a child process whose peak RSS must stay under 6 GB.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { parameterShapes, presetConfig } from '@apertus/model';
import { f32ToF16Bits } from '@apertus/tensor';
import { afterAll, describe, expect, it } from 'vitest';
import { ARCH, configMetadata, ggufTensorName, ropeFactors } from './apertus';
import { quantize } from './quant/index';
import { GGML_TYPES, QK_K } from './types';
import { writeGguf, type GgufTensorEntry } from './writer';
import { tempDir } from './fixture.test-helper';

const tmp = tempDir();
afterAll(() => tmp.remove());

/** Random Q4_K blocks for `n` values, with d and dmin set to small finite f16 values. */
function randomQ4K(n: number): Uint8Array {
  const size = GGML_TYPES.Q4_K.typeSize, out = new Uint8Array((n / QK_K) * size);
  crypto.randomFillSync(out);
  const d = f32ToF16Bits(2e-3), dmin = f32ToF16Bits(1.5e-2);
  for (let o = 0; o < out.length; o += size) { out[o] = d & 255; out[o + 1] = d >> 8; out[o + 2] = dmin & 255; out[o + 3] = dmin >> 8; }
  return out;
}

const CHILD = `
import { loadGguf } from '@apertus/gguf';
import { KVCache, step } from '@apertus/model';
import fs from 'node:fs';
const t0 = Date.now();
const { model } = loadGguf(process.argv[1], { tokenizer: false });
const t1 = Date.now();
const cache = new KVCache(model.config, 64);
const a = step(model, [{ cache, tokens: [1, 1500, 2500, 3500] }]);
const b = step(model, [{ cache, tokens: [4500] }]);
const hwm = Number(/VmHWM:\\s+(\\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
console.log(JSON.stringify({ hwm, load: t1 - t0, run: Date.now() - t1, finite: [...a, ...b].every(Number.isFinite), packed: [...model.params.values()].filter((t) => t.dtype === 'q4_k').length }));
`;

describe('8B-shaped Q4_K model', () => {
  it('loads and decodes with peak RSS under 6 GB', () => {
    const c = presetConfig('apertus-8b');
    const xielu = { alpha_p: Array(32).fill(0.8), alpha_n: Array(32).fill(0.8), beta: Array(32).fill(0.5), eps: Array(32).fill(-1e-6) };
    const tensors: GgufTensorEntry[] = [{ name: 'rope_freqs.weight', type: 'F32', shape: [c.head_dim / 2], data: () => quantize('F32', ropeFactors(c)) }];
    for (const [hf, shape] of parameterShapes(c)) {
      const name = ggufTensorName(hf);
      if (name === null) continue;
      const n = shape.reduce((a, b) => a * b, 1);
      tensors.push(shape.length === 2
        ? { name, type: 'Q4_K', shape, data: () => randomQ4K(n) }
        : { name, type: 'F32', shape, data: () => quantize('F32', new Float32Array(n).fill(1)) });
    }
    const file = path.join(tmp.dir, 'apertus-8b-shaped.Q4_K.gguf');
    writeGguf(file, [['general.architecture', { type: 'string', value: ARCH }], ...configMetadata(c, xielu)], tensors);
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', CHILD, file], { cwd: import.meta.dirname, encoding: 'utf8', timeout: 900_000 });
    const r = JSON.parse(out.trim().split('\n').pop()!) as { hwm: number; load: number; run: number; finite: boolean; packed: number };
    console.log(`8B-shaped Q4_K: peak RSS ${(r.hwm / 2 ** 30).toFixed(2)} GiB, load ${(r.load / 1000).toFixed(1)} s, prefill 4 + decode 1 ${(r.run / 1000).toFixed(1)} s`);
    expect(r.packed).toBe(2 + 6 * 32);
    expect(r.finite).toBe(true);
    expect(r.hwm).toBeLessThan(6e9);
  }, 1_200_000);
});
