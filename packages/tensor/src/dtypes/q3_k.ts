// Q3_K: super-blocks of 256 values = 32 bytes of high bits (hmask), 64 bytes of 2-bit low bits
// (laid out as Q2_K's), 12 bytes of 6-bit scales for 16 groups of 16, f16 d. Value v's high bit is
// bit v >> 5 of hmask[v & 31]; q = low − 4 where that bit is clear (q in −4…3); scale j is the
// low nibble of byte j (j < 8) or the high nibble of byte j − 8, with bits 2(j >> 2), +1 of byte
// 8 + (j & 3) above it, minus 32; x = (d·sc_j)·q.
import { dequantizeBlocks, type BlockParts, type QuantFormat } from './format';
import { quants2 } from './q2_k';
import { f16At } from './rounding';

/** Q3_K (ggml type 11). */
export const Q3_K: QuantFormat = {
  name: 'q3_k', ggml: 'Q3_K', ggmlId: 11, blockValues: 256, blockBytes: 110, groupValues: 16, mins: false, activation: 'q8_k',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    quants2(bytes, at + 32, p.w);
    for (let v = 0; v < 256; v++) if (((bytes[at + (v & 31)]! >> (v >> 5)) & 1) === 0) p.w[v] = p.w[v]! - 4;
    const s = at + 96;
    for (let j = 0; j < 16; j++) {
      const low = j < 8 ? bytes[s + j]! & 15 : bytes[s + j - 8]! >> 4;
      p.sc[j] = (low | (((bytes[s + 8 + (j & 3)]! >> (2 * (j >> 2))) & 3) << 4)) - 32;
    }
    p.f[0] = f16At(bytes, at + 108);
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(Q3_K, bytes, out, (p, i) => Math.fround(p.f[0]! * p.sc[i >> 4]!) * p.w[i]!);
  },
};
