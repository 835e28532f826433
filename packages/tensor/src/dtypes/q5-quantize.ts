// Q5_0 and Q5_1 (blocks of 32 values, a fifth bit per value in a 32-bit qh word): llama.cpp's
// reference quantizers quantize_row_q5_{0,1}_ref, which llama-quantize falls back to when a row is
// not a whole number of Q4_K / Q5_K super-blocks.
//   Q5_0  f16 d, u32 qh, 16 bytes of low nibbles;  x = d · (q − 16),   d = max / −16
//   Q5_1  f16 d, f16 m, u32 qh, 16 bytes;          x = d · q + m,      d = (max − min) / 31
// Value j < 16 of a block is the low nibble of byte j, value j + 16 its high nibble; bit j of qh is
// bit 4 of value j.
import { quantizedBlocks } from './format';
import { toF16 } from './rounding';

const QK = 32, f = Math.fround;

function put(out: Uint8Array, o: number, q: (j: number) => number): void {
  let qh = 0;
  for (let j = 0; j < QK / 2; j++) {
    const a = q(j), b = q(j + QK / 2);
    out[o + 4 + j] = (a & 15) | ((b & 15) << 4);
    qh |= ((a >> 4) & 1) << j;
    qh |= ((b >> 4) & 1) << (j + QK / 2);
  }
  new DataView(out.buffer, out.byteOffset).setUint32(o, qh >>> 0, true);
}

/** Q5_0 blocks of x (length a multiple of 32), bit for bit quantize_row_q5_0_ref. */
export function quantizeQ5_0(x: Float32Array): Uint8Array {
  const BYTES = 22, out = quantizedBlocks(x, QK, BYTES, 'quantizeQ5_0'), view = new DataView(out.buffer);
  for (let b = 0, o = 0; b < x.length; b += QK, o += BYTES) {
    let amax = 0, max = 0;
    for (let j = 0; j < QK; j++) { const v = x[b + j]!; if (amax < Math.abs(v)) { amax = Math.abs(v); max = v; } }
    const d = f(max / -16), id = d ? f(1 / d) : 0;
    view.setUint16(o, toF16(d).bits, true);
    // (int8_t)(x·id + 16.5f): truncation toward zero, then at most 31.
    put(out, o + 2, (j) => Math.min(31, Math.trunc(f(f(x[b + j]! * id) + 16.5))));
  }
  return out;
}

/** Q5_1 blocks of x (length a multiple of 32), bit for bit quantize_row_q5_1_ref. */
export function quantizeQ5_1(x: Float32Array): Uint8Array {
  const BYTES = 24, out = quantizedBlocks(x, QK, BYTES, 'quantizeQ5_1'), view = new DataView(out.buffer);
  for (let b = 0, o = 0; b < x.length; b += QK, o += BYTES) {
    let min = Infinity, max = -Infinity;
    for (let j = 0; j < QK; j++) { const v = x[b + j]!; if (v < min) min = v; if (v > max) max = v; }
    const d = f(f(max - min) / 31), id = d ? f(1 / d) : 0;
    view.setUint16(o, toF16(d).bits, true);
    view.setUint16(o + 2, toF16(min).bits, true);
    // (uint8_t)((x − min)·id + 0.5f).
    put(out, o + 4, (j) => Math.trunc(f(f(f(x[b + j]! - min) * id) + 0.5)) & 0xff);
  }
  return out;
}
