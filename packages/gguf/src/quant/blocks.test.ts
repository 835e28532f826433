// The block formats against an independent numpy implementation (test/blocks_reference.py):
// quantized bytes and dequantized floats must be identical, bit for bit.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { f32ToF16Bits, Rng } from '@apertus/tensor';
import { describe, expect, it } from 'vitest';
import { GGML_TYPES, type GgmlTypeName } from '../types';
import { roundActivations } from './activations';
import { dequantize, quantize } from './index';
import { peerPython } from '@apertus/peers';

const REFERENCE = path.join(import.meta.dirname, '../../test/blocks_reference.py');

/** Float inputs that exercise every branch: Gaussian, outliers, all-positive, zero and constant blocks, exact ties. */
function floatCases(rng: Rng): Float32Array[] {
  const n = 256 * 6;
  const gauss = Float32Array.from({ length: n }, () => rng.normal() * 0.05);
  const outliers = gauss.map((v, i) => (i % 97 === 0 ? v * 300 : v));
  const positive = gauss.map((v) => Math.abs(v) + 0.01);
  const special = new Float32Array(n);
  for (let i = 0; i < n; i++) special[i] = i < 256 ? 0 : i < 512 ? 0.75 : i < 768 ? -1.5 : (i % 17) * 0.5 - 4;
  return [gauss, outliers, positive, special];
}

/** Random blocks of `type` whose f16 scale fields hold finite values. */
function randomBlocks(type: GgmlTypeName, blocks: number, rng: Rng): Uint8Array {
  const t = GGML_TYPES[type], out = new Uint8Array(blocks * t.typeSize), view = new DataView(out.buffer);
  for (let i = 0; i < out.length; i++) out[i] = Math.floor(rng.uniform() * 256);
  const scales = { Q8_0: [0], Q4_0: [0], Q4_K: [0, 2], Q6_K: [208] }[type as 'Q8_0'] ?? [];
  for (let b = 0; b < blocks; b++) for (const o of scales) view.setUint16(b * t.typeSize + o, f32ToF16Bits((rng.uniform() - 0.5) * 0.1), true);
  return out;
}

describe('block formats vs the numpy reference', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-blocks-'));
  const rng = new Rng(7);
  const cases: { name: string; op: 'quantize' | 'dequantize' | 'round'; type: GgmlTypeName | 'Q8_K' | 'Q8_0'; input: Uint8Array; n: number }[] = [];
  for (const type of ['Q8_0', 'Q8_K'] as const) {
    floatCases(rng).forEach((x, i) => cases.push({ name: `r-${type}-${i}`, op: 'round', type, input: new Uint8Array(x.buffer), n: x.length }));
  }
  // Q4_K's quantizer is llama.cpp's own, checked against llama.cpp itself in k-quants.test.ts.
  for (const type of ['Q8_0', 'Q4_0'] as const) {
    floatCases(rng).forEach((x, i) => cases.push({ name: `q-${type}-${i}`, op: 'quantize', type, input: new Uint8Array(x.buffer), n: x.length }));
  }
  for (const type of ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'] as const) {
    const blocks = 40, input = randomBlocks(type, blocks, rng);
    cases.push({ name: `d-${type}`, op: 'dequantize', type, input, n: blocks * GGML_TYPES[type].blockSize });
  }
  for (const c of cases) fs.writeFileSync(path.join(dir, `${c.name}.in`), c.input);
  fs.writeFileSync(path.join(dir, 'cases.txt'), cases.map((c) => `${c.name} ${c.op} ${c.type}`).join('\n') + '\n');
  execFileSync(peerPython(), [REFERENCE, dir], { stdio: 'inherit' });

  for (const c of cases) {
    it(`${c.op} ${c.type} (${c.name}) is identical`, () => {
      const expected = new Uint8Array(fs.readFileSync(path.join(dir, `${c.name}.out`)));
      const floats = new Float32Array(c.input.buffer);
      if (c.op === 'round') {
        // Activations as Q4_0/Q8_0 (Q8_0 blocks) or Q4_K/Q6_K (Q8_K super-blocks) products see them; ±0 compare equal.
        const ours = roundActivations(GGML_TYPES[c.type === 'Q8_K' ? 'Q4_K' : 'Q8_0'], floats), want = new Float32Array(expected.buffer);
        expect(ours.length).toBe(want.length);
        expect(ours.filter((v, i) => v !== want[i]).length).toBe(0);
        return;
      }
      const ours = c.op === 'quantize' ? quantize(c.type as GgmlTypeName, floats)
        : new Uint8Array(dequantize(GGML_TYPES[c.type as GgmlTypeName], c.input, c.n).buffer);
      expect(ours.length).toBe(expected.length);
      expect(Buffer.from(ours).equals(Buffer.from(expected))).toBe(true);
    });
  }

  it('round trip error stays within half a quantization step', () => {
    const x = floatCases(new Rng(3))[0]!;
    for (const type of ['Q8_0', 'Q4_0', 'Q4_K'] as const) {
      const y = dequantize(GGML_TYPES[type], quantize(type, x), x.length);
      let err = 0, amax = 0;
      x.forEach((v, i) => { err = Math.max(err, Math.abs(v - y[i]!)); amax = Math.max(amax, Math.abs(v)); });
      // Q8_0: step amax/127; Q4_0: amax/8 (asymmetric: up to one step); Q4_K: range/15 with 6-bit scales.
      const bound = { Q8_0: amax / 127, Q4_0: amax / 8, Q4_K: (2 * amax) / 15 }[type];
      expect(err).toBeLessThanOrEqual(bound);
    }
  });
});
