// Q8_1: the activation format llama.cpp pairs with Q4_1 and Q5_1 weights (never stored in a model
// file): Q8_0's quants and scale plus s = f16(d·Σq) per block, which multiplies the weights' min.
import { quantizeActivationsQ8_0, type QuantizedActivations } from './q8_0';
import { toF16 } from './rounding';

/** Q8_1 activations as ggml's x86 `quantize_row_q8_1`: Q8_0's d and q, s = f16(d·Σq) with d = max|x|/127 before its rounding. */
export function quantizeActivationsQ8_1(x: Float32Array): QuantizedActivations {
  const a = quantizeActivationsQ8_0(x), s = new Float32Array(a.d.length);
  for (let b = 0; b < s.length; b++) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[32 * b + j]!));
    s[b] = toF16(Math.fround(Math.fround(amax / 127) * a.sums[b]!)).value;
  }
  return { ...a, s };
}
