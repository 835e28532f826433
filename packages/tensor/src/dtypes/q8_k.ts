// Q8_K: the activation format llama.cpp pairs with the k-quants and IQ4_XS (super-blocks of 256
// int8 quants, a float32 scale, the sum of every 16 quants). Never stored in a model file.
import type { QuantizedActivations } from './q8_0';
import { rint } from './rounding';

const QK_K = 256;

/** Q8_K as ggml's `quantize_row_q8_K_ref`: max the value of largest magnitude (the first), iscale = −127/max, q = min(127, rint(iscale·x)), d = 1/iscale. */
export function quantizeActivationsQ8_K(x: Float32Array): QuantizedActivations {
  const nb = x.length / QK_K, q = new Int8Array(x.length), d = new Float32Array(nb), sums = new Int32Array(x.length / 16);
  for (let b = 0; b < nb; b++) {
    let amax = 0, max = 0;
    for (let j = 0; j < QK_K; j++) { const a = Math.abs(x[QK_K * b + j]!); if (a > amax) { amax = a; max = x[QK_K * b + j]!; } }
    if (amax === 0) continue;
    const iscale = Math.fround(-127 / max);
    d[b] = Math.fround(1 / iscale);
    for (let j = 0; j < QK_K; j++) q[QK_K * b + j] = Math.min(127, rint(Math.fround(iscale * x[QK_K * b + j]!)));
  }
  for (let g = 0; g < sums.length; g++) { let t = 0; for (let j = 0; j < 16; j++) t += q[16 * g + j]!; sums[g] = t; }
  return { q, d, sums, s: new Float32Array(0) };
}
