// The webgpu layout (`packForWebgpu`) holds the ggml blocks exactly: unpacked in JavaScript with
// the kernels' arithmetic (floor of products by powers of two), it gives back the stored bytes and,
// decoded, the values `dequantize` gives, bit for bit — for blocks from the quantizers (Q8_0,
// Q4_0, Q4_K) and for random bytes (every type: any bit pattern of the quants and the scales, the
// f16 scales any finite value, negative and subnormal ones included).
import { f32ToF16Bits, Rng, ShapeError } from '@apertus/tensor';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GgufQuantTypeError } from '../errors';
import { dequantize, quantize } from '../quant/index';
import { toF16 } from '../quant/rounding';
import { GGML_TYPES, type GgmlTypeName } from '../types';
import { GROUP_FLOATS, packedRowFloats, packForWebgpu, Q4_0_BLOCK_FLOATS, Q4_K_BLOCK_FLOATS, Q6_K_BLOCK_FLOATS, Q8_0_BLOCK_FLOATS, type WebgpuQuantType } from './webgpu-pack';

/** Split a packed float into `count` digits of base `base` (it must hold nothing more). */
function digits(v: number, base: number, count: number): number[] {
  expect(Number.isInteger(v) && v >= 0 && v < 2 ** 24, `packed value ${v}`).toBe(true);
  const out: number[] = [];
  for (let k = 0; k < count; k++) { const r = Math.floor(v * (1 / base)); out.push(v - r * base); v = r; }
  expect(v, 'nothing past the packed digits').toBe(0);
  return out;
}

/** `count` bytes packed three to a float from p[o] (the pad bytes of the last float must be zero). */
function packedBytes(p: Float32Array, o: number, count: number): number[] {
  const out: number[] = [];
  for (let t = 0; 3 * t < count; t++) out.push(...digits(p[o + t]!, 256, 3));
  expect(out.slice(count).every((u) => u === 0), 'pad bytes').toBe(true);
  return out.slice(0, count);
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
    const at = b * t.typeSize, y = b * t.blockSize;
    if (type === 'Q8_0') {
      const o = b * Q8_0_BLOCK_FLOATS, d = p[o + GROUP_FLOATS]!;
      bytes.set(f16Bits(d), at);
      packedBytes(p, o, 32).forEach((u, j) => { bytes[at + 2 + j] = u ^ 0x80; values[y + j] = d * (u - 128); });
    } else if (type === 'Q4_0') {
      const o = b * Q4_0_BLOCK_FLOATS, d = p[o + 6]!;
      bytes.set(f16Bits(d), at);
      packedBytes(p, o, 16).forEach((u, j) => {
        bytes[at + 2 + j] = u;
        values[y + j] = Math.fround(((u & 15) - 8) * d);
        values[y + j + 16] = Math.fround(((u >> 4) - 8) * d);
      });
    } else if (type === 'Q4_K') {
      const o = b * Q4_K_BLOCK_FLOATS, d = p[o + 44]!, dmin = p[o + 45]!;
      bytes.set(f16Bits(d), at);
      bytes.set(f16Bits(dmin), at + 2);
      const sc = [...digits(p[o + 46]!, 64, 4), ...digits(p[o + 47]!, 64, 4)], mn = [...digits(p[o + 48]!, 64, 4), ...digits(p[o + 49]!, 64, 4)];
      for (let j = 0; j < 4; j++) {
        bytes[at + 4 + j] = sc[j]! | ((sc[j + 4]! >> 4) << 6);
        bytes[at + 8 + j] = mn[j]! | ((mn[j + 4]! >> 4) << 6);
        bytes[at + 12 + j] = (sc[j + 4]! & 15) | ((mn[j + 4]! & 15) << 4);
      }
      for (let c = 0; c < 4; c++) {
        const g = packedBytes(p, o + c * GROUP_FLOATS, 32);
        bytes.set(g, at + 16 + 32 * c);
        for (const [s, shift] of [[2 * c, 0], [2 * c + 1, 4]] as const) {
          const dd = Math.fround(d * sc[s]!), dm = Math.fround(dmin * mn[s]!);
          g.forEach((u, l) => { values[y + 32 * s + l] = Math.fround(dd * ((u >> shift) & 15)) - dm; });
        }
      }
    } else {
      const o = b * Q6_K_BLOCK_FLOATS, d = p[o + 72]!;
      const q: number[] = [];
      for (let f = 0; f < 64; f++) q.push(...digits(p[o + f]!, 64, 4));
      const sc: number[] = [];
      for (let f = 0; f < 8; f++) sc.push(...digits(p[o + 64 + f]!, 256, 2).map((u) => u - 128));
      for (let half = 0; half < 2; half++) {
        for (let l = 0; l < 32; l++) {
          const [q1, q2, q3, q4] = [0, 32, 64, 96].map((k) => q[128 * half + k + l]!) as [number, number, number, number];
          bytes[at + 64 * half + l] = (q1 & 15) | ((q3 & 15) << 4);
          bytes[at + 64 * half + l + 32] = (q2 & 15) | ((q4 & 15) << 4);
          bytes[at + 128 + 32 * half + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
        }
      }
      sc.forEach((s, j) => { bytes[at + 192 + j] = s & 255; });
      bytes.set(f16Bits(d), at + 208);
      q.forEach((u, i) => { values[y + i] = Math.fround(d * sc[i >> 4]!) * (u - 32); });
    }
  }
  return { bytes, values };
}

