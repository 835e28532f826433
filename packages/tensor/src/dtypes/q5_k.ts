// Q5_K: super-blocks of 256 values = f16 d, f16 dmin, 12 bytes of 6-bit scales and mins (as Q4_K),
// 32 bytes of fifth bits (value v's is bit v >> 5 of byte v & 31), 128 bytes of low nibbles (as
// Q4_K); x = (d · scale_j) · q − (dmin · min_j) with q in 0…31.
import { dequantizeBlocks, type BlockParts, type QuantFormat } from './format';
import { unpackScalesMinsK4 } from './q4_k';

/** Q5_K (ggml type 13). */
export const Q5_K: QuantFormat = {
  name: 'q5_k', ggml: 'Q5_K', ggmlId: 13, blockValues: 256, blockBytes: 176, groupValues: 32, mins: true, activation: 'q8_k',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    unpackScalesMinsK4(bytes, at, p);
    for (let c = 0; c < 4; c++) {
      for (let l = 0; l < 32; l++) {
        const q = bytes[at + 48 + 32 * c + l]!, h = bytes[at + 16 + l]!;
        p.w[64 * c + l] = (q & 15) | (((h >> (2 * c)) & 1) << 4);
        p.w[64 * c + 32 + l] = (q >> 4) | (((h >> (2 * c + 1)) & 1) << 4);
      }
    }
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(Q5_K, bytes, out, (p, i) => Math.fround(Math.fround(p.f[0]! * p.sc[i >> 5]!) * p.w[i]!) - Math.fround(p.f[1]! * p.mn[i >> 5]!));
  },
};
