// The relaxed-SIMD many-row Q4_K kernel (prefill.wat.mjs: Q8_K activations packed in tiles of 4
// rows, super-blocks read in place) against the single-row kernel of the same module and a
// double-precision reference on the dequantized weights and the rounded activations. The integer
// sums are exact: with unit super-block scales and integer activations (every float32 operation
// exact) the many-row product equals the integer product and the single-row kernel bit for bit;
// on random data it differs from the reference only by the order of float32 additions:
// |y − ref| ≤ 1e-5·Σ|x·w| (≲ 4·nb float32 roundings of terms bounded by Σ|x·w|, nb ≤ 8).
import { f32ToF16Bits, Rng } from '@apertus/tensor';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { roundActivations } from '../quant/activations';
import { dequantize, quantize } from '../quant/index';
import { QuantMatrix } from '../quant-matrix';
import { GGML_TYPES } from '../types';
import { kernelVariantAvailable, WeightArena } from './qmatmul';

const Q4_K = GGML_TYPES.Q4_K;

/** y = x·Wᵀ through QuantMatrix on a relaxed arena: M ≥ 4 takes the many-row kernel, M = 1 the single-row one. */
function product(data: Uint8Array, N: number, K: number, x: Float32Array, M: number): Float32Array {
  const y = new Float32Array(M * N);
  new QuantMatrix(Q4_K, [N, K], data, new WeightArena('relaxed')).matmulT(x, M, y);
  return y;
}

/** The same product one activation row at a time (the single-row kernel). */
function rowByRow(data: Uint8Array, N: number, K: number, x: Float32Array, M: number): Float32Array {
  const q = new QuantMatrix(Q4_K, [N, K], data, new WeightArena('relaxed')), y = new Float32Array(M * N);
  for (let m = 0; m < M; m++) q.matmulT(x.subarray(m * K, (m + 1) * K), 1, y.subarray(m * N, (m + 1) * N));
  return y;
}

/** Random Q4_K super-blocks with d = dmin = 1 (any nibbles, any 6-bit scales and mins): integer weights. */
function integerQ4K(rng: Rng, N: number, K: number): Uint8Array {
  const one = f32ToF16Bits(1), out = Uint8Array.from({ length: (N * K / 256) * Q4_K.typeSize }, () => Math.floor(rng.uniform() * 256));
  for (let o = 0; o < out.length; o += Q4_K.typeSize) { out[o] = out[o + 2] = one & 255; out[o + 1] = out[o + 3] = one >> 8; }
  return out;
}

/** Integers in [−7, 7] with +127 at the start of every 256 (Q8_K keeps them: max = 127, d8 = −1, q = −x). */
function integerActivations(rng: Rng, n: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => (i % 256 === 0 ? 127 : Math.floor(rng.uniform() * 15) - 7));
}

const RUNS = 40;

describe('relaxed many-row Q4_K kernel', () => {
  it('runs here (relaxed SIMD: Node 20 with the V8 flag set in-process)', () => {
    expect(kernelVariantAvailable('relaxed')).toBe(true);
  });

  it('integer weights and activations: the exact integer product, equal to the single-row kernel, for 4 to 23 rows', () => {
    fc.assert(fc.property(fc.integer({ min: 4, max: 23 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: 1 << 20 }), (M, N, nb, seed) => {
      const K = 256 * nb, rng = new Rng(seed), data = integerQ4K(rng, N, K), x = integerActivations(rng, M * K), w = dequantize(Q4_K, data, N * K);
      const ref = new Float32Array(M * N);
      for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) { let s = 0; for (let k = 0; k < K; k++) s += x[m * K + k]! * w[n * K + k]!; ref[m * N + n] = s; }
      const y = product(data, N, K, x, M);
      expect(y).toEqual(ref);
      expect(y).toEqual(rowByRow(data, N, K, x, M));
    }), { numRuns: RUNS });
  });

  it('random weights and activations: within 1e-5·Σ|x·w| of the float64 product of the rounded input and the dequantized weights', () => {
    fc.assert(fc.property(fc.integer({ min: 4, max: 23 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 0, max: 1 << 20 }), (M, N, nb, seed) => {
      const K = 256 * nb, rng = new Rng(seed);
      const data = quantize('Q4_K', Float32Array.from({ length: N * K }, () => rng.normal() * 0.05));
      const x = Float32Array.from({ length: M * K }, (_, i) => rng.normal() + (i % 7 === 0 ? 3 : 0));
      const y = product(data, N, K, x, M), w = dequantize(Q4_K, data, N * K), xr = roundActivations(Q4_K, x);
      for (let m = 0; m < M; m++) {
        for (let n = 0; n < N; n++) {
          let s = 0, a = 0;
          for (let k = 0; k < K; k++) { const p = xr[m * K + k]! * w[n * K + k]!; s += p; a += Math.abs(p); }
          expect(Math.abs(y[m * N + n]! - s)).toBeLessThanOrEqual(1e-5 * a);
        }
      }
    }), { numRuns: RUNS });
  });

  it('weight rows over several chunks (N = 1000, K = 512: three chunks of 455 rows) and leftover activation rows (M = 37)', () => {
    const rng = new Rng(3), M = 37, N = 1000, K = 512;
    const data = integerQ4K(rng, N, K), x = integerActivations(rng, M * K);
    expect(product(data, N, K, x, M)).toEqual(rowByRow(data, N, K, x, M));
  });
});
