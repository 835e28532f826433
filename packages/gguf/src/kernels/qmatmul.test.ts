// The WebAssembly kernels against a double-precision reference on the dequantized weights and the
// rounded activations (quant/activations.ts, checked against numpy), and the committed module
// against a fresh build of kernels.wat.mjs.
import { Rng, sgemmReference } from '@apertus/tensor';
import { describe, expect, it } from 'vitest';
import { roundActivations } from '../quant/activations';
import { dequantize, quantize } from '../quant/index';
import { GGML_TYPES } from '../types';
import { QUANT_KERNELS_WASM } from './module.generated';
import { quantizeActivationsQ8_K } from '../quant/activations';
import { hasKernel, quantMatmulT } from './qmatmul';

describe('quantized WebAssembly kernels', () => {
  for (const type of ['Q8_0', 'Q4_K'] as const) {
    for (const [M, N, K] of [[1, 37, 256], [3, 700, 512], [21, 64, 1024]] as const) {
      it(`${type}: y = x·Wᵀ for M=${M}, N=${N}, K=${K}`, () => {
        const rng = new Rng(M * N + K);
        const w = Float32Array.from({ length: N * K }, () => rng.normal() * 0.05);
        const x = Float32Array.from({ length: M * K }, (_, i) => rng.normal() + (i % 7 === 0 ? 3 : 0));
        const data = quantize(type, w), t = GGML_TYPES[type];
        expect(hasKernel(t)).toBe(true);
        const y = new Float32Array(M * N), ref = new Float32Array(M * N);
        quantMatmulT(t, data, N, K, x, M, y);
        sgemmReference({ transA: false, transB: true, M, N, K, A: roundActivations(t, x), B: dequantize(t, data, N * K), C: ref });
        let err = 0, scale = 0;
        ref.forEach((v, i) => { err = Math.max(err, Math.abs(v - y[i]!)); scale = Math.max(scale, Math.abs(v)); });
        expect(err / scale).toBeLessThan(2e-6);
      });
    }
  }

  it('Q8_K activations carry the sum of every 32 quants', () => {
    const rng = new Rng(2), x = Float32Array.from({ length: 1024 }, () => rng.normal());
    const a = quantizeActivationsQ8_K(x);
    for (let s = 0; s < a.sums!.length; s++) expect(a.sums![s]).toBe(a.q.subarray(32 * s, 32 * s + 32).reduce((t, v) => t + v, 0));
  });

  it('the committed module is a fresh build of kernels.wat.mjs', async () => {
    // @ts-expect-error: plain JavaScript generator without types
    const { buildBase64 } = await import('./generate.mjs');
    expect(await buildBase64()).toBe(QUANT_KERNELS_WASM);
  });
});
