// Q4_1: blocks of 32 values = f16 scale d, f16 min m, 16 bytes of nibbles (byte j: quant j low,
// quant j + 16 high); x = d · q + m with q in 0…15.
import { dequantizeBlocks, type BlockParts, type QuantFormat } from './format';
import { f16At } from './rounding';

/** Q4_1 (ggml type 3). */
export const Q4_1: QuantFormat = {
  name: 'q4_1', ggml: 'Q4_1', ggmlId: 3, blockValues: 32, blockBytes: 20, groupValues: 32, mins: true, activation: 'q8_1',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    p.f[0] = f16At(bytes, at);
    p.f[1] = f16At(bytes, at + 2);
    for (let j = 0; j < 16; j++) {
      const q = bytes[at + 4 + j]!;
      p.w[j] = q & 15;
      p.w[j + 16] = q >> 4;
    }
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(Q4_1, bytes, out, (p, i) => Math.fround(p.f[0]! * p.w[i]!) + p.f[1]!);
  },
};
