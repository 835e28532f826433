// Q2_K: super-blocks of 256 values = 16 bytes of sub-block scales (low nibble) and mins (high
// nibble) for 16 groups of 16, 64 bytes of 2-bit quants, f16 d, f16 dmin. Value 128h + 32s + l
// (h < 2, s < 4, l < 32) is bits 2s, 2s + 1 of byte 32h + l; x = (d·sc_j)·q − dmin·mn_j.
import { dequantizeBlocks, type BlockParts, type QuantFormat } from './format';
import { f16At } from './rounding';

/** The 2-bit quants of the 64 bytes at bytes[qs] in value order (also Q3_K's low bits) into w. */
export function quants2(bytes: Uint8Array, qs: number, w: Int8Array): void {
  for (let h = 0; h < 2; h++) for (let s = 0; s < 4; s++) for (let l = 0; l < 32; l++) w[128 * h + 32 * s + l] = (bytes[qs + 32 * h + l]! >> (2 * s)) & 3;
}

/** Q2_K (ggml type 10). */
export const Q2_K: QuantFormat = {
  name: 'q2_k', ggml: 'Q2_K', ggmlId: 10, blockValues: 256, blockBytes: 84, groupValues: 16, mins: true, activation: 'q8_k',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    for (let j = 0; j < 16; j++) { p.sc[j] = bytes[at + j]! & 15; p.mn[j] = bytes[at + j]! >> 4; }
    quants2(bytes, at + 16, p.w);
    p.f[0] = f16At(bytes, at + 80);
    p.f[1] = f16At(bytes, at + 82);
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(Q2_K, bytes, out, (p, i) => Math.fround(Math.fround(p.f[0]! * p.sc[i >> 4]!) * p.w[i]!) - Math.fround(p.f[1]! * p.mn[i >> 4]!));
  },
};
