// IQ4_NL: blocks of 32 values = f16 scale d + 16 bytes of 4-bit indices (byte j: value j low,
// value j + 16 high) into a fixed non-linear table of 16 int8 levels; x = d · kvalues[q].
import { dequantizeBlocks, type BlockParts, type QuantFormat } from './format';
import { f16At } from './rounding';

/** The 16 levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl). */
export const IQ4_LEVELS: readonly number[] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/** IQ4_NL (ggml type 20). */
export const IQ4_NL: QuantFormat = {
  name: 'iq4_nl', ggml: 'IQ4_NL', ggmlId: 20, blockValues: 32, blockBytes: 18, groupValues: 32, mins: false, activation: 'q8_0',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    p.f[0] = f16At(bytes, at);
    for (let j = 0; j < 16; j++) {
      const q = bytes[at + 2 + j]!;
      p.w[j] = IQ4_LEVELS[q & 15]!;
      p.w[j + 16] = IQ4_LEVELS[q >> 4]!;
    }
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(IQ4_NL, bytes, out, (p, i) => p.f[0]! * p.w[i]!);
  },
};