/** Where a type's f16 scales are in its block. */
const F16_AT: Readonly<Record<WebgpuQuantType, readonly number[]>> = { Q8_0: [0], Q4_0: [0], Q4_K: [0, 2], Q6_K: [208] };

/** Random stored blocks: any quant and scale bytes, the f16 scales any finite value. */
function randomBlocks(type: WebgpuQuantType, blocks: number, rng: Rng): Uint8Array {
  const t = GGML_TYPES[type], out = Uint8Array.from({ length: blocks * t.typeSize }, () => Math.floor(rng.uniform() * 256));
  for (let b = 0; b < blocks; b++) {
    for (const at of F16_AT[type]) {
      const e = Math.floor(rng.uniform() * 40) - 26, bits = f32ToF16Bits((rng.uniform() < 0.5 ? -1 : 1) * 2 ** e * (1 + rng.uniform()));
      out[b * t.typeSize + at] = bits & 255;
      out[b * t.typeSize + at + 1] = bits >> 8;
    }
  }
  return out;
}

describe('packForWebgpu', () => {
  for (const type of ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'] as const) {
    it(`${type}: the packed rows give back the stored bytes and the dequantized values, bit for bit`, () => {
      fc.assert(fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 2 ** 30 }), fc.boolean(), (N, kb, seed, quantized) => {
        const t = GGML_TYPES[type], K = kb * t.blockSize, rng = new Rng(seed);
        const stored = quantized && type !== 'Q6_K' // (no Q6_K quantizer: random blocks only)
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

  it('bytes per weight: 1.5 (Q8_0), 0.875 (Q4_0), 0.78125 (Q4_K), 1.140625 (Q6_K), against 4 for float32', () => {
    expect((packedRowFloats('Q8_0', 256) * 4) / 256).toBe(1.5);
    expect((packedRowFloats('Q4_0', 256) * 4) / 256).toBe(0.875);
    expect((packedRowFloats('Q4_K', 256) * 4) / 256).toBe(0.78125);
    expect((packedRowFloats('Q6_K', 256) * 4) / 256).toBe(1.140625);
  });

  it('refuses types without a webgpu kernel and sizes that are not whole blocks', () => {
    expect(() => packForWebgpu(GGML_TYPES.F16, new Uint8Array(512), 1, 256)).toThrow(GgufQuantTypeError);
    expect(() => packForWebgpu(GGML_TYPES.F16, new Uint8Array(512), 1, 256)).toThrow(/no webgpu kernel for F16/);
    expect(() => packForWebgpu(GGML_TYPES.Q8_0, new Uint8Array(34), 1, 48)).toThrow(ShapeError);
    expect(() => packForWebgpu(GGML_TYPES.Q8_0, new Uint8Array(34), 1, 48)).toThrow(/not a \[1, 48\] Q8_0 matrix/);
  });
});
