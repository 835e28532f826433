// The quantizers Q8_0 and Q4_0 (the k-quantizers are llama.cpp's own, checked against llama.cpp
// itself in @apertus/gguf's quantizers.test.ts) and the activation quantizers (Q8_0, Q8_K) against an
// independent numpy implementation (blocks_reference.py): quantized bytes and the dequantized
// activations must be identical, bit for bit; and roundBf16Into against the scalar definition.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { peerPython } from '@apertus/peers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bf16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '../dtype';
import { ShapeError } from '../errors';
import { Rng } from '../random';
import { Q4_0, Q4_K, Q6_K, Q8_0, quantizeActivationsQ8_0, quantizeActivationsQ8_1, quantizeActivationsQ8_K, quantizeQ4_0, quantizeQ4_K, quantizeQ5_0, quantizeQ5_1, quantizeQ5_K, quantizeQ6_K, quantizeQ8_0, roundBf16Into, type QuantFormat, type QuantizedActivations } from './index';

const REFERENCE = path.join(import.meta.dirname, 'blocks_reference.py');

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

/** Random blocks of `f` whose f16 scale fields hold finite values. */
function randomBlocks(f: QuantFormat, blocks: number, rng: Rng): Uint8Array {
  const out = Uint8Array.from({ length: blocks * f.blockBytes }, () => Math.floor(rng.uniform() * 256)), view = new DataView(out.buffer);
  const scales = { q8_0: [0], q4_0: [0], q4_k: [0, 2], q6_k: [208] }[f.name as 'q8_0'] ?? [];
  for (let b = 0; b < blocks; b++) for (const o of scales) view.setUint16(b * f.blockBytes + o, f32ToF16Bits((rng.uniform() - 0.5) * 0.1), true);
  return out;
}

/** d·q of quantized activations. */
const decode = (a: QuantizedActivations): Float32Array => {
  const per = a.q.length / a.d.length;
  return Float32Array.from(a.q, (q, i) => a.d[Math.floor(i / per)]! * q);
};

const QUANTIZERS = { Q8_0: quantizeQ8_0, Q4_0: quantizeQ4_0, Q4_K: quantizeQ4_K };
const FORMATS: Record<string, QuantFormat> = { Q8_0, Q4_0, Q4_K, Q6_K };

describe('quantizers vs the numpy reference', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-blocks-'));
  const rng = new Rng(7);
  const cases: { name: string; op: 'quantize' | 'dequantize' | 'round'; type: string; input: Uint8Array; n: number }[] = [];
  for (const type of ['Q8_0', 'Q8_K'] as const) floatCases(rng).forEach((x, i) => cases.push({ name: `r-${type}-${i}`, op: 'round', type, input: new Uint8Array(x.buffer), n: x.length }));
  for (const type of ['Q8_0', 'Q4_0'] as const) floatCases(rng).forEach((x, i) => cases.push({ name: `q-${type}-${i}`, op: 'quantize', type, input: new Uint8Array(x.buffer), n: x.length }));
  for (const type of ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'] as const) {
    const f = FORMATS[type]!, blocks = 40;
    cases.push({ name: `d-${type}`, op: 'dequantize', type, input: randomBlocks(f, blocks, rng), n: blocks * f.blockValues });
  }
  for (const c of cases) fs.writeFileSync(path.join(dir, `${c.name}.in`), c.input);
  fs.writeFileSync(path.join(dir, 'cases.txt'), cases.map((c) => `${c.name} ${c.op} ${c.type}`).join('\n') + '\n');
  execFileSync(peerPython(), [REFERENCE, dir], { stdio: 'inherit' });

  for (const c of cases) {
    it(`${c.op} ${c.type} (${c.name}) is identical`, () => {
      const expected = new Uint8Array(fs.readFileSync(path.join(dir, `${c.name}.out`)));
      const floats = new Float32Array(c.input.buffer);
      if (c.op === 'round') {
        // As a product's input is quantized: Q8_0 blocks, or Q8_K super-blocks; ±0 compare equal.
        const ours = decode(c.type === 'Q8_K' ? quantizeActivationsQ8_K(floats) : quantizeActivationsQ8_0(floats)), want = new Float32Array(expected.buffer);
        expect(ours.length).toBe(want.length);
        expect(ours.filter((v, i) => v !== want[i]).length).toBe(0);
        return;
      }
      let ours: Uint8Array;
      if (c.op === 'quantize') ours = QUANTIZERS[c.type as keyof typeof QUANTIZERS](floats);
      else { const out = new Float32Array(c.n); FORMATS[c.type]!.dequantize(c.input, out); ours = new Uint8Array(out.buffer); }
      expect(ours.length).toBe(expected.length);
      expect(Buffer.from(ours).equals(Buffer.from(expected))).toBe(true);
    });
  }

  it('round trip error stays within half a quantization step', () => {
    const x = floatCases(new Rng(3))[0]!;
    for (const type of ['Q8_0', 'Q4_0', 'Q4_K'] as const) {
      const y = new Float32Array(x.length);
      FORMATS[type]!.dequantize(QUANTIZERS[type](x), y);
      let err = 0, amax = 0;
      x.forEach((v, i) => { err = Math.max(err, Math.abs(v - y[i]!)); amax = Math.max(amax, Math.abs(v)); });
      // Q8_0: step amax/127; Q4_0: amax/8 (asymmetric: up to one step); Q4_K: range/15 with 6-bit scales.
      const bound = { Q8_0: amax / 127, Q4_0: amax / 8, Q4_K: (2 * amax) / 15 }[type];
      expect(err).toBeLessThanOrEqual(bound);
    }
  });

  it('the activation sums are the sums of the quants (Q8_0 per block, Q8_K per 16), and Q8_1 carries s = f16(d·Σq)', () => {
    const x = floatCases(new Rng(9))[1]!;
    const a = quantizeActivationsQ8_0(x), k = quantizeActivationsQ8_K(x), one = quantizeActivationsQ8_1(x);
    a.sums.forEach((s, b) => expect(s).toBe(a.q.subarray(32 * b, 32 * b + 32).reduce((t, v) => t + v, 0)));
    k.sums.forEach((s, g) => expect(s).toBe(k.q.subarray(16 * g, 16 * g + 16).reduce((t, v) => t + v, 0)));
    expect(one.q).toEqual(a.q);
    expect(one.d).toEqual(a.d);
    one.s.forEach((s, b) => {
      let amax = 0;
      for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[32 * b + j]!));
      // d·Σq before the f16 rounding, within one f16 rounding (half an ulp of 2^-11) of s.
      const ds = Math.fround(Math.fround(amax / 127) * a.sums[b]!);
      expect(Math.abs(s - ds)).toBeLessThanOrEqual(Math.abs(ds) * 2 ** -11 + 2 ** -25);
    });
  });
});

