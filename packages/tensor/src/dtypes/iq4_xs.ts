// IQ4_XS: super-blocks of 256 values = f16 d, 2 bytes of high scale bits (bits 2j, 2j + 1 of the
// little-endian u16 for group j), 4 bytes of low scale nibbles (group j: nibble j & 1 of byte
// j >> 1), 128 bytes of 4-bit indices (group g of 32: bytes 16g … 16g + 15, low nibbles the first
// 16 values, high the next 16) into IQ4_NL's levels; x = (d · (ls_j − 32)) · kvalues[q].
import { dequantizeBlocks, type BlockParts, type QuantFormat } from './format';
import { IQ4_LEVELS } from './iq4_nl';
import { f16At } from './rounding';

/** IQ4_XS (ggml type 23). */
export const IQ4_XS: QuantFormat = {
  name: 'iq4_xs', ggml: 'IQ4_XS', ggmlId: 23, blockValues: 256, blockBytes: 136, groupValues: 32, mins: false, activation: 'q8_k',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    p.f[0] = f16At(bytes, at);
    const high = bytes[at + 2]! | (bytes[at + 3]! << 8);
    for (let j = 0; j < 8; j++) p.sc[j] = (((bytes[at + 4 + (j >> 1)]! >> (4 * (j & 1))) & 15) | (((high >> (2 * j)) & 3) << 4)) - 32;
    for (let g = 0; g < 8; g++) {
      for (let l = 0; l < 16; l++) {
        const q = bytes[at + 8 + 16 * g + l]!;
        p.w[32 * g + l] = IQ4_LEVELS[q & 15]!;
        p.w[32 * g + 16 + l] = IQ4_LEVELS[q >> 4]!;
      }
    }
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(IQ4_XS, bytes, out, (p, i) => Math.fround(p.f[0]! * p.sc[i >> 5]!) * p.w[i]!);
  },
};
