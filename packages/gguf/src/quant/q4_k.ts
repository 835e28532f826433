// Q4_K: super-blocks of 256 values = f16 d, f16 dmin, 12 bytes holding eight 6-bit sub-block
// scales and eight 6-bit mins, then 128 bytes of 4-bit quants. Sub-block j (32 values) decodes as
// x = (d · scale_j) · q − (dmin · min_j). The quants of sub-blocks 2c and 2c+1 share bytes
// 32c … 32c+31 (low and high nibble).
import { GGML_TYPES, QK_K } from '../types';
import { f16BitsToF32 } from './rounding';

const BYTES = GGML_TYPES.Q4_K.typeSize;

/** The 6-bit scale and min of sub-block j from the 12 packed bytes at `s` (ggml's `get_scale_min_k4`). */
export function scaleMinK4(bytes: Uint8Array, s: number, j: number): [number, number] {
  if (j < 4) return [bytes[s + j]! & 63, bytes[s + j + 4]! & 63];
  return [(bytes[s + j + 4]! & 0xf) | ((bytes[s + j - 4]! >> 6) << 4), (bytes[s + j + 4]! >> 4) | ((bytes[s + j]! >> 6) << 4)];
}


/** Dequantize Q4_K super-blocks into `out`. */
export function dequantizeQ4_K(bytes: Uint8Array, out: Float32Array): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let b = 0, o = 0; b < out.length; b += QK_K, o += BYTES) {
    const d = f16BitsToF32(view.getUint16(o, true)), dmin = f16BitsToF32(view.getUint16(o + 2, true));
    for (let c = 0; c < 4; c++) {
      const [sc1, m1] = scaleMinK4(bytes, o + 4, 2 * c), [sc2, m2] = scaleMinK4(bytes, o + 4, 2 * c + 1);
      const d1 = Math.fround(d * sc1), mm1 = Math.fround(dmin * m1), d2 = Math.fround(d * sc2), mm2 = Math.fround(dmin * m2);
      const qs = o + 16 + 32 * c, y = b + 64 * c;
      for (let l = 0; l < 32; l++) {
        out[y + l] = Math.fround(d1 * (bytes[qs + l]! & 0xf)) - mm1;
        out[y + 32 + l] = Math.fround(d2 * (bytes[qs + l]! >> 4)) - mm2;
      }
    }
  }
}