describe('roundBf16Into', () => {
  /** The bits of bf16(v) widened to float32, one value at a time through the scalar conversions. */
  const scalarBits = (v: number): number => new Uint32Array(Float32Array.of(bf16BitsToF32(f32ToBf16Bits(v))).buffer)[0]!;

  it('gives the bits of bf16BitsToF32(f32ToBf16Bits(v)) for any float32 bit pattern, ties and neighbours included', () => {
    const word = fc.integer({ min: 0, max: 0xffffffff });
    // A tie is a pattern whose low 16 bits are 0x8000; ±1 beside it rounds the other way.
    const near = fc.tuple(word, fc.integer({ min: -1, max: 1 })).map(([u, d]) => (((u & 0xffff0000) | 0x8000) + d) >>> 0);
    fc.assert(fc.property(fc.array(fc.oneof(word, near), { minLength: 1, maxLength: 64 }), (bits) => {
      const x = new Float32Array(Uint32Array.from(bits).buffer), out = new Float32Array(x.length);
      roundBf16Into(x, out);
      const got = new Uint32Array(out.buffer);
      x.forEach((v, i) => expect(got[i]).toBe(scalarBits(v)));
      // In place (out = x) gives the same.
      expect(new Uint32Array(roundBf16Into(x, x).buffer)).toEqual(got);
    }), { numRuns: 300 });
  });
});

describe('quantizer input lengths', () => {
  const quantizers = { quantizeQ4_0: [quantizeQ4_0, 32], quantizeQ8_0: [quantizeQ8_0, 32], quantizeQ5_0: [quantizeQ5_0, 32], quantizeQ5_1: [quantizeQ5_1, 32], quantizeQ4_K: [quantizeQ4_K, 256], quantizeQ5_K: [quantizeQ5_K, 256], quantizeQ6_K: [quantizeQ6_K, 256] } as const;
  for (const [name, [quantize, block]] of Object.entries(quantizers)) {
    it(`${name}: a length that is not a whole number of ${block}-value blocks is a ShapeError naming it; no values, no bytes`, () => {
      for (const n of [1, block - 1, block + 1, 3 * block + 7]) expect(() => quantize(new Float32Array(n))).toThrow(new ShapeError(`${name}: ${n} values are not a whole number of ${block}-value blocks`));
      expect(quantize(new Float32Array(0)).length).toBe(0);
    });
  }
});
