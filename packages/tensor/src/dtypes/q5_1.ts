// Q5_1: blocks of 32 values = f16 scale d, f16 min m, 4 bytes of fifth bits, 16 bytes of low
// nibbles (as Q5_0); x = d · q + m with q in 0…31.
import { dequantizeBlocks, type BlockParts, type QuantFormat } from './format';
import { quants5 } from './q5_0';
import { f16At } from './rounding';

/** Q5_1 (ggml type 7). */
export const Q5_1: QuantFormat = {
  name: 'q5_1', ggml: 'Q5_1', ggmlId: 7, blockValues: 32, blockBytes: 24, groupValues: 32, mins: true, activation: 'q8_1',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    p.f[0] = f16At(bytes, at);
    p.f[1] = f16At(bytes, at + 2);
    quants5(bytes, at + 4, at + 8, 0, p.w);
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(Q5_1, bytes, out, (p, i) => Math.fround(p.f[0]! * p.w[i]!) + p.f[1]!);
  },
};
