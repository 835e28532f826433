// packedLinear against the TypeScript reference: every quantized dtype bit for bit, in both
// builds, on 1, 2 and 3 threads (identical outputs), with the weight on the cpu heap or in a
// weights memory and the input and output inside or outside that memory, over odd shapes (leftover
// rows, M from 1 to 20, K at the block granularity) and extreme values (−128 weights, f16-subnormal
// scales, large inputs). The float dtypes against a float64 product within the bound of any order
// of float32 sums.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { Rng } from '../../../random';
import { f16BitsToF32, f32ToBf16Bits, f32ToF16Bits, bf16BitsToF32 } from '../../../dtype';
import { gemmKernelInfo, gemmThreads, setGemmThreads } from '../../gemm/cpu';
import { heapF32 } from '../../../memory/heap';
import { QUANT_FORMATS, type QuantDType } from '../../../dtypes/index';
import { roundBf16Into } from '../../../dtypes/bf16';
import { roundF16Into } from '../../../dtypes/f16';
import { KERNEL_DTYPES } from './module';
import { quantMatmulReference } from './reference';
import { randomBlocks } from './rows.test-helper';
import { storeOnHeap, WeightStore } from './memory';
import { packedLinear, type PackedWeight, type WeightDType } from './product';
import { quantVariant, setQuantVariant } from './variant';

const THREADS = gemmThreads();
afterAll(() => { setGemmThreads(THREADS); setQuantVariant('auto'); });

const bits = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

function weight(dtype: WeightDType, N: number, K: number, bytes: Uint8Array, where: 'heap' | 'store'): PackedWeight {
  const at = where === 'heap' ? storeOnHeap(bytes) : new WeightStore().store(bytes);
  return { dtype, N, K, ...at };
}

/** y on `threads` threads, the input and output as plain arrays or as heap arrays. */
function run(w: PackedWeight, x: Float32Array, M: number, threads: number, onHeap: boolean): Float32Array {
  setGemmThreads(threads);
  const xs = onHeap ? heapF32(x.length) : new Float32Array(x.length), y = onHeap ? heapF32(M * w.N) : new Float32Array(M * w.N);
  xs.set(x);
  packedLinear(w, xs, M, y);
  return Float32Array.from(y);
}

describe('packedLinear, quantized weights', () => {
  it('the relaxed build runs here (relaxed SIMD validates and the probe finds its int8 dot exact)', () => {
    expect(quantVariant()).toBe('relaxed');
  });

  for (const name of KERNEL_DTYPES) {
    it(`${name}: the reference's bits in both builds, on 1, 2 and 3 threads, weights on the heap or in a weights memory`, () => {
      const f = QUANT_FORMATS[name];
      fc.assert(fc.property(
        fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 37 }), fc.integer({ min: 1, max: f.blockValues === 32 ? 9 : 3 }), fc.integer({ min: 0, max: 1e6 }),
        (M, N, nb, seed) => {
          const rng = new Rng(seed), K = nb * f.blockValues, bytes = randomBlocks(name, N * nb, rng, -16, 2);
          const x = Float32Array.from({ length: M * K }, () => rng.normal() * (rng.uniform() < 0.1 ? 1000 : 1));
          const want = bits(quantMatmulReference(name, bytes, N, K, x, M));
          for (const v of ['relaxed', 'simd'] as const) {
            setQuantVariant(v);
            const where = seed % 2 ? 'heap' : 'store', w = weight(name, N, K, bytes, where);
            for (const threads of [1, 2, 3]) expect(bits(run(w, x, M, threads, threads === 2))).toEqual(want);
          }
        }), { numRuns: 12 });
      setQuantVariant('auto');
    });
  }

  it('large products (threaded, several jobs per thread, leftover rows) match the reference on 1, 2 and 3 threads', () => {
    for (const name of ['q4_k', 'q8_0', 'q6_k', 'iq4_xs'] as const) {
      const f = QUANT_FORMATS[name], rng = new Rng(99), N = 333, K = 4 * 256, bytes = randomBlocks(name, (N * K) / f.blockValues, rng);
      for (const M of [1, 7]) {
        const x = Float32Array.from({ length: M * K }, () => rng.normal());
        const want = bits(quantMatmulReference(name, bytes, N, K, x, M)), w = weight(name, N, K, bytes, 'store');
        for (const threads of [1, 2, 3]) expect(bits(run(w, x, M, threads, false))).toEqual(want);
      }
    }
    // The products ran on the GEMM's worker threads.
    expect(gemmKernelInfo().workers).toBe(2);
  });

  it('Q8_0 weights of −128 and inputs of largest magnitude at both signs stay exact', () => {
    const N = 3, K = 64, bytes = new Uint8Array(N * 2 * 34);
    for (let b = 0; b < 2 * N; b++) { bytes[34 * b] = 0; bytes[34 * b + 1] = 0x3c; bytes.fill(0x80, 34 * b + 2, 34 * b + 34); } // d = 1, every weight −128
    const x = Float32Array.from({ length: 2 * K }, (_, i) => (i % 3 === 0 ? -127 : i % 3 === 1 ? 127 : -1));
    const want = quantMatmulReference('q8_0', bytes, N, K, x, 2);
    // Each row: −128 · Σ q with q = rint(x · 127 / 127): the sum of the inputs.
    const sum = (m: number) => x.subarray(m * K, (m + 1) * K).reduce((s, v) => s + v, 0);
    expect(Array.from(want)).toEqual([0, 0, 0, 1, 1, 1].map((m) => -128 * sum(m)));
    for (const v of ['relaxed', 'simd'] as const) {
      setQuantVariant(v);
      expect(bits(run(weight('q8_0', N, K, bytes, 'store'), x, 2, 1, false))).toEqual(bits(want));
    }
    setQuantVariant('auto');
  });
});

