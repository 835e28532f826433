// Q4_K: super-blocks of 256 values = f16 d, f16 dmin, 12 bytes holding eight 6-bit sub-block
// scales and eight 6-bit mins, then 128 bytes of 4-bit quants. Sub-block j (32 values) decodes as
// x = (d · scale_j) · q − (dmin · min_j). The quants of sub-blocks 2c and 2c+1 share bytes
// 32c … 32c+31 (low and high nibble).
import { dequantizeBlocks, type BlockParts, type QuantFormat } from './format';
import { f16At, rint, setF16, toF16 } from './rounding';

const QK_K = 256, BYTES = 144;

/** The 6-bit scale and min of sub-block j from the 12 packed bytes at `s` (ggml's `get_scale_min_k4`; also Q5_K's). */
export function scaleMinK4(bytes: Uint8Array, s: number, j: number): [number, number] {
  if (j < 4) return [bytes[s + j]! & 63, bytes[s + j + 4]! & 63];
  return [(bytes[s + j + 4]! & 0xf) | ((bytes[s + j - 4]! >> 6) << 4), (bytes[s + j + 4]! >> 4) | ((bytes[s + j]! >> 6) << 4)];
}

/** d, dmin and the eight scales and mins of a Q4_K/Q5_K super-block at bytes[at] into p. */
export function unpackScalesMinsK4(bytes: Uint8Array, at: number, p: BlockParts): void {
  p.f[0] = f16At(bytes, at);
  p.f[1] = f16At(bytes, at + 2);
  for (let j = 0; j < 8; j++) [p.sc[j], p.mn[j]] = scaleMinK4(bytes, at + 4, j);
}

/** Q4_K (ggml type 12). */
export const Q4_K: QuantFormat = {
  name: 'q4_k', ggml: 'Q4_K', ggmlId: 12, blockValues: QK_K, blockBytes: BYTES, groupValues: 32, mins: true, activation: 'q8_k',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    unpackScalesMinsK4(bytes, at, p);
    for (let c = 0; c < 4; c++) {
      for (let l = 0; l < 32; l++) {
        const q = bytes[at + 16 + 32 * c + l]!;
        p.w[64 * c + l] = q & 15;
        p.w[64 * c + 32 + l] = q >> 4;
      }
    }
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(Q4_K, bytes, out, (p, i) => Math.fround(Math.fround(p.f[0]! * p.sc[i >> 5]!) * p.w[i]!) - Math.fround(p.f[1]! * p.mn[i >> 5]!));
  },
};

/**
 * Quantize (length a multiple of 256). Per sub-block: min = min(0, min x), scale = (max x − min) / 15;
 * d = max scale / 63 and dmin = max(−min) / 63 (f16); 6-bit codes by rounding to nearest even; quants
 * q = clamp(rint((x + dmin·m) / (d·s)), 0, 15) against the stored (rounded) scales.
 */
export function quantizeQ4_K(x: Float32Array): Uint8Array {
  const out = new Uint8Array((x.length / QK_K) * BYTES);
  const scale = new Float32Array(8), mins = new Float32Array(8), ls = new Uint8Array(8), lm = new Uint8Array(8), q = new Uint8Array(QK_K);
  for (let b = 0, o = 0; b < x.length; b += QK_K, o += BYTES) {
    for (let j = 0; j < 8; j++) {
      let mn = 0, mx = -Infinity;
      for (let l = 0; l < 32; l++) { const v = x[b + 32 * j + l]!; if (v < mn) mn = v; if (v > mx) mx = v; }
      scale[j] = Math.fround(Math.fround(mx - mn) / 15);
      mins[j] = -mn;
    }
    let maxScale = 0, maxMin = 0;
    for (let j = 0; j < 8; j++) { maxScale = Math.max(maxScale, scale[j]!); maxMin = Math.max(maxMin, mins[j]!); }
    const d = toF16(Math.fround(maxScale / 63)), dmin = toF16(Math.fround(maxMin / 63));
    for (let j = 0; j < 8; j++) {
      ls[j] = d.value > 0 ? Math.min(63, rint(Math.fround(scale[j]! / d.value))) : 0;
      lm[j] = dmin.value > 0 ? Math.min(63, rint(Math.fround(mins[j]! / dmin.value))) : 0;
    }
    setF16(out, o, d.bits);
    setF16(out, o + 2, dmin.bits);
    const s = o + 4;
    for (let j = 0; j < 8; j++) {
      if (j < 4) {
        out[s + j] = ls[j]!;
        out[s + j + 4] = lm[j]!;
      } else {
        out[s + j + 4] = (ls[j]! & 0xf) | ((lm[j]! & 0xf) << 4);
        out[s + j - 4] |= (ls[j]! >> 4) << 6;
        out[s + j] |= (lm[j]! >> 4) << 6;
      }
      const dd = Math.fround(d.value * ls[j]!), dm = Math.fround(dmin.value * lm[j]!);
      for (let l = 0; l < 32; l++) {
        const v = dd > 0 ? rint(Math.fround(Math.fround(x[b + 32 * j + l]! + dm) / dd)) : 0;
        q[32 * j + l] = Math.max(0, Math.min(15, v));
      }
    }
    for (let c = 0; c < 4; c++) for (let l = 0; l < 32; l++) out[s + 12 + 32 * c + l] = q[64 * c + l]! | (q[64 * c + 32 + l]! << 4);
  }
  return out;
}

/** Dequantize Q4_K super-blocks into `out`. */
export function dequantizeQ4_K(bytes: Uint8Array, out: Float32Array): void {
  Q4_K.dequantize(bytes, out);
}
