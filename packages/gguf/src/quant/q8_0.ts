// Q8_0: blocks of 32 values = f16 scale d + 32 int8 quants; x = d · q.
import { GGML_TYPES } from '../types';
import { f16BitsToF32, roundAway, toF16 } from './rounding';

const QK = 32, BYTES = GGML_TYPES.Q8_0.typeSize;

/** Quantize `x` (length a multiple of 32) as ggml's reference does: d = max|x| / 127, q = roundf(x / d). */
export function quantizeQ8_0(x: Float32Array): Uint8Array {
  const out = new Uint8Array((x.length / QK) * BYTES);
  const view = new DataView(out.buffer);
  for (let b = 0, o = 0; b < x.length; b += QK, o += BYTES) {
    let amax = 0;
    for (let j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(x[b + j]!));
    const d = Math.fround(amax / 127), id = d ? Math.fround(1 / d) : 0;
    view.setUint16(o, toF16(d).bits, true);
    for (let j = 0; j < QK; j++) view.setInt8(o + 2 + j, roundAway(Math.fround(x[b + j]! * id)));
  }
  return out;
}

/** Dequantize `n` values of Q8_0 blocks into `out`. */
export function dequantizeQ8_0(bytes: Uint8Array, out: Float32Array): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let b = 0, o = 0; b < out.length; b += QK, o += BYTES) {
    const d = f16BitsToF32(view.getUint16(o, true));
    for (let j = 0; j < QK; j++) out[b + j] = d * view.getInt8(o + 2 + j);
  }
}