describe('packedLinear, float weights', () => {
  /** |y − Σ x·w| ≤ γ_(K+1)·Σ|x·w| (any order of float32 sums, fused or not), against float64 on the rounded input. */
  function check(dtype: 'f32' | 'bf16' | 'f16', seed: number, M: number, N: number, K: number, threads: number): void {
    const rng = new Rng(seed), vals = Float32Array.from({ length: N * K }, () => rng.normal() * (rng.uniform() < 0.01 ? 1e-6 : 1));
    const bytes = dtype === 'f32' ? new Uint8Array(vals.buffer) : new Uint8Array(Uint16Array.from(vals, (v) => (dtype === 'bf16' ? f32ToBf16Bits(v) : f32ToF16Bits(v))).buffer);
    const wv = dtype === 'f32' ? vals : Float32Array.from(new Uint16Array(bytes.buffer), (h) => (dtype === 'bf16' ? bf16BitsToF32(h) : f16BitsToF32(h)));
    const x = Float32Array.from({ length: M * K }, () => rng.normal());
    const xr = dtype === 'bf16' ? roundBf16Into(x, new Float32Array(x.length)) : dtype === 'f16' ? roundF16Into(x, new Float32Array(x.length)) : x;
    const y = run(weight(dtype, N, K, bytes, seed % 2 ? 'heap' : 'store'), x, M, threads, false);
    const g = ((K + 1) * 2 ** -24) / (1 - (K + 1) * 2 ** -24);
    for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
      let s = 0, a = 0;
      for (let k = 0; k < K; k++) { const p = xr[m * K + k]! * wv[n * K + k]!; s += p; a += Math.abs(p); }
      expect(Math.abs(y[m * N + n]! - s)).toBeLessThanOrEqual(g * a);
    }
  }

  for (const dtype of ['f32', 'bf16', 'f16'] as const) {
    it(`${dtype}: within the float32 bound of the float64 product (M from 1 to 40: dot_nt${dtype === 'f16' ? '' : ' and the GEMM'}), the same bits on 1, 2 and 3 threads`, () => {
      fc.assert(fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 23 }), fc.integer({ min: 1, max: 24 }), fc.integer({ min: 0, max: 1e6 }), (M, N, k8, seed) => {
        check(dtype, seed, M, N, 8 * k8, 1 + (seed % 3));
      }), { numRuns: 25 });
      const rng = new Rng(4), N = 517, K = 768, M = 3;
      const vals = Float32Array.from({ length: N * K }, () => rng.normal());
      const bytes = dtype === 'f32' ? new Uint8Array(vals.buffer) : new Uint8Array(Uint16Array.from(vals, (v) => (dtype === 'bf16' ? f32ToBf16Bits(v) : f32ToF16Bits(v))).buffer);
      const w = weight(dtype, N, K, bytes, 'store'), x = Float32Array.from({ length: M * K }, () => rng.normal());
      const one = bits(run(w, x, M, 1, false));
      expect(bits(run(w, x, M, 2, false))).toEqual(one);
      expect(bits(run(w, x, M, 3, true))).toEqual(one);
    });
  }
});
