// The webgpu layout (`packForWebgpu`) holds the ggml blocks exactly: unpacked in JavaScript with
// the kernels' arithmetic (floor of products by powers of two), it gives back the stored bytes and,
// decoded, the values `dequantize` gives, bit for bit — for blocks from the quantizers and for
// random bytes (every bit pattern of the quants and of the packed 6-bit scales; d and dmin any
// finite f16, negative and subnormal ones included).
import { f32ToF16Bits, Rng } from '@apertus/tensor';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dequantize, quantize } from '../quant/index';
import { toF16 } from '../quant/rounding';
import { GGML_TYPES, type GgmlTypeName } from '../types';
import { GROUP_FLOATS, packedRowFloats, packForWebgpu, Q4_K_BLOCK_FLOATS, Q8_0_BLOCK_FLOATS, type WebgpuQuantType } from './webgpu-pack';

/** The three bytes of a packed float, as the kernels take it apart. */
function bytesOf(v: number): [number, number, number] {
  expect(Number.isInteger(v) && v >= 0 && v < 2 ** 24, `packed value ${v}`).toBe(true);
  const v1 = Math.floor(v * 0.00390625), u2 = Math.floor(v1 * 0.00390625);
  return [v - v1 * 256, v1 - u2 * 256, u2];
}

/** The 32 bytes of the group at `o` (its 33rd byte must be the zero pad). */
function group(p: Float32Array, o: number): number[] {
  const out: number[] = [];
  for (let t = 0; t < GROUP_FLOATS; t++) out.push(...bytesOf(p[o + t]!));
  expect(out[32], 'pad byte').toBe(0);
  return out.slice(0, 32);
}

/** Four 6-bit values of a packed float. */
function sixBits(v: number): number[] {
  const out: number[] = [];
  for (let k = 0; k < 4; k++) { const r = Math.floor(v * 0.015625); out.push(v - r * 64); v = r; }
  expect(v, 'packed 6-bit values').toBe(0);
  return out;
}

function f16Bits(v: number): [number, number] {
  const bits = toF16(v).bits;
  expect(toF16(v).value, 'an f16 value').toBe(v);
  return [bits & 255, bits >> 8];
}

/** The ggml bytes back from the packed layout, and the values decoded from it (as `dequantize` computes them). */
function unpack(type: WebgpuQuantType, p: Float32Array, blocks: number): { bytes: Uint8Array; values: Float32Array } {
  const t = GGML_TYPES[type], bytes = new Uint8Array(blocks * t.typeSize), values = new Float32Array(blocks * t.blockSize);
  for (let b = 0; b < blocks; b++) {
    const at = b * t.typeSize;
    if (type === 'Q8_0') {
      const o = b * Q8_0_BLOCK_FLOATS, d = p[o + GROUP_FLOATS]!;
      bytes.set(f16Bits(d), at);
      group(p, o).forEach((u, j) => { bytes[at + 2 + j] = u ^ 0x80; values[32 * b + j] = d * (u - 128); });
      continue;
    }
    const o = b * Q4_K_BLOCK_FLOATS, d = p[o + 44]!, dmin = p[o + 45]!;
    bytes.set(f16Bits(d), at);
    bytes.set(f16Bits(dmin), at + 2);
    const sc = [...sixBits(p[o + 46]!), ...sixBits(p[o + 47]!)], mn = [...sixBits(p[o + 48]!), ...sixBits(p[o + 49]!)];
    for (let j = 0; j < 4; j++) {
      bytes[at + 4 + j] = sc[j]! | ((sc[j + 4]! >> 4) << 6);
      bytes[at + 8 + j] = mn[j]! | ((mn[j + 4]! >> 4) << 6);
      bytes[at + 12 + j] = (sc[j + 4]! & 15) | ((mn[j + 4]! & 15) << 4);
    }
    for (let c = 0; c < 4; c++) {
      const g = group(p, o + c * GROUP_FLOATS);
      bytes.set(g, at + 16 + 32 * c);
      for (const [s, shift] of [[2 * c, 0], [2 * c + 1, 4]] as const) {
        const dd = Math.fround(d * sc[s]!), dm = Math.fround(dmin * mn[s]!);
        g.forEach((u, l) => { values[256 * b + 32 * s + l] = Math.fround(dd * ((u >> shift) & 15)) - dm; });
      }
    }
  }
  return { bytes, values };
}

/** Random stored blocks: any quant and scale bytes, d and dmin finite f16s. */
function randomBlocks(type: WebgpuQuantType, blocks: number, rng: Rng): Uint8Array {
  const t = GGML_TYPES[type], out = Uint8Array.from({ length: blocks * t.typeSize }, () => Math.floor(rng.uniform() * 256));
  for (let b = 0; b < blocks; b++) {
    for (const at of type === 'Q8_0' ? [0] : [0, 2]) {
      const e = Math.floor(rng.uniform() * 40) - 26, bits = f32ToF16Bits((rng.uniform() < 0.5 ? -1 : 1) * 2 ** e * (1 + rng.uniform()));
      out[b * t.typeSize + at] = bits & 255;
      out[b * t.typeSize + at + 1] = bits >> 8;
    }
  }
  return out;
}

describe('packForWebgpu', () => {
  for (const type of ['Q8_0', 'Q4_K'] as const) {
    it(`${type}: the packed rows give back the stored bytes and the dequantized values, bit for bit`, () => {
      fc.assert(fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 2 ** 30 }), fc.boolean(), (N, kb, seed, quantized) => {
        const t = GGML_TYPES[type], K = kb * t.blockSize, rng = new Rng(seed);
        const stored = quantized
          ? quantize(type as GgmlTypeName, Float32Array.from({ length: N * K }, () => rng.normal() * 0.1))
          : randomBlocks(type, (N * K) / t.blockSize, rng);
        const p = packForWebgpu(t, stored, N, K);
        expect(p.length).toBe(N * packedRowFloats(type, K));
        const { bytes, values } = unpack(type, p, (N * K) / t.blockSize);
        expect(bytes).toEqual(stored);
        const want = dequantize(t, stored, N * K);
        for (let i = 0; i < want.length; i++) if (!Object.is(values[i], want[i])) expect.fail(`value ${i}: ${values[i]} != ${want[i]}`);
      }), { numRuns: 60 });
    });
  }

  it('bytes per weight: 1.5 (Q8_0) and 0.78125 (Q4_K), against 4 for float32', () => {
    expect((packedRowFloats('Q8_0', 256) * 4) / 256).toBe(1.5);
    expect((packedRowFloats('Q4_K', 256) * 4) / 256).toBe(0.78125);
  });

  it('refuses types without a webgpu kernel and sizes that are not whole blocks', () => {
    expect(() => packForWebgpu(GGML_TYPES.Q6_K, new Uint8Array(210), 1, 256)).toThrow(/no webgpu kernel for Q6_K/);
    expect(() => packForWebgpu(GGML_TYPES.Q8_0, new Uint8Array(34), 1, 48)).toThrow(/not a \[1, 48\] Q8_0 matrix/);
  });
});
