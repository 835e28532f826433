// Q4_0: blocks of 32 values = f16 scale d + 16 bytes; byte j holds quant j (low nibble) and
// quant j + 16 (high nibble); x = d · (q − 8).
import { GGML_TYPES } from '../types';
import { f16BitsToF32, toF16 } from './rounding';

const QK = 32, BYTES = GGML_TYPES.Q4_0.typeSize;

/** Quantize as ggml's reference: d = −(the value of largest magnitude) / 8, q = min(15, trunc(x / d + 8.5)). */
export function quantizeQ4_0(x: Float32Array): Uint8Array {
  const out = new Uint8Array((x.length / QK) * BYTES);
  const view = new DataView(out.buffer);
  for (let b = 0, o = 0; b < x.length; b += QK, o += BYTES) {
    let amax = 0, max = 0;
    for (let j = 0; j < QK; j++) { const v = x[b + j]!; if (Math.abs(v) > amax) { amax = Math.abs(v); max = v; } }
    const d = Math.fround(max / -8), id = d ? Math.fround(1 / d) : 0;
    view.setUint16(o, toF16(d).bits, true);
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
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let b = 0, o = 0; b < out.length; b += QK, o += BYTES) {
    const d = f16BitsToF32(view.getUint16(o, true));
    for (let j = 0; j < QK / 2; j++) {
      const q = bytes[o + 2 + j]!;
      out[b + j] = Math.fround(((q & 15) - 8) * d);
      out[b + j + 16] = Math.fround(((q >> 4) - 8) * d);
    }
  }
}
