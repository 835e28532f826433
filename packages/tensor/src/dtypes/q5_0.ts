// Q5_0: blocks of 32 values = f16 scale d, 4 bytes of fifth bits (bit i of the little-endian u32
// for value i), 16 bytes of low nibbles (byte j: value j low, value j + 16 high); x = d · (q − 16).
import { dequantizeBlocks, type BlockParts, type QuantFormat } from './format';
import { f16At } from './rounding';

/** The 5-bit quants (0…31) of a Q5_0/Q5_1 block whose fifth bits are at bytes[qh] and nibbles at bytes[qs], minus `offset`, into w. */
export function quants5(bytes: Uint8Array, qh: number, qs: number, offset: number, w: Int8Array): void {
  const h = (bytes[qh]! | (bytes[qh + 1]! << 8) | (bytes[qh + 2]! << 16) | (bytes[qh + 3]! << 24)) >>> 0;
  for (let j = 0; j < 16; j++) {
    const q = bytes[qs + j]!;
    w[j] = ((q & 15) | (((h >>> j) & 1) << 4)) - offset;
    w[j + 16] = ((q >> 4) | (((h >>> (j + 16)) & 1) << 4)) - offset;
  }
}

/** Q5_0 (ggml type 6). */
export const Q5_0: QuantFormat = {
  name: 'q5_0', ggml: 'Q5_0', ggmlId: 6, blockValues: 32, blockBytes: 22, groupValues: 32, mins: false, activation: 'q8_0',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    p.f[0] = f16At(bytes, at);
    quants5(bytes, at + 2, at + 6, 16, p.w);
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(Q5_0, bytes, out, (p, i) => p.f[0]! * p.w[i]!);
  },
};
