// F16 as a product's input: llama.cpp converts the activations of a product with F16 weights to
// f16 first (vec_dot_type F16), so they are rounded the same way before the float kernels.
import { f16BitsToF32, f32ToF16Bits } from '../dtype';

/** `x` rounded to f16 (nearest, ties to even, subnormals, overflow to ±∞), as float32 into `out` (x itself allowed). */
export function roundF16Into(x: Float32Array, out: Float32Array): Float32Array {
  for (let i = 0; i < x.length; i++) out[i] = f16BitsToF32(f32ToF16Bits(x[i]!));
  return out;
}
