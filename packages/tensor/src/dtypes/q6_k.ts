// Q6_K: super-blocks of 256 values = 128 bytes of low 4 bits (ql), 64 bytes of high 2 bits (qh),
// 16 int8 sub-block scales (16 values each), f16 d; x = (d · scale) · (q − 32) with q in 0…63.
// Value 128h + 64s + l (l < 64) has the nibble s of ql[64h + l]; value 128h + 32k + l (l < 32)
// has bits 2k, 2k + 1 of qh[32h + l] above it.
import { dequantizeBlocks, type BlockParts, type QuantFormat } from './format';
import { f16At } from './rounding';

/** Q6_K (ggml type 14). */
export const Q6_K: QuantFormat = {
  name: 'q6_k', ggml: 'Q6_K', ggmlId: 14, blockValues: 256, blockBytes: 210, groupValues: 16, mins: false, activation: 'q8_k',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    for (let v = 0; v < 256; v++) {
      const h = v >> 7, r = v & 127, low = (bytes[at + 64 * h + (r & 63)]! >> (4 * (r >> 6))) & 15;
      const high = (bytes[at + 128 + 32 * h + (r & 31)]! >> (2 * (r >> 5))) & 3;
      p.w[v] = (low | (high << 4)) - 32;
    }
    for (let j = 0; j < 16; j++) p.sc[j] = bytes[at + 192 + j]! << 24 >> 24;
    p.f[0] = f16At(bytes, at + 208);
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(Q6_K, bytes, out, (p, i) => Math.fround(p.f[0]! * p.sc[i >> 4]!) * p.w[i]!);
  },
};

/** Dequantize Q6_K super-blocks into `out`. */
export function dequantizeQ6_K(bytes: Uint8Array, out: Float32Array): void {
  Q6_K.dequantize(bytes, out);
}
