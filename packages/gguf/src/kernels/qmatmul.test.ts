// The WebAssembly matrix kernels against a double-precision reference on the dequantized weights
// and the rounded activations (quant/activations.ts, checked against numpy), over random shapes
// that cover the two-row tiles and the leftover rows and activation rows, and Q8_0 rows of 1 to 11
// blocks (the relaxed matrix-vector kernel widens scales in fours and takes blocks in pairs, then the leftover ones; its
// two-row form takes weight rows in pairs, an odd last row alone) (fast-check), and the committed module
// against a fresh build of kernels.wat.mjs, in both builds (SIMD128 and relaxed SIMD). Integer sums
// are exact in the kernels, so the only differences are the order, rounding and (relaxed) fusing
// of float32 additions: |y − ref| ≤ 1e-5 · Σ|x_k·w_k|. With unit block scales and small integer
// values every float32 operation is exact too, and both builds must match the integer reference
// bit for bit.
import { f32ToBf16Bits, f32ToF16Bits, Rng } from '@apertus/tensor';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { quantizeActivationsQ8_0, quantizeActivationsQ8_K, roundActivations } from '../quant/activations';
import { dequantize, quantize } from '../quant/index';
import { FLOAT_GEMM_MIN_ROWS, QuantMatrix } from '../quant-matrix';
import { randomQ6K, randomWeights as weights } from '../fixture.test-helper';
import { GGML_TYPES, QK_K, type GgmlTypeName } from '../types';
import { hasKernel, kernelVariantAvailable, MANY_ROWS_FROM, moduleQuantizedActivations, residentBytes, WeightArena, type KernelVariant } from './qmatmul';
import { QUANT_KERNELS_WASM, QUANT_KERNELS_WASM_RELAXED } from './module.generated';

/** max over outputs of |y − ref| / Σ_k |x_k·w_k| against the float64 product of the rounded input and the dequantized weights. */
function relError(type: GgmlTypeName, data: Uint8Array, x: Float32Array, M: number, N: number, K: number, y: Float32Array): number {
  const t = GGML_TYPES[type], w = dequantize(t, data, N * K), xr = roundActivations(t, x);
  let worst = 0;
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let s = 0, a = 0;
      for (let k = 0; k < K; k++) { const p = xr[m * K + k]! * w[n * K + k]!; s += p; a += Math.abs(p); }
      worst = Math.max(worst, Math.abs(y[m * N + n]! - s) / (a || 1));
    }
  }
  return worst;
}

const TYPES = ['F32', 'BF16', 'Q8_0', 'Q4_K', 'Q6_K'] as const;
const VARIANTS: readonly KernelVariant[] = ['simd', 'relaxed'];

/**
 * Stored bytes of a random [N, K] matrix with unit block scales and small integer values (F32/BF16
 * in [−15, 15]; Q8_0 any int8 with d = 1; Q4_K d = dmin = 1 with any 6-bit scales and mins; Q6_K
 * d = 1 with scales in [−16, 16]): every dequantized weight is an integer.
 */
function integerWeights(type: GgmlTypeName, rng: Rng, N: number, K: number): Uint8Array {
  const t = GGML_TYPES[type], n = N * K, byte = () => Math.floor(rng.uniform() * 256);
  const one = f32ToF16Bits(1), small = (m: number) => Math.floor(rng.uniform() * (2 * m + 1)) - m;
  if (type === 'F32') return new Uint8Array(Float32Array.from({ length: n }, () => small(15)).buffer);
  if (type === 'BF16') return new Uint8Array(Uint16Array.from({ length: n }, () => f32ToBf16Bits(small(15))).buffer);
  const out = Uint8Array.from({ length: (n / t.blockSize) * t.typeSize }, byte);
  for (let o = 0; o < out.length; o += t.typeSize) {
    if (type === 'Q6_K') { out[o + 208] = one & 255; out[o + 209] = one >> 8; for (let j = 0; j < 16; j++) out[o + 192 + j] = small(16) & 255; continue; }
    out[o] = one & 255; out[o + 1] = one >> 8;
    if (type === 'Q4_K') { out[o + 2] = one & 255; out[o + 3] = one >> 8; }
  }
  return out;
}

/**
 * Activations that both quantizers keep as they are: integers in [−7, 7] with +127 at the start of
 * every 32 values (Q8_0: amax = 127, d = 1; Q8_K: max = +127, d = −1 and q = −x).
 */
