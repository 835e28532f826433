// Q4_K: super-blocks of 256 values = f16 d, f16 dmin, 12 bytes holding eight 6-bit sub-block
// scales and eight 6-bit mins, then 128 bytes of 4-bit quants. Sub-block j (32 values) decodes as
// x = (d · scale_j) · q − (dmin · min_j). The quants of sub-blocks 2c and 2c+1 share bytes
// 32c … 32c+31 (low and high nibble).
import { dequantizeBlocks, type BlockParts, type QuantFormat } from './format';
import { f16At } from './rounding';

const QK_K = 256, BYTES = 144;

/** The 6-bit scale and min of sub-block j from the 12 packed bytes at `s` (ggml's `get_scale_min_k4`; also Q5_K's). */
export function scaleMinK4(bytes: Uint8Array, s: number, j: number): [number, number] {
  if (j < 4) return [bytes[s + j]! & 63, bytes[s + j + 4]! & 63];
  return [(bytes[s + j + 4]! & 0xf) | ((bytes[s + j - 4]! >> 6) << 4), (bytes[s + j + 4]! >> 4) | ((bytes[s + j]! >> 6) << 4)];
}

/** d, dmin and the eight scales and mins of a Q4_K/Q5_K super-block at bytes[at] into p. */
export function unpackScalesMinsK4(bytes: Uint8Array, at: number, p: BlockParts): void {
  p.f[0] = f16At(bytes, at);
  p.f[1] = f16At(bytes, at + 2);
  for (let j = 0; j < 8; j++) [p.sc[j], p.mn[j]] = scaleMinK4(bytes, at + 4, j);
}

/** Q4_K (ggml type 12). */
export const Q4_K: QuantFormat = {
  name: 'q4_k', ggml: 'Q4_K', ggmlId: 12, blockValues: QK_K, blockBytes: BYTES, groupValues: 32, mins: true, activation: 'q8_k',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    unpackScalesMinsK4(bytes, at, p);
    for (let c = 0; c < 4; c++) {
      for (let l = 0; l < 32; l++) {
        const q = bytes[at + 16 + 32 * c + l]!;
        p.w[64 * c + l] = q & 15;
        p.w[64 * c + 32 + l] = q >> 4;
      }
    }
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(Q4_K, bytes, out, (p, i) => Math.fround(Math.fround(p.f[0]! * p.sc[i >> 5]!) * p.w[i]!) - Math.fround(p.f[1]! * p.mn[i >> 5]!));
  },
};

/** Dequantize Q4_K super-blocks into `out`. */
export function dequantizeQ4_K(bytes: Uint8Array, out: Float32Array): void {
  Q4_K.dequantize(bytes, out);
}
