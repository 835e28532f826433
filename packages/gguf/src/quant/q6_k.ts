// Q6_K: super-blocks of 256 values = 128 bytes of low 4 bits (ql), 64 bytes of high 2 bits (qh),
// 16 int8 sub-block scales (16 values each), f16 d; x = (d · scale) · (q − 32) with q in 0…63.
import { GGML_TYPES, QK_K } from '../types';
import { f16BitsToF32 } from './rounding';

const BYTES = GGML_TYPES.Q6_K.typeSize;

/** The 256 6-bit quants (0 … 63, in weight order) of the super-block at bytes[at] into `q` (ggml's two halves of ql / qh). */
export function quantsQ6_K(bytes: Uint8Array, at: number, q: Uint8Array): void {
  for (let half = 0; half < 2; half++) {
    const ql = at + 64 * half, qh = at + 128 + 32 * half, y = 128 * half;
    for (let l = 0; l < 32; l++) {
      const h = bytes[qh + l]!;
      q[y + l] = (bytes[ql + l]! & 0xf) | ((h & 3) << 4);
      q[y + l + 32] = (bytes[ql + l + 32]! & 0xf) | (((h >> 2) & 3) << 4);
      q[y + l + 64] = (bytes[ql + l]! >> 4) | (((h >> 4) & 3) << 4);
      q[y + l + 96] = (bytes[ql + l + 32]! >> 4) | (((h >> 6) & 3) << 4);
    }
  }
}

/** Dequantize Q6_K super-blocks into `out`: weight i of a super-block is (d · scale_{i/16}) · (q_i − 32). */
export function dequantizeQ6_K(bytes: Uint8Array, out: Float32Array): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), q = new Uint8Array(QK_K);
  for (let b = 0, o = 0; b < out.length; b += QK_K, o += BYTES) {
    const d = f16BitsToF32(view.getUint16(o + 208, true));
    quantsQ6_K(bytes, o, q);
    for (let i = 0; i < QK_K; i++) out[b + i] = Math.fround(d * view.getInt8(o + 192 + (i >> 4))) * (q[i]! - 32);
  }
}
