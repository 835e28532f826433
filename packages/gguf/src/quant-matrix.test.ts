// QuantMatrix on every GGUF type: its products are @apertus/tensor's packedLinear on the same
// bytes (bit for bit, batches of 1 to 9 rows), its rows the dequantized ones, and without the
// kernels (no weights memory: a tile of rows dequantized for the GEMM) within the float32 bound of
// a float64 product of the rounded input and the dequantized weights.
import { packedLinear, Rng, f32ToF16Bits, WeightStore, type WeightDType } from '@apertus/tensor';
import { describe, expect, it } from 'vitest';
import { roundActivations } from './quant/activations';
import { dequantize } from './quant/index';
import { QuantMatrix } from './quant-matrix';
import { GGML_TYPES, type GgmlTypeName } from './types';

/** Random stored bytes of [N, K] of `type`: random blocks with f16 scales about 1e-3 (float types: normal values). */
function randomBytes(type: GgmlTypeName, rng: Rng, N: number, K: number): Uint8Array {
  const t = GGML_TYPES[type], n = N * K;
  if (type === 'F32') return new Uint8Array(Float32Array.from({ length: n }, () => rng.normal()).buffer);
  if (type === 'F16' || type === 'BF16') return new Uint8Array(Uint16Array.from({ length: n }, () => (type === 'F16' ? f32ToF16Bits(rng.normal()) : (new Uint32Array(Float32Array.of(rng.normal()).buffer)[0]! >>> 16))).buffer);
  const out = Uint8Array.from({ length: (n / t.blockSize) * t.typeSize }, () => Math.floor(rng.uniform() * 256));
  const f16 = { Q4_0: [0], Q4_1: [0, 2], Q5_0: [0], Q5_1: [0, 2], Q8_0: [0], Q2_K: [80, 82], Q3_K: [108], Q4_K: [0, 2], Q5_K: [0, 2], Q6_K: [208], IQ4_NL: [0], IQ4_XS: [0] }[type as 'Q4_0']!;
  for (let o = 0; o < out.length; o += t.typeSize) for (const at of f16) { const b = f32ToF16Bits((rng.uniform() - 0.5) * 2e-3); out[o + at] = b & 255; out[o + at + 1] = b >> 8; }
  return out;
}

const TYPES = Object.keys(GGML_TYPES) as GgmlTypeName[];
const bits = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe('QuantMatrix', () => {
  for (const type of TYPES) {
    it(`${type}: matmulT is packedLinear on the stored bytes, rows are the dequantized rows, and the GEMM fallback is within its float32 bound`, () => {
      const t = GGML_TYPES[type], rng = new Rng(t.id + 1), N = 13, K = t.blockSize === 1 ? 96 : 2 * Math.max(256, t.blockSize);
      const bytes = randomBytes(type, rng, N, K), q = new QuantMatrix(t, [N, K], bytes);
      for (const M of [1, 4, 9]) {
        const x = Float32Array.from({ length: M * K }, () => rng.normal()), y = new Float32Array(M * N), want = new Float32Array(M * N);
        q.matmulT(x, M, y);
        // The same bytes in a weights memory of their own.
        packedLinear({ dtype: type.toLowerCase() as WeightDType, N, K, ...new WeightStore().store(bytes) }, x, M, want);
        expect(bits(y)).toEqual(bits(want));
      }
      const w = dequantize(t, bytes, N * K), rows = new Float32Array(2 * K);
      q.rows(Int32Array.of(3, 11), rows);
      expect(rows).toEqual(Float32Array.of(...w.subarray(3 * K, 4 * K), ...w.subarray(11 * K, 12 * K)));
      // Without a weights memory: the dequantized tiles and the GEMM, within γ_(K+1)·Σ|x·w|.
      const plain = new QuantMatrix(t, [N, K], bytes, null), M = 3, x = Float32Array.from({ length: M * K }, () => rng.normal());
      const y = new Float32Array(M * N), xr = roundActivations(t, x), g = ((K + 1) * 2 ** -24) / (1 - (K + 1) * 2 ** -24);
      plain.matmulT(x, M, y);
      for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
        let s = 0, a = 0;
        for (let k = 0; k < K; k++) { const p = xr[m * K + k]! * w[n * K + k]!; s += p; a += Math.abs(p); }
        expect(Math.abs(y[m * N + n]! - s)).toBeLessThanOrEqual(g * a);
      }
    });
  }
});
