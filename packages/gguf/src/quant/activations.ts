// The activations a llama.cpp CPU matmul actually multiplies. ggml converts the input rows of a
// product to the weight type's "vec_dot_type" before the dot products: Q8_0 blocks for Q4_0/Q8_0
// weights, Q8_K super-blocks for the k-quants, bf16 for BF16 weights. Rounding our float32
// activations the same way makes a GGUF model compute what llama.cpp computes (the products then
// differ only in the order of float32 additions).
import type { GgmlType } from '../types';
import { QK_K } from '../types';
import { rint, toF16 } from './rounding';

/** Activations quantized for the dot products: int8 quants, a scale per block, and (Q8_K) the sum of each 32 quants. */
export interface QuantizedActivations { q: Int8Array; d: Float32Array; sums: Int32Array | null }

/** Q8_0 as ggml's x86 `quantize_row_q8_0`: d = f16(max|x|/127), q = rint(x·127/max|x|). */
export function quantizeActivationsQ8_0(x: Float32Array): QuantizedActivations {
  const q = new Int8Array(x.length), d = new Float32Array(x.length / 32);
  for (let b = 0; b < x.length; b += 32) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b + j]!));
    const id = amax !== 0 ? Math.fround(127 / amax) : 0;
    d[b / 32] = toF16(Math.fround(amax / 127)).value;
    for (let j = 0; j < 32; j++) q[b + j] = rint(Math.fround(x[b + j]! * id));
  }
  return { q, d, sums: null };
}

/** Q8_K as ggml's `quantize_row_q8_K_ref`, with the sum of every 32 quants. */
export function quantizeActivationsQ8_K(x: Float32Array): QuantizedActivations {
  const q = new Int8Array(x.length), d = new Float32Array(x.length / QK_K), sums = new Int32Array(x.length / 32);
  for (let b = 0; b < x.length; b += QK_K) {
    let amax = 0, max = 0;
    for (let j = 0; j < QK_K; j++) { const a = Math.abs(x[b + j]!); if (a > amax) { amax = a; max = x[b + j]!; } }
    if (amax === 0) continue;
    const iscale = Math.fround(-127 / max);
    d[b / QK_K] = Math.fround(1 / iscale);
    for (let j = 0; j < QK_K; j++) q[b + j] = Math.min(127, rint(Math.fround(iscale * x[b + j]!)));
  }
  for (let s = 0; s < sums.length; s++) { let t = 0; for (let j = 0; j < 32; j++) t += q[32 * s + j]!; sums[s] = t; }
  return { q, d, sums };
}

/** d·q of quantized activations. */
function decode(a: QuantizedActivations): Float32Array {
  const per = a.q.length / a.d.length;
  return Float32Array.from(a.q, (q, i) => a.d[Math.floor(i / per)]! * q);
}

/**
 * `x` rounded to bf16 (nearest, ties to even; a NaN becomes the quiet NaN of its sign), as float32
 * into `out` (x itself allowed): `bf16BitsToF32(f32ToBf16Bits(v))` per value, on the bits, with no
 * call or allocation per value (a prefill rounds every input of every BF16 product).
 */
export function roundBf16Into(x: Float32Array, out: Float32Array): Float32Array {
  const n = x.length, src = new Uint32Array(x.buffer, x.byteOffset, n), dst = new Uint32Array(out.buffer, out.byteOffset, n);
  for (let i = 0; i < n; i++) {
    const u = src[i]!;
    dst[i] = (u & 0x7fffffff) > 0x7f800000 ? (u & 0x80000000) | 0x7fc00000 : (u + 0x7fff + ((u >>> 16) & 1)) & 0xffff0000;
  }
  return out;
}

/** `x` rounded as llama.cpp rounds a matmul's input for weights of `type` (a copy; x itself when nothing changes). */
export function roundActivations(type: GgmlType, x: Float32Array): Float32Array {
  switch (type.name) {
    case 'Q4_0': case 'Q8_0': return decode(quantizeActivationsQ8_0(x));
    case 'Q4_K': case 'Q6_K': return decode(quantizeActivationsQ8_K(x));
    case 'BF16': return roundBf16Into(x, new Float32Array(x.length));
    default: return x;
  }
}
