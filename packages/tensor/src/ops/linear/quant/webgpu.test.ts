// Products and row lookups of GGUF-block (and f32/bf16/f16) weights on the webgpu device against
// the reference (reference.ts: llama.cpp's input quantization, exact integer block sums, float32
// steps): the device's quantized input equals dtypes/' bit for bit; the products agree within
// the float32 error of both sides' sums of block contributions (in any order); dequantized rows
// equal the formats' dequantization bit for bit. Every format, K = 14336 and N = 131072 included.
import { describe, expect, test } from 'vitest';
import { f32ArrayToBf16, f32ArrayToF16 } from '../../../dtype';
import { blockParts, QUANT_FORMATS, quantizeActivationsQ8_0, quantizeActivationsQ8_1, quantizeActivationsQ8_K, type QuantDType } from '../../../dtypes/index';
import { expectWithin, randomF32, randomI32, SLACK, U32 } from '../../../kernels/float-testing';
import { Rng } from '../../../random';
import { webgpuForSuite } from '../../../webgpu/testing';
import type { PackedWeight, WeightDType } from './product';
import { weightRowBytes } from './product';
import { randomBlocks } from './rows.test-helper';
import { packedLinearKernel, packedRowsKernel } from './kernel';
import { implementationOf } from '../../../registry';
import { packedLinearWgsl, packedRowsWgsl, quantizeInput } from './webgpu';
import { WGSL_FORMATS } from './webgpu-formats';

const u = U32;
const TYPES = Object.keys(QUANT_FORMATS) as QuantDType[];
const reference = implementationOf(packedLinearKernel, 'reference');
const rowsReference = implementationOf(packedRowsKernel, 'reference');

/** A weight [N, K] of `dtype` in plain memory (the device copies its bytes). */
function weight(dtype: WeightDType, N: number, K: number, seed: number): PackedWeight {
  const rng = new Rng(seed);
  let bytes: Uint8Array;
  if (dtype === 'f32' || dtype === 'bf16' || dtype === 'f16') {
    const w = randomF32(N * K, seed, -1, 1);
    bytes = new Uint8Array(dtype === 'f32' ? w.buffer : dtype === 'bf16' ? f32ArrayToBf16(w).buffer : f32ArrayToF16(w).buffer);
  } else {
    bytes = randomBlocks(dtype, (N * K) / QUANT_FORMATS[dtype].blockValues, rng);
  }
  return { dtype, N, K, memory: { buffer: bytes.buffer } as unknown as PackedWeight['memory'], byteOffset: 0 };
}

/**
 * The bound of a product element: both sides sum the same block contributions c (the reference
 * per block in order, the device per unit of 32 or 64 values across 64 lanes, the units' scale
 * products rounded differently: 3 more roundings each) — (3 + blocks + units/64 + 64)·u·Σ|c|.
 */
function quantBound(w: PackedWeight, x: Float32Array, M: number, want: Float32Array): Float64Array {
  const { N, K, dtype } = w, f = QUANT_FORMATS[dtype as QuantDType], nb = K / f.blockValues, p = blockParts(f);
  const bytes = new Uint8Array(w.memory.buffer), rb = weightRowBytes(dtype, K), units = f.blockValues === 32 ? nb : K / 64;
  const bound = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    const xr = x.subarray(m * K, (m + 1) * K);
    const a = f.activation === 'q8_k' ? quantizeActivationsQ8_K(xr) : f.activation === 'q8_1' ? quantizeActivationsQ8_1(xr) : quantizeActivationsQ8_0(xr);
    for (let n = 0; n < N; n++) {
      let abs = 0;
      for (let b = 0; b < nb; b++) {
        f.unpack(bytes, n * rb + b * f.blockBytes, p);
        const G = f.blockValues / f.groupValues;
        for (let g = 0; g < G; g++) {
          let I = 0, S = 0;
          for (let i = g * f.groupValues; i < (g + 1) * f.groupValues; i++) { I += p.w[i]! * a.q[b * f.blockValues + i]!; S += a.q[b * f.blockValues + i]!; }
          abs += Math.abs(p.f[0]! * a.d[b]! * p.sc[g]! * I) + Math.abs(p.f[1]! * a.d[b]! * p.mn[g]! * S);
        }
        if (f.mins && f.blockValues === 32) abs += Math.abs(p.f[1]! * a.s[b]!);
      }
      bound[m * N + n] = SLACK * (u * (3 + nb + Math.ceil(units / 64) + 64) * abs + u * Math.abs(want[m * N + n]!));
    }
  }
  return bound;
}

/** The bound of a float product (dequantized weights and input, a float32 dot of K terms in any order on each side). */
function floatBound(w: PackedWeight, x: Float32Array, M: number, want: Float32Array, Wf: Float32Array): Float64Array {
  const { N, K } = w;
  return Float64Array.from({ length: M * N }, (_, i) => {
    const m = Math.floor(i / N), n = i % N;
    let abs = 0;
    for (let k = 0; k < K; k++) abs += Math.abs(x[m * K + k]! * Wf[n * K + k]!);
    return SLACK * (u * (2 * K + 70) * abs + u * Math.abs(want[i]!));
  });
}

