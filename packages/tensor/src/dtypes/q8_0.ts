// Q8_0: blocks of 32 values = f16 scale d + 32 int8 quants; x = d · q. Also the activation format
// llama.cpp quantizes a product's input to for Q4_0, Q5_0, Q8_0 and IQ4_NL weights.
import { blockParts, dequantizeBlocks, quantizedBlocks, type BlockParts, type QuantFormat } from './format';
import { f16At, rint, roundAway, setF16, toF16 } from './rounding';

const QK = 32, BYTES = 34;

/** Q8_0 (ggml type 8). */
export const Q8_0: QuantFormat = {
  name: 'q8_0', ggml: 'Q8_0', ggmlId: 8, blockValues: QK, blockBytes: BYTES, groupValues: QK, mins: false, activation: 'q8_0',
  unpack(bytes: Uint8Array, at: number, p: BlockParts): void {
    p.f[0] = f16At(bytes, at);
    for (let i = 0; i < QK; i++) p.w[i] = bytes[at + 2 + i]! << 24 >> 24;
  },
  dequantize(bytes: Uint8Array, out: Float32Array): void {
    dequantizeBlocks(Q8_0, bytes, out, (p, i) => p.w[i]! * p.f[0]!);
  },
};

/** Quantize `x` (length a multiple of 32) as ggml's reference does: d = max|x| / 127, q = roundf(x / d). */
export function quantizeQ8_0(x: Float32Array): Uint8Array {
  const out = quantizedBlocks(x, QK, BYTES, 'quantizeQ8_0');
  for (let b = 0, o = 0; b < x.length; b += QK, o += BYTES) {
    let amax = 0;
    for (let j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(x[b + j]!));
    const d = Math.fround(amax / 127), id = d ? Math.fround(1 / d) : 0;
    setF16(out, o, toF16(d).bits);
    for (let j = 0; j < QK; j++) out[o + 2 + j] = roundAway(Math.fround(x[b + j]! * id)) & 255;
  }
  return out;
}

/** Dequantize Q8_0 blocks into `out`. */
export function dequantizeQ8_0(bytes: Uint8Array, out: Float32Array): void {
  Q8_0.dequantize(bytes, out);
}

/** Activations quantized for a product: int8 quants, the float scale of each block, and the integer sums the product needs. */
export interface QuantizedActivations {
  /** The quants, one int8 per value. */
  readonly q: Int8Array;
  /** The scale of each block, as the float it stands for (an f16 value for Q8_0/Q8_1, float32 for Q8_K). */
  readonly d: Float32Array;
  /** Q8_0/Q8_1: the sum of each block's 32 quants; Q8_K: the sum of every 16 quants (ggml's bsums). */
  readonly sums: Int32Array;
  /** Q8_1 only: s = f16(d·Σq) of each block, as a float (d before its f16 rounding); empty otherwise. */
  readonly s: Float32Array;
}

/** Q8_0 activations as ggml's x86 `quantize_row_q8_0`: d = f16(max|x|/127), q = rint(x·127/max|x|). */
export function quantizeActivationsQ8_0(x: Float32Array): QuantizedActivations {
  const nb = x.length / QK, q = new Int8Array(x.length), d = new Float32Array(nb), sums = new Int32Array(nb);
  for (let b = 0; b < nb; b++) {
    let amax = 0;
    for (let j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(x[QK * b + j]!));
    const id = amax !== 0 ? Math.fround(127 / amax) : 0;
    d[b] = toF16(Math.fround(amax / 127)).value;
    let s = 0;
    for (let j = 0; j < QK; j++) s += q[QK * b + j] = rint(Math.fround(x[QK * b + j]! * id));
    sums[b] = s;
  }
  return { q, d, sums, s: new Float32Array(0) };
}

export { blockParts };