function integerActivations(rng: Rng, n: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => (i % 32 === 0 ? 127 : Math.floor(rng.uniform() * 15) - 7));
}

describe('matrix kernels on resident weights', () => {
  it('both builds of the kernels run here', () => {
    for (const v of VARIANTS) expect(kernelVariantAvailable(v)).toBe(true);
    expect(new WeightArena('relaxed').variant).toBe('relaxed');
  });

  for (const variant of VARIANTS) {
    for (const type of TYPES) {
      it(`${type} (${variant}): y = x·Wᵀ within 1e-5·Σ|x·w| over random shapes (odd row counts, 1 to ${FLOAT_GEMM_MIN_ROWS + 3} activation rows)`, () => {
        const t = GGML_TYPES[type], unit = t.blockSize === 1 ? 8 : t.blockSize;
        expect(hasKernel(t, unit)).toBe(true);
        fc.assert(fc.property(
          fc.integer({ min: 1, max: FLOAT_GEMM_MIN_ROWS + 3 }), fc.integer({ min: 1, max: 13 }), fc.integer({ min: 1, max: t.blockSize === 1 ? 40 : t.blockSize === 32 ? 11 : 3 }), fc.integer({ min: 0, max: 1000 }),
          (M, N, blocks, seed) => {
            const K = blocks * unit, rng = new Rng(seed);
            const data = weights(type, rng, N, K);
            const x = Float32Array.from({ length: M * K }, (_, i) => rng.normal() + (i % 7 === 0 ? 3 : 0));
            const y = new Float32Array(M * N);
            new QuantMatrix(t, [N, K], data, new WeightArena(variant)).matmulT(x, M, y);
            expect(relError(type, data, x, M, N, K, y)).toBeLessThan(1e-5);
          }), { numRuns: 40 });
      });

      it(`${type} (${variant}): integer-valued weights and activations give the exact integer products`, () => {
        const t = GGML_TYPES[type], unit = t.blockSize === 1 ? 8 : t.blockSize;
        fc.assert(fc.property(
          fc.integer({ min: 1, max: FLOAT_GEMM_MIN_ROWS - 1 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: t.blockSize === 1 ? 40 : t.blockSize === 32 ? 11 : 2 }), fc.integer({ min: 0, max: 1000 }),
          (M, N, blocks, seed) => {
            const K = Math.max(32, blocks * unit), rng = new Rng(seed);
            const data = integerWeights(type, rng, N, K), x = integerActivations(rng, M * K), w = dequantize(t, data, N * K);
            const y = new Float32Array(M * N), ref = new Float32Array(M * N);
            for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) { let s = 0; for (let k = 0; k < K; k++) s += x[m * K + k]! * w[n * K + k]!; ref[m * N + n] = s; }
            new QuantMatrix(t, [N, K], data, new WeightArena(variant)).matmulT(x, M, y);
            expect(y).toEqual(ref);
          }), { numRuns: 40 });
      });
    }
  }

  // Weights of 1e-7 to 1e-5: block scales (Q8_0 d, Q4_K d and dmin, Q6_K d) that are f16
  // subnormals, which the kernels widen without a subnormal float operand (wat.mjs).
  for (const variant of VARIANTS) {
    for (const type of ['Q8_0', 'Q4_K', 'Q6_K'] as const) {
      it(`${type} (${variant}): f16-subnormal block scales, y = x·Wᵀ within 1e-5·Σ|x·w| (1 to 5 activation rows)`, () => {
        const t = GGML_TYPES[type];
        fc.assert(fc.property(
          fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: t.blockSize === 32 ? 11 : 2 }), fc.integer({ min: -7, max: -5 }), fc.integer({ min: 0, max: 1000 }),
          (M, N, blocks, e, seed) => {
            const K = blocks * t.blockSize, rng = new Rng(seed);
            const data = type === 'Q6_K' ? randomQ6K(rng, N * K, 10 ** e) : quantize(type, Float32Array.from({ length: N * K }, () => rng.normal() * 10 ** e));
            const x = Float32Array.from({ length: M * K }, () => rng.normal());
            const y = new Float32Array(M * N);
            new QuantMatrix(t, [N, K], data, new WeightArena(variant)).matmulT(x, M, y);
            expect(relError(type, data, x, M, N, K, y)).toBeLessThan(1e-5);
          }), { numRuns: 40 });
      });
    }
  }

  for (const type of ['Q8_0', 'Q4_K', 'Q6_K'] as const) {
    it(`${type}: a many-row product over several chunks of unpacked weight rows (N = 1031, one row past the many-row threshold)`, () => {
      const arena = new WeightArena(), t = GGML_TYPES[type];
      const rng = new Rng(9), M = MANY_ROWS_FROM + 1, N = 1031, K = 256;
      const data = weights(type, rng, N, K), x = Float32Array.from({ length: M * K }, () => rng.normal());
      const y = new Float32Array(M * N);
      new QuantMatrix(t, [N, K], data, arena).matmulT(x, M, y);
      expect(relError(type, data, x, M, N, K, y)).toBeLessThan(1e-5);
    });
  }

  it('matrices of one arena keep their bytes as later ones grow the memory', () => {
    const rng = new Rng(5), arena = new WeightArena(), t = GGML_TYPES.Q4_K;
    const a = weights('Q4_K', rng, 16, 512), b = weights('Q4_K', rng, 3000, 512);
    const A = new QuantMatrix(t, [16, 512], a, arena), B = new QuantMatrix(t, [3000, 512], b, arena);
    const x = Float32Array.from({ length: 512 }, () => rng.normal()), y = new Float32Array(16);
    A.matmulT(x, 1, y);
    expect(relError('Q4_K', a, x, 1, 16, 512, y)).toBeLessThan(1e-5);
    const out = new Float32Array(512);
    B.rows(Int32Array.of(2999), out);
    expect(out).toEqual(dequantize(t, b.subarray(2999 * B.rowBytes), 512));
    expect(residentBytes({ slab: null, offset: 0, byteLength: 3, plain: Uint8Array.of(1, 2, 3) })).toEqual(Uint8Array.of(1, 2, 3));
  });

  it('Q8_K activations carry the sum of every 32 quants', () => {
    const rng = new Rng(2), x = Float32Array.from({ length: 1024 }, () => rng.normal());
    const a = quantizeActivationsQ8_K(x);
    for (let s = 0; s < a.sums!.length; s++) expect(a.sums![s]).toBe(a.q.subarray(32 * s, 32 * s + 32).reduce((t, v) => t + v, 0));
  });

  it('the module quantizes activations bit for bit as quant/activations.ts (Q8_0, its sign-split form, Q8_K with its sums)', () => {
    // Magnitudes from 1e-9 to 1e6 (f16 subnormal, normal and overflowing scales), zero blocks, the largest value anywhere.
    fc.assert(fc.property(fc.integer({ min: 1, max: 3 }), fc.integer({ min: -9, max: 6 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 1000 }), (blocks, e, top, seed) => {
      const rng = new Rng(seed), n = blocks * QK_K;
      const x = Float32Array.from({ length: n }, (_, i) => (i < 32 && seed % 5 === 0 ? 0 : rng.normal() * 10 ** e));
      x[top] = (seed % 2 ? -1 : 1) * 9 * 10 ** e;
      const k = moduleQuantizedActivations('Q8_K', x), refK = quantizeActivationsQ8_K(x);
      expect(k.q).toEqual(refK.q);
      expect(k.d).toEqual(refK.d);
      expect(k.sums).toEqual(refK.sums);
      expect(k.dsums).toEqual(Float32Array.from(refK.sums!, (s, i) => refK.d[i >> 3]! * s));
      const z = moduleQuantizedActivations('Q8_0', x), ref0 = quantizeActivationsQ8_0(x);
      expect(z.q).toEqual(ref0.q);
      expect(z.d).toEqual(ref0.d);
      const split = new Int8Array(2 * n);
      ref0.q.forEach((q, i) => { split[64 * (i >> 5) + (i & 31) + (q < 0 ? 32 : 0)] = Math.abs(q); });
      expect(moduleQuantizedActivations('Q8_0', x, true).q).toEqual(split);
    }), { numRuns: 60 });
  });

  it('the committed modules are fresh builds of kernels.wat.mjs', async () => {
    // @ts-expect-error: plain JavaScript generator without types
    const { buildBase64 } = await import('./generate.mjs');
    expect(await buildBase64()).toBe(QUANT_KERNELS_WASM);
    expect(await buildBase64(true)).toBe(QUANT_KERNELS_WASM_RELAXED);
  });
});
