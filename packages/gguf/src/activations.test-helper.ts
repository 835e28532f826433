// What a llama.cpp CPU matmul multiplies, for the tests' references: the activations as it
// quantizes or rounds them for weights of each type (@apertus/tensor's activation formats), and
// Q6_K's 6-bit quants in weight order.
import { blockParts, QUANT_FORMATS, quantizeActivationsQ8_0 as q8_0, quantizeActivationsQ8_1, quantizeActivationsQ8_K as q8_k, roundBf16Into, roundF16Into, type QuantizedActivations as Quantized } from '@apertus/tensor';
import type { GgmlType } from './types';

/** Activations quantized for the dot products: int8 quants, a scale per block, and (Q8_K) the sum of each 32 quants. */
export interface QuantizedActivations { q: Int8Array; d: Float32Array; sums: Int32Array | null }

/** Q8_0 as ggml's x86 `quantize_row_q8_0`: d = f16(max|x|/127), q = rint(x·127/max|x|). */
export function quantizeActivationsQ8_0(x: Float32Array): QuantizedActivations {
  const a = q8_0(x);
  return { q: a.q, d: a.d, sums: null };
}

/** Q8_K as ggml's `quantize_row_q8_K_ref`, with the sum of every 32 quants. */
export function quantizeActivationsQ8_K(x: Float32Array): QuantizedActivations {
  const a = q8_k(x);
  return { q: a.q, d: a.d, sums: Int32Array.from({ length: a.sums.length / 2 }, (_, i) => a.sums[2 * i]! + a.sums[2 * i + 1]!) };
}

/** d·q (+ nothing else: Q8_1's s multiplies the weights' min, not the activations) of quantized activations. */
function decode(a: Quantized): Float32Array {
  const per = a.q.length / a.d.length;
  return Float32Array.from(a.q, (q, i) => a.d[Math.floor(i / per)]! * q);
}

/** `x` rounded as llama.cpp rounds a matmul's input for weights of `type` (a copy; x itself when nothing changes). */
export function roundActivations(type: GgmlType, x: Float32Array): Float32Array {
  switch (type.name) {
    case 'F32': return x;
    case 'BF16': return roundBf16Into(x, new Float32Array(x.length));
    case 'F16': return roundF16Into(x, new Float32Array(x.length));
    case 'Q4_1': case 'Q5_1': return decode(quantizeActivationsQ8_1(x));
    case 'Q4_0': case 'Q5_0': case 'Q8_0': case 'IQ4_NL': return decode(q8_0(x));
    default: return decode(q8_k(x));
  }
}


const q6Parts = blockParts(QUANT_FORMATS.q6_k);

/** The 256 6-bit quants (0 … 63, in weight order) of the Q6_K super-block at bytes[at] into `q`. */
export function quantsQ6_K(bytes: Uint8Array, at: number, q: Uint8Array): void {
  QUANT_FORMATS.q6_k.unpack(bytes, at, q6Parts);
  for (let i = 0; i < 256; i++) q[i] = q6Parts.w[i]! + 32;
}
