// Q6_K: super-blocks of 256 values = 128 bytes of low 4 bits (ql), 64 bytes of high 2 bits (qh),
// 16 int8 sub-block scales (16 values each), f16 d; x = (d · scale) · (q − 32) with q in 0…63.
import { GGML_TYPES, QK_K } from '../types';
import { f16BitsToF32 } from './rounding';

const BYTES = GGML_TYPES.Q6_K.typeSize;

/** Dequantize Q6_K super-blocks into `out` (ggml's layout: two halves of 128 values). */
export function dequantizeQ6_K(bytes: Uint8Array, out: Float32Array): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let b = 0, o = 0; b < out.length; b += QK_K, o += BYTES) {
    const d = f16BitsToF32(view.getUint16(o + 208, true));
    for (let half = 0; half < 2; half++) {
      const ql = o + 64 * half, qh = o + 128 + 32 * half, sc = o + 192 + 8 * half, y = b + 128 * half;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4, h = bytes[qh + l]!;
        const q1 = ((bytes[ql + l]! & 0xf) | ((h & 3) << 4)) - 32;
        const q2 = ((bytes[ql + l + 32]! & 0xf) | (((h >> 2) & 3) << 4)) - 32;
        const q3 = ((bytes[ql + l]! >> 4) | (((h >> 4) & 3) << 4)) - 32;
        const q4 = ((bytes[ql + l + 32]! >> 4) | (((h >> 6) & 3) << 4)) - 32;
        out[y + l] = Math.fround(d * view.getInt8(sc + is)) * q1;
        out[y + l + 32] = Math.fround(d * view.getInt8(sc + is + 2)) * q2;
        out[y + l + 64] = Math.fround(d * view.getInt8(sc + is + 4)) * q3;
        out[y + l + 96] = Math.fround(d * view.getInt8(sc + is + 6)) * q4;
      }
    }
  }
}