describe('packed weights on the webgpu device', { timeout: 900_000 }, () => {
  const { run, host, ctx } = webgpuForSuite();

  test('every quantized format: decode rows (M = 1 and 3) and a prefill (M = 11), against the reference', () => {
    for (const dtype of TYPES) {
      const K = QUANT_FORMATS[dtype].blockValues === 256 ? 512 : 96, N = 37;
      const w = weight(dtype, N, K, 7 + dtype.length);
      for (const M of [1, 3, 11]) {
        const x = randomF32(M * K, M + 3, -2, 2);
        const y = new Float32Array(M * N).fill(NaN), want = new Float32Array(M * N);
        run(packedLinearWgsl)(w, x, M, y);
        host(y);
        reference(w, x, M, want);
        expectWithin(y, want, quantBound(w, x, M, want), `${dtype} M=${M}`);
      }
    }
  });

  test('the device quantizes the input as dtypes/ does: the same integers, scales and sums, bit for bit', () => {
    for (const [act, dtype] of [['q8_0', 'q8_0'], ['q8_1', 'q4_1'], ['q8_k', 'q4_k']] as const) {
      const M = 2, K = 1024, bv = act === 'q8_k' ? 256 : 32;
      const x = randomF32(M * K, 5, -3, 3);
      // A zero block, a block of tiny values (an f16-subnormal scale), ties of x·127/max at .5, both signs of the largest magnitude.
      x.fill(0, 0, bv);
      for (let i = bv; i < 2 * bv; i++) x[i] = (i % 7 - 3) * 1e-7;
      for (let i = 2 * bv; i < 3 * bv; i++) x[i] = (i % 5) * 0.5;
      x[2 * bv] = 127; x[3 * bv + 1] = -3; x[3 * bv + 2] = 3;
      const want = Array.from({ length: M }, (_, m) => {
        const r = x.subarray(m * K, (m + 1) * K);
        return act === 'q8_k' ? quantizeActivationsQ8_K(r) : act === 'q8_1' ? quantizeActivationsQ8_1(r) : quantizeActivationsQ8_0(r);
      });
      const q = new Int8Array(M * K), d = new Float32Array((M * K) / bv), sums = new Float32Array((M * K) / bv);
      ctx().record((c) => {
        const a = quantizeInput(c, WGSL_FORMATS[dtype], c.st.input(x, 'x'), M, K);
        c.rt.read([{ from: a.q, into: q }, { from: a.d, into: d }, ...(act === 'q8_1' ? [{ from: a.s, into: sums }] : [])]);
      })();
      expect(Array.from(q), `${act} quants`).toEqual(want.flatMap((a) => Array.from(a.q)));
      expect(Array.from(d), `${act} scales`).toEqual(want.flatMap((a) => Array.from(a.d)));
      if (act === 'q8_1') expect(Array.from(sums), 'q8_1 sums').toEqual(want.flatMap((a) => Array.from(a.s)));
    }
  });

  test('F32, BF16 and F16 weights (the input rounded as llama.cpp rounds it), decode and prefill', () => {
    for (const dtype of ['f32', 'bf16', 'f16'] as const) {
      const K = 72, N = 29, w = weight(dtype, N, K, 3);
      const Wf = new Float32Array(N * K);
      rowsReference(w, Int32Array.from({ length: N }, (_, i) => i), Wf);
      for (const M of [2, 10]) {
        const x = randomF32(M * K, 9 + M);
        const y = new Float32Array(M * N), want = new Float32Array(M * N);
        run(packedLinearWgsl)(w, x, M, y);
        host(y);
        reference(w, x, M, want);
        // The reference multiplies the unrounded input: the rounding of x to bf16 (2⁻⁹) or f16 (2⁻¹¹) is part of the bound.
        const r = dtype === 'bf16' ? 2 ** -8 : dtype === 'f16' ? 2 ** -11 : 0;
        const b = floatBound(w, x, M, want, Wf).map((v, i) => v + r * Array.from({ length: K }, (_, k) => Math.abs(x[Math.floor(i / N) * K + k]! * Wf[(i % N) * K + k]!)).reduce((s, t) => s + t, 0));
        expectWithin(y, want, b, `${dtype} M=${M}`);
      }
    }
  });

  test('K = 14336 (Q4_K, Q6_K, Q8_0) and N = 131072 (Q6_K), decode', () => {
    for (const [dtype, N, K] of [['q4_k', 8, 14336], ['q6_k', 8, 14336], ['q8_0', 8, 14336], ['q6_k', 131072, 256]] as const) {
      const w = weight(dtype, N, K, N + K);
      const x = randomF32(K, 17, -2, 2);
      const y = new Float32Array(N), want = new Float32Array(N);
      run(packedLinearWgsl)(w, x, 1, y);
      host(y);
      reference(w, x, 1, want);
      expectWithin(y, want, quantBound(w, x, 1, want), `${dtype} [${N}, ${K}]`);
    }
  });

  test('row lookups dequantize exactly as the formats do', () => {
    for (const dtype of [...TYPES, 'f32', 'bf16', 'f16'] as const) {
      const K = dtype === 'f32' || dtype === 'bf16' || dtype === 'f16' ? 40 : QUANT_FORMATS[dtype].blockValues, N = 19;
      const w = weight(dtype, N, K, 21);
      const ids = randomI32(11, 4, 0, N);
      ids[0] = N - 1;
      const out = new Float32Array(ids.length * K), want = new Float32Array(ids.length * K);
      run(packedRowsWgsl)(w, ids, out);
      host(out);
      rowsReference(w, ids, want);
      expect(Array.from(out), dtype).toEqual(Array.from(want));
    }
  });
});
