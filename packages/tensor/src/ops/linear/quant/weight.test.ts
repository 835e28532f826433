// Quantized dtypes as tensors: a stored weight (`weightTensor`) or any 2-D quantized tensor goes
// through `linear` and `embedding` to the registry's packed kernels for its dtype. Against the
// references: the quantized products are the TypeScript reference's bits (reference.ts), the
// float ones within the bound of any order of float32 sums of the rounded input (γ_K·Σ|x·w|,
// × 2), rows and `toFloat32` are the format's dequantization bit for bit, `to(q)` is the format's
// quantizer byte for byte; and what must not happen (gradients, views, wrong byte counts) throws.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { noGrad } from '../../../autograd';
import { bf16BitsToF32, f32ToBf16Bits, f32ToF16Bits, f16BitsToF32 } from '../../../dtype';
import { QUANT_FORMATS, QUANTIZERS, isQuantDType, type QuantDType } from '../../../dtypes/index';
import { roundBf16Into } from '../../../dtypes/bf16';
import { roundF16Into } from '../../../dtypes/f16';
import { DTypeError, ShapeError } from '../../../errors';
import { Rng } from '../../../random';
import { Tensor } from '../../../tensor';
import { embedding } from '../../embedding';
import { transpose } from '../../view';
import { linear } from '../../matmul';
import { KERNEL_DTYPES } from './module';
import { quantMatmulReference } from './reference';
import { randomBlocks } from './rows.test-helper';
import { isStoredWeight, storedWeight, weightTensor } from './weight';
import { WeightStore } from './memory';

const bits = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe('quantized dtypes as tensors', () => {
  for (const name of KERNEL_DTYPES) {
    it(`${name}: linear is the reference product, embedding and toFloat32 the dequantized rows`, () => {
      const f = QUANT_FORMATS[name], store = new WeightStore();
      fc.assert(fc.property(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 19 }), fc.integer({ min: 1, max: f.blockValues === 32 ? 4 : 2 }), fc.integer({ min: 0, max: 1e6 }), (M, N, nb, seed) => {
        const rng = new Rng(seed), K = nb * f.blockValues, bytes = randomBlocks(name, N * nb, rng, -16, 2);
        const w = weightTensor(name, [N, K], bytes, store), x = Float32Array.from({ length: M * K }, () => rng.normal());
        expect([w.dtype, w.shape, isStoredWeight(w)]).toEqual([name, [N, K], true]);
        expect(bits(linear(Tensor.from(x.slice(), [M, K]), w).data)).toEqual(bits(quantMatmulReference(name, bytes, N, K, x, M)));
        const values = new Float32Array(N * K);
        f.dequantize(bytes, values);
        expect(bits(w.toFloat32())).toEqual(bits(values));
        const ids = Int32Array.from({ length: 3 }, () => Math.floor(rng.uniform() * N));
        const rows = embedding(Tensor.from(ids, [1, 3]), w);
        expect(rows.shape).toEqual([1, 3, K]);
        expect(bits(rows.data)).toEqual(bits(Float32Array.from(Array.from(ids).flatMap((id) => Array.from(values.subarray(id * K, (id + 1) * K))))));
      }), { numRuns: 12 });
    });
  }

  for (const dtype of ['f32', 'bf16', 'f16'] as const) {
    it(`${dtype}: linear rounds the input to the weight's precision and sums within γ_K·Σ|x·w| of the float64 product`, () => {
      const rng = new Rng(3), N = 11, K = 72, M = 5;
      const v = Float32Array.from({ length: N * K }, () => rng.normal());
      const raw = dtype === 'f32' ? v : Uint16Array.from(v, (a) => (dtype === 'bf16' ? f32ToBf16Bits(a) : f32ToF16Bits(a)));
      const wv = dtype === 'f32' ? v : Float32Array.from(raw as Uint16Array, (h) => (dtype === 'bf16' ? bf16BitsToF32(h) : f16BitsToF32(h)));
      const w = weightTensor(dtype, [N, K], new Uint8Array(raw.buffer));
      const x = Float32Array.from({ length: M * K }, () => rng.normal()), xr = x.slice();
      if (dtype === 'bf16') roundBf16Into(xr, xr); else if (dtype === 'f16') roundF16Into(xr, xr);
      const y = linear(Tensor.from(x, [M, K]), w).data, g = (2 * K * 2 ** -24) / (1 - K * 2 ** -24);
      for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
        let s = 0, a = 0;
        for (let k = 0; k < K; k++) { const p = xr[m * K + k]! * wv[n * K + k]!; s += p; a += Math.abs(p); }
        expect(Math.abs(y[m * N + n]! - s)).toBeLessThanOrEqual(g * a);
      }
      expect(bits(w.toFloat32())).toEqual(bits(wv));
    });
  }

  it('to(q) is the format\'s quantizer, and a quantized tensor made that way multiplies as the stored weight of its bytes', () => {
    const rng = new Rng(5), x = Tensor.from(Float32Array.from({ length: 6 * 256 }, () => rng.normal()), [6, 256]);
    const a = Tensor.from(Float32Array.from({ length: 2 * 256 }, () => rng.normal()), [2, 256]);
    for (const [name, quantize] of Object.entries(QUANTIZERS) as [QuantDType, (v: Float32Array) => Uint8Array][]) {
      const q = x.to(name);
      expect(Array.from(q.storage as Uint8Array)).toEqual(Array.from(quantize(x.toFloat32())));
      expect(isStoredWeight(q)).toBe(true);
      expect(bits(linear(a, q).data)).toEqual(bits(linear(a, weightTensor(name, [6, 256], q.storage as Uint8Array)).data));
      expect(bits(q.clone().toFloat32())).toEqual(bits(q.toFloat32()));
    }
    expect(() => x.to('q2_k')).toThrow(DTypeError);
    expect(() => Tensor.from(new Float32Array(40), [2, 20]).to('q8_0')).toThrow(ShapeError);
    expect(isQuantDType('q4_k') && !isQuantDType('bf16')).toBe(true);
  });

  it('stored weights are inference-only, views of them are plain tensors, and bad shapes or byte counts are named', () => {
    const rng = new Rng(9), v = Float32Array.from({ length: 4 * 32 }, () => rng.normal());
    const w = weightTensor('f32', [4, 32], new Uint8Array(v.buffer)), x = Tensor.from(Float32Array.from({ length: 64 }, () => rng.normal()), [2, 32]).requireGrad();
    expect(() => linear(x, w)).toThrow(/stored f32 weight for inference/);
    expect(noGrad(() => linear(x, w)).shape).toEqual([2, 4]);
    // A transposed view shares the storage but is not the stored weight: it multiplies as a plain f32 tensor.
    const wt = transpose(w, 0, 1);
    expect([storedWeight(wt), isStoredWeight(wt)]).toEqual([null, false]);
    expect(() => weightTensor('q8_0', [4, 33], new Uint8Array(4 * 34))).toThrow(ShapeError);
    expect(() => weightTensor('q8_0', [4, 32], new Uint8Array(4 * 34 - 1))).toThrow(/135 bytes for a q8_0 weight \[4, 32\] \(expected 136\)/);
    const q = Tensor.zeros([4, 32], 'q8_0');
    expect(() => new Tensor(q.storage, [2, 32], 'q8_0', [32, 1], 32)).toThrow(/stored whole/);
    expect(() => new Tensor(new Uint8Array(10), [1, 32], 'q8_0')).toThrow(/10 bytes are too few/);
    expect(() => q.requireGrad()).toThrow(DTypeError);
  });
});
