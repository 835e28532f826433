// QuantMatrix on device `webgpu` (gpu.js kernels on the packed blocks) against the same matrix on
// `cpu` (the WebAssembly kernels): random shapes (fast-check) and blocks from the quantizers,
// M = 1 and M > 1, odd N. Both quantize the activations identically and sum each block's integer
// products exactly; they differ only in how the float32 block results are scaled and summed. For
// any such order and association, a sum of T terms, each a product with r roundings, is within
// (T − 1 + r)·u·Σ|term| of the exact sum (first order, u = 2^-24); the two results are within the
// sum of their two bounds. Bounding Σ|term| by Σ_k |x_k|·(|d·sc·q_k| + |dmin·m|) (Q4_K) or
// Σ_k |x_k·w_k| (Q8_0) — x the quantized activations, w the stored weights — covers every split of
// a block's integer sum into SIMD lanes: the GPU adds nb block terms with 2 roundings (Q8_0) or
// 2·nb terms with 3 (Q4_K: the two exact half-sums meet in one rounding); for the CPU we allow 4
// lanes per block (Q8_0) and 32 lane or sub-block terms per super-block (Q4_K), 3 roundings each.
// Times 2 for the second-order terms. Then a tiny GGUF model generates the same greedy tokens on
// both devices. Runs on SwiftShader without a GPU; a missing driver fails, it never skips.
import fs from 'node:fs';
import path from 'node:path';
import { generate } from '@apertus/model';
import { Rng, SWIFTSHADER_ICD, useDevice } from '@apertus/tensor';
import { webgpuBuiltKernels, webgpuTransfers } from '@apertus/tensor/gpujs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeModelGguf } from '../convert';
import { fixtureModel, fixtureTokenizer, tempDir } from '../fixture.test-helper';
import { loadGguf } from '../open';
import { roundActivations } from '../quant/activations';
import { scaleMinK4 } from '../quant/q4_k';
import { f16BitsToF32 } from '../quant/rounding';
import { quantize } from '../quant/index';
import { QuantMatrix } from '../quant-matrix';
import { GGML_TYPES, QK_K } from '../types';

if (process.env.VK_ICD_FILENAMES === undefined && process.env.VK_DRIVER_FILES === undefined) process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
process.env.XDG_RUNTIME_DIR ??= '/tmp';

const U = 2 ** -24;

/** Per stored weight, the magnitudes of its two parts: |d·sc·q| and dmin·m (Q4_K), |d·q| and 0 (Q8_0). */
function weightParts(type: 'Q8_0' | 'Q4_K', bytes: Uint8Array, n: number): [Float64Array, Float64Array] {
  const t = GGML_TYPES[type], scaled = new Float64Array(n), mins = new Float64Array(n);
  for (let b = 0; b < n / t.blockSize; b++) {
    const at = b * t.typeSize, d = f16BitsToF32(bytes[at]! | (bytes[at + 1]! << 8));
    if (type === 'Q8_0') {
      for (let j = 0; j < 32; j++) scaled[32 * b + j] = Math.abs(d * ((bytes[at + 2 + j]! << 24) >> 24));
      continue;
    }
    const dmin = f16BitsToF32(bytes[at + 2]! | (bytes[at + 3]! << 8));
    for (let s = 0; s < 8; s++) {
      const [sc, m] = scaleMinK4(bytes, at + 4, s);
      for (let l = 0; l < 32; l++) {
        const byte = bytes[at + 16 + 32 * (s >> 1) + l]!, q = s & 1 ? byte >> 4 : byte & 15;
        scaled[256 * b + 32 * s + l] = Math.abs(d * sc * q);
        mins[256 * b + 32 * s + l] = Math.abs(dmin * m);
      }
    }
  }
  return [scaled, mins];
}

/** The derived bound on |y_webgpu − y_cpu| for each output (see the file comment). */
function bounds(type: 'Q8_0' | 'Q4_K', bytes: Uint8Array, x: Float32Array, M: number, N: number, K: number): Float64Array {
  const xr = roundActivations(GGML_TYPES[type], x), [scaled, mins] = weightParts(type, bytes, N * K);
  const nb = K / GGML_TYPES[type].blockSize;
  const roundings = type === 'Q8_0' ? (nb + 1) + (4 * nb + 2) : (2 * nb + 2) + (32 * nb + 2);
  const out = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let a = 0;
      for (let k = 0; k < K; k++) a += Math.abs(xr[m * K + k]!) * (scaled[n * K + k]! + mins[n * K + k]!);
      out[m * N + n] = 2 * roundings * U * a;
    }
  }
  return out;
}

/** y on the current device. */
function product(w: QuantMatrix, x: Float32Array, M: number): Float32Array {
  const y = new Float32Array(M * w.shape[0]);
  w.matmulT(x, M, y);
  return y;
}

beforeAll(async () => {
  // A missing driver or adapter throws here: the tests fail, they never skip.
  await useDevice('webgpu');
}, 120_000);
afterAll(async () => {
  await useDevice('cpu');
});

