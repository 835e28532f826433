// Q4_0: blocks of 32 values = f16 scale d + 16 bytes; byte j holds quant j (low nibble) and
// quant j + 16 (high nibble); x = d · (q − 8).
import { dequantizeBlocks, quantizedBlocks, type BlockParts, type QuantFormat } from './format';
import { f16At, setF16, toF16 } from './rounding';

const QK = 32, BYTES = 18;

/** Q4_0 (ggml type 2). */
export const Q4_0: QuantFormat = {
  name: 'q4_0', ggml: 'Q4_0', ggmlId: 2, blockValues: QK, blockBytes: BYTES, groupValues: QK, mins: false, activation: 'q8_0',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    p.f[0] = f16At(bytes, at);
    for (let j = 0; j < 16; j++) {
      const q = bytes[at + 2 + j]!;
      p.w[j] = (q & 15) - 8;
      p.w[j + 16] = (q >> 4) - 8;
    }
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(Q4_0, bytes, out, (p, i) => p.f[0]! * p.w[i]!);
  },
};

/** Quantize as ggml's reference: d = −(the value of largest magnitude) / 8, q = min(15, trunc(x / d + 8.5)). */
export function quantizeQ4_0(x: Float32Array): Uint8Array {
  const out = quantizedBlocks(x, QK, BYTES, 'quantizeQ4_0');
  for (let b = 0, o = 0; b < x.length; b += QK, o += BYTES) {
    let amax = 0, max = 0;
    for (let j = 0; j < QK; j++) { const v = x[b + j]!; if (Math.abs(v) > amax) { amax = Math.abs(v); max = v; } }
    const d = Math.fround(max / -8), id = d ? Math.fround(1 / d) : 0;
    setF16(out, o, toF16(d).bits);
    for (let j = 0; j < QK / 2; j++) {
      const q0 = Math.min(15, Math.trunc(Math.fround(Math.fround(x[b + j]! * id) + 8.5)));
      const q1 = Math.min(15, Math.trunc(Math.fround(Math.fround(x[b + j + 16]! * id) + 8.5)));
      out[o + 2 + j] = q0 | (q1 << 4);
    }
  }
  return out;
}

/** Dequantize Q4_0 blocks into `out`. */
export function dequantizeQ4_0(bytes: Uint8Array, out: Float32Array): void {
  Q4_0.dequantize(bytes, out);
}
