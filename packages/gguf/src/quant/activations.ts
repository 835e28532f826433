// The activations a llama.cpp CPU matmul actually multiplies. ggml converts the input rows of a
// product to the weight type's "vec_dot_type" before the dot products: Q8_0 blocks for Q4_0/Q8_0
// weights, Q8_K super-blocks for the k-quants, bf16 for BF16 weights. Rounding our float32
// activations the same way makes a GGUF model compute what llama.cpp computes (the products then
// differ only in the order of float32 additions).
import { bf16BitsToF32, f32ToBf16Bits } from '@apertus/tensor';
import type { GgmlType } from '../types';
import { QK_K } from '../types';
import { rint, toF16 } from './rounding';

/** Q8_K (ggml's `quantize_row_q8_K_ref`): per 256 values, d = −max/127 of the signed extreme, q = min(127, rint(x / d)); returns d·q. */
export function roundQ8_K(x: Float32Array, out: Float32Array): void {
  for (let b = 0; b < x.length; b += QK_K) {
    let amax = 0, max = 0;
    for (let j = 0; j < QK_K; j++) { const a = Math.abs(x[b + j]!); if (a > amax) { amax = a; max = x[b + j]!; } }
    if (amax === 0) { out.fill(0, b, b + QK_K); continue; }
    const iscale = Math.fround(-127 / max), d = Math.fround(1 / iscale);
    for (let j = 0; j < QK_K; j++) out[b + j] = d * Math.min(127, rint(Math.fround(iscale * x[b + j]!)));
  }
}

/**
 * Q8_0 as ggml's x86 SIMD kernel quantizes a matmul input (`quantize_row_q8_0`, AVX path):
 * d = max|x| / 127 stored as f16, q = rint(x · 127 / max|x|) (ties to even); returns f16(d)·q.
 * (Weights are quantized by the reference routine instead: see q8_0.ts.)
 */
export function roundQ8_0(x: Float32Array, out: Float32Array): void {
  for (let b = 0; b < x.length; b += 32) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b + j]!));
    const d = toF16(Math.fround(amax / 127)).value, id = amax !== 0 ? Math.fround(127 / amax) : 0;
    for (let j = 0; j < 32; j++) out[b + j] = d * rint(Math.fround(x[b + j]! * id));
  }
}

/** `x` rounded as llama.cpp rounds a matmul's input for weights of `type` (a copy; x itself when nothing changes). */
export function roundActivations(type: GgmlType, x: Float32Array): Float32Array {
  switch (type.name) {
    case 'Q4_0': case 'Q8_0': {
      const out = new Float32Array(x.length);
      roundQ8_0(x, out);
      return out;
    }
    case 'Q4_K': case 'Q6_K': {
      const out = new Float32Array(x.length);
      roundQ8_K(x, out);
      return out;
    }
    case 'BF16': return x.map((v) => bf16BitsToF32(f32ToBf16Bits(v)));
    default: return x;
  }
}
