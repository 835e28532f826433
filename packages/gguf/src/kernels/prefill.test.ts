// The relaxed-SIMD many-row kernels (prefill.wat.mjs: Q8_K or sign-split Q8_0 activations packed
// in tiles of rows, the Q4_K super-blocks or Q8_0 blocks read in place) against the single-row
// kernel of the same module and a double-precision reference on the dequantized weights and the
// rounded activations. The integer sums are exact: with unit block scales and integer activations
// (every float32 operation exact) the many-row product equals the integer product and the
// single-row kernel bit for bit; on random data it differs from the reference only by the order
// of float32 additions: |y − ref| ≤ 1e-5·Σ|x·w| (≲ 4·nb float32 roundings of terms bounded by
// Σ|x·w|; nb ≤ 8 super-blocks or 24 blocks).
import { f32ToF16Bits, Rng } from '@apertus/tensor';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { roundActivations } from '../quant/activations';
import { dequantize, quantize } from '../quant/index';
import { QuantMatrix } from '../quant-matrix';
import { GGML_TYPES, type GgmlType } from '../types';
import { kernelVariantAvailable, MANY_ROWS_FROM, WeightArena } from './qmatmul';

/** y = x·Wᵀ through QuantMatrix on a relaxed arena: from MANY_ROWS_FROM rows on the many-row kernel, at M = 1 the single-row one. */
function product(type: GgmlType, data: Uint8Array, N: number, K: number, x: Float32Array, M: number): Float32Array {
  const y = new Float32Array(M * N);
  new QuantMatrix(type, [N, K], data, new WeightArena('relaxed')).matmulT(x, M, y);
  return y;
}

/** The same product one activation row at a time (the single-row kernel). */
function rowByRow(type: GgmlType, data: Uint8Array, N: number, K: number, x: Float32Array, M: number): Float32Array {
  const q = new QuantMatrix(type, [N, K], data, new WeightArena('relaxed')), y = new Float32Array(M * N);
  for (let m = 0; m < M; m++) q.matmulT(x.subarray(m * K, (m + 1) * K), 1, y.subarray(m * N, (m + 1) * N));
  return y;
}

/** The float64 product of x [M, K] and w [N, K]ᵀ, with Σ|x·w| per output. */
function reference(x: Float32Array, w: Float32Array, M: number, N: number, K: number): { y: Float64Array; abs: Float64Array } {
  const y = new Float64Array(M * N), abs = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let s = 0, a = 0;
      for (let k = 0; k < K; k++) { const p = x[m * K + k]! * w[n * K + k]!; s += p; a += Math.abs(p); }
      y[m * N + n] = s; abs[m * N + n] = a;
    }
  }
  return { y, abs };
}

/**
 * Random blocks with unit scales (Q4_K: d = dmin = 1, any nibbles, 6-bit scales and mins; Q8_0:
 * d = 1, any int8 from `quant`, −128 included): integer weights.
 */
function integerWeights(type: GgmlType, rng: Rng, N: number, K: number, quant = () => Math.floor(rng.uniform() * 256)): Uint8Array {
  const one = f32ToF16Bits(1), out = Uint8Array.from({ length: (N * K / type.blockSize) * type.typeSize }, quant);
  for (let o = 0; o < out.length; o += type.typeSize) {
    out[o] = one & 255; out[o + 1] = one >> 8;
    if (type === GGML_TYPES.Q4_K) { out[o + 2] = one & 255; out[o + 3] = one >> 8; }
  }
  return out;
}

/**
 * Integers in [−7, 7] with ±127 at the start of every 32 (Q8_K keeps them: max = ±127, d8 = ∓1,
 * q = ∓x; Q8_0 too: amax = 127, d = 1).
 */
function integerActivations(rng: Rng, n: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => (i % 32 === 0 ? (rng.uniform() < 0.5 ? 127 : -127) : Math.floor(rng.uniform() * 15) - 7));
}

const RUNS = 40;

describe('relaxed many-row kernels', () => {
  it('run here', () => {
    expect(kernelVariantAvailable('relaxed')).toBe(true);
  });

  for (const type of [GGML_TYPES.Q4_K, GGML_TYPES.Q8_0]) {
    const from = MANY_ROWS_FROM, B = type.blockSize, maxBlocks = B === 32 ? 24 : 8;

    it(`${type.name}: integer weights and activations: the exact integer product, equal to the single-row kernel, for ${from} to ${from + 19} rows`, () => {
      fc.assert(fc.property(fc.integer({ min: from, max: from + 19 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: maxBlocks / 2 }), fc.integer({ min: 0, max: 1 << 20 }), (M, N, nb, seed) => {
        const K = B * nb, rng = new Rng(seed), data = integerWeights(type, rng, N, K), x = integerActivations(rng, M * K);
        const y = product(type, data, N, K, x, M);
        expect(y).toEqual(Float32Array.from(reference(x, dequantize(type, data, N * K), M, N, K).y));
        expect(y).toEqual(rowByRow(type, data, N, K, x, M));
      }), { numRuns: RUNS });
    });

    it(`${type.name}: random weights and activations: within 1e-5·Σ|x·w| of the float64 product of the rounded input and the dequantized weights`, () => {
      fc.assert(fc.property(fc.integer({ min: from, max: from + 19 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: maxBlocks }), fc.integer({ min: 0, max: 1 << 20 }), (M, N, nb, seed) => {
        const K = B * nb, rng = new Rng(seed);
        const data = quantize(type.name, Float32Array.from({ length: N * K }, () => rng.normal() * 0.05));
        const x = Float32Array.from({ length: M * K }, (_, i) => rng.normal() + (i % 7 === 0 ? 3 : 0));
        const y = product(type, data, N, K, x, M), ref = reference(roundActivations(type, x), dequantize(type, data, N * K), M, N, K);
        for (let i = 0; i < M * N; i++) expect(Math.abs(y[i]! - ref.y[i]!)).toBeLessThanOrEqual(1e-5 * ref.abs[i]!);
      }), { numRuns: RUNS });
    });

    it(`${type.name}: weight rows over several chunks (N = 1000, K = 512) and leftover activation rows (M = 37)`, () => {
      const rng = new Rng(3), M = 37, N = 1000, K = 512;
      const data = integerWeights(type, rng, N, K), x = integerActivations(rng, M * K);
      expect(product(type, data, N, K, x, M)).toEqual(rowByRow(type, data, N, K, x, M));
    });
  }

  it('Q8_0: extreme quants (weights −128, −127, 127; activations ±127): every i16 pair sum at its bound 2·128·127, the exact integer product', () => {
    const rng = new Rng(7), M = 21, N = 11, K = 96, extremes = [128, 129, 127];
    const data = integerWeights(GGML_TYPES.Q8_0, rng, N, K, () => extremes[Math.floor(rng.uniform() * 3)]!);
    // All −128 in the first row: Σ = −128·Σx, the largest pairs.
    for (let b = 0; b < K / 32; b++) data.fill(128, 34 * b + 2, 34 * b + 34);
    const x = Float32Array.from({ length: M * K }, (_, i) => (i % 3 === 0 || rng.uniform() < 0.5 ? 127 : -127));
    const y = product(GGML_TYPES.Q8_0, data, N, K, x, M);
    expect(y).toEqual(Float32Array.from(reference(x, dequantize(GGML_TYPES.Q8_0, data, N * K), M, N, K).y));
    expect(y).toEqual(rowByRow(GGML_TYPES.Q8_0, data, N, K, x, M));
  });
});