// SwiftShader compiles and runs the WGSL on the CPU: allow for a loaded machine.
describe('QuantMatrix on device webgpu', { timeout: 240_000 }, () => {
  for (const type of ['Q8_0', 'Q4_K'] as const) {
    it(`${type}: equals the cpu kernels within the derived float32 bound (random shapes, M = 1 and M > 1)`, async () => {
      const per = GGML_TYPES[type].blockSize;
      let gpuCalls = 0, worst = 0;
      await fc.assert(fc.asyncProperty(
        fc.integer({ min: 0, max: 3 }).map((h) => 2 * h + 1), fc.integer({ min: 1, max: type === 'Q8_0' ? 6 : 2 }),
        fc.constantFrom(1, 1, 3, 5), fc.integer({ min: 1, max: 2 ** 30 }),
        async (N, kb, M, seed) => {
          const K = kb * per, rng = new Rng(seed);
          const bytes = quantize(type, Float32Array.from({ length: N * K }, () => rng.normal() * 0.05));
          const x = Float32Array.from({ length: M * K }, () => rng.normal() * (1 + 3 * rng.uniform()));
          const w = new QuantMatrix(GGML_TYPES[type], [N, K], bytes);
          const before = webgpuTransfers().calls;
          const gpu = product(w, x, M);
          gpuCalls += webgpuTransfers().calls - before;
          await useDevice('cpu');
          const cpu = product(w, x, M);
          await useDevice('webgpu');
          const bound = bounds(type, bytes, x, M, N, K);
          for (let i = 0; i < M * N; i++) {
            const diff = Math.abs(gpu[i]! - cpu[i]!);
            if (!(diff <= bound[i]!)) expect.fail(`${type} [${M}, ${K}]·[${N}, ${K}]ᵀ output ${i}: webgpu ${gpu[i]}, cpu ${cpu[i]} (|diff| ${diff} > bound ${bound[i]})`);
            if (bound[i]! > 0) worst = Math.max(worst, diff / bound[i]!);
          }
        }), { numRuns: 12 });
      // One kernel launch per product on the GPU: the products did not run the CPU kernels.
      expect(gpuCalls).toBe(12);
      expect(Object.keys(webgpuBuiltKernels()).some((k) => k.startsWith(`gguf.${type.toLowerCase()}|`))).toBe(true);
      console.log(`${type}: worst |webgpu − cpu| / bound = ${worst.toFixed(3)}`);
    });
  }

  it('the product runs in a gpu.js webgpu kernel, one launch per product (no silent CPU path)', () => {
    const rng = new Rng(7), N = 3, K = QK_K;
    const w = new QuantMatrix(GGML_TYPES.Q4_K, [N, K], quantize('Q4_K', Float32Array.from({ length: N * K }, () => rng.normal())));
    const x = Float32Array.from({ length: 2 * K }, () => rng.normal());
    const before = webgpuTransfers();
    product(w, x, 2);
    product(w, x, 2);
    const after = webgpuTransfers();
    expect(after.calls - before.calls).toBe(2);
    // The packed weights went up once (kept on the device by key); the activations with each product.
    expect(after.uploads - before.uploads).toBe(1 + 2 * 3);
    expect(webgpuBuiltKernels()[`gguf.q4_k|${N},${K},2`]).toBe('webgpu');
    for (const [key, mode] of Object.entries(webgpuBuiltKernels())) expect(mode, key).toBe('webgpu');
  });

  it('a tiny Q4_K, Q8_0 and F32 GGUF model generates the same greedy tokens on webgpu as on cpu', async () => {
    const tmp = tempDir('apertus-gguf-webgpu-');
    try {
      const tok = fixtureTokenizer();
      for (const type of ['Q4_K', 'Q8_0', 'F32'] as const) {
        const file = path.join(tmp.dir, `m.${type}.gguf`);
        writeModelGguf(fixtureModel(), file, { type, tokenizer: { json: tok.tokenizerJson, config: tok.tokenizerConfig } });
        const { model } = loadGguf(file, { tokenizer: false });
        const prompt = [1, 17, 42, 300, 5];
        const options = { maxTokens: 6, temperature: 0, stopTokenIds: [] };
        const before = webgpuTransfers().calls;
        const onGpu = generate(model, prompt, options).tokens;
        // The quantized products ran in this package's kernels, F32's in the webgpu GEMM.
        const kernel = type === 'F32' ? 'gemm.NT|' : `gguf.${type.toLowerCase()}|`;
        expect(Object.keys(webgpuBuiltKernels()).some((k) => k.startsWith(kernel)), kernel).toBe(true);
        expect(webgpuTransfers().calls - before).toBeGreaterThan(0);
        await useDevice('cpu');
        const onCpu = generate(model, prompt, options).tokens;
        await useDevice('webgpu');
        expect(onGpu, type).toEqual(onCpu);
        fs.rmSync(file);
      }
    } finally {
      tmp.remove();
    }
  });
});
