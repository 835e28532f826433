// BF16 as a product's input: llama.cpp converts the activations of a product with BF16 weights
// to bf16 first (vec_dot_type BF16), so they are rounded the same way before the float kernels.

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
