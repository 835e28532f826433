// QuantMatrix on device `webgpu` (gpu.js kernels on the packed blocks) against the same matrix on
// `cpu` (the WebAssembly kernels; for Q4_0, dequantized rows in the float32 GEMM), Q8_0, Q4_0,
// Q4_K and Q6_K: random shapes (fast-check), M = 1 and M > 1 (the CPU's decode and prefill
// kernels), odd N. Both quantize the activations identically and sum each block's integer
// products exactly; they differ only in how the float32 block results are scaled and summed.
// For any such order and association, a sum of T terms, each a product with r roundings, is
// within (T − 1 + r)·u·Σ|term| of the exact sum (first order, u = 2^-24); the two results are
// within the sum of their two bounds. Σ|term| is bounded by Σ_k |x_k|·(|a_k| + |c_k|), x the
// quantized activations and w = a − c the stored weights split as the kernels multiply them
// (Q4_K d·sc·q − dmin·m, Q6_K d·sc·q − 32·d·sc), which covers every split of a block's integer
// sum into SIMD lanes. The counts: the GPU adds nb block terms of ≤ 3 roundings (Q4_K 2·nb);
// for the CPU we allow 4 lane terms per block of 32 (Q8_0), 32 per super-block (Q4_K, Q6_K), or
// K products (Q4_0's GEMM). Times 2 for the second-order terms. With unit scales and integer
// activations every float32 operation is exact, and both devices must give the integer product
// bit for bit. Then tiny GGUF models generate the same greedy tokens on both devices. Runs on
// SwiftShader without a GPU; a missing driver or adapter fails, it never skips.
import path from 'node:path';
import { generate } from '@apertus/model';
import { Rng, SWIFTSHADER_ICD, useDevice } from '@apertus/tensor';
import { webgpuBuiltKernels, webgpuTransfers } from '@apertus/tensor/gpujs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeModelGguf } from '../convert';
import { CONFIG, fixtureModel, fixtureTokenizer, randomQ6K, randomWeights, rewrite, tempDir } from '../fixture.test-helper';
import { loadGguf } from '../open';
import { roundActivations } from '../quant/activations';
import { scaleMinK4 } from '../quant/q4_k';
import { quantsQ6_K } from '../quant/q6_k';
import { f16BitsToF32 } from '../quant/rounding';
import { dequantize, quantize } from '../quant/index';
import { QuantMatrix } from '../quant-matrix';
import { GGML_TYPES, QK_K } from '../types';

if (process.env.VK_ICD_FILENAMES === undefined && process.env.VK_DRIVER_FILES === undefined) process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
process.env.XDG_RUNTIME_DIR ??= '/tmp';

const U = 2 ** -24;

type Quant = 'Q8_0' | 'Q4_0' | 'Q4_K' | 'Q6_K';

/**
 * Per stored weight w = a − c, the magnitudes |a| and |c| of its two parts as the kernels multiply
 * them: Q4_K d·sc·q and dmin·m, Q6_K d·sc·q and d·sc·32 (q unsigned), Q8_0 and Q4_0 d·q and 0.
 */
function weightParts(type: Quant, bytes: Uint8Array, n: number): [Float64Array, Float64Array] {
  const t = GGML_TYPES[type], scaled = new Float64Array(n), mins = new Float64Array(n), q6 = new Uint8Array(QK_K);
  for (let b = 0; b < n / t.blockSize; b++) {
    const at = b * t.typeSize, y = b * t.blockSize, f16 = (o: number) => f16BitsToF32(bytes[at + o]! | (bytes[at + o + 1]! << 8));
    if (type === 'Q8_0') {
      for (let j = 0; j < 32; j++) scaled[y + j] = Math.abs(f16(0) * ((bytes[at + 2 + j]! << 24) >> 24));
    } else if (type === 'Q4_0') {
      for (let j = 0; j < 16; j++) {
        scaled[y + j] = Math.abs(f16(0) * ((bytes[at + 2 + j]! & 15) - 8));
        scaled[y + j + 16] = Math.abs(f16(0) * ((bytes[at + 2 + j]! >> 4) - 8));
      }
    } else if (type === 'Q4_K') {
      for (let s = 0; s < 8; s++) {
        const [sc, m] = scaleMinK4(bytes, at + 4, s);
        for (let l = 0; l < 32; l++) {
          const byte = bytes[at + 16 + 32 * (s >> 1) + l]!, q = s & 1 ? byte >> 4 : byte & 15;
          scaled[y + 32 * s + l] = Math.abs(f16(0) * sc * q);
          mins[y + 32 * s + l] = Math.abs(f16(2) * m);
        }
      }
    } else {
      quantsQ6_K(bytes, at, q6);
      for (let i = 0; i < QK_K; i++) {
        const ds = Math.abs(f16(208) * ((bytes[at + 192 + (i >> 4)]! << 24) >> 24));
        scaled[y + i] = ds * q6[i]!;
        mins[y + i] = ds * 32;
      }
    }
  }
  return [scaled, mins];
}

/**
 * Roundings allowed per term on each side (see the file comment): the webgpu kernels add nb block
 * terms (Q4_K: 2·nb) of 2–3 roundings; the CPU kernels up to 4 lane terms per block of 32 (Q8_0),
 * 32 per super-block (Q4_K, Q6_K), or K products of one rounding each (Q4_0: a float32 GEMM on
 * dequantized rows).
 */
function roundings(type: Quant, K: number): number {
  const nb = K / GGML_TYPES[type].blockSize;
  switch (type) {
    case 'Q8_0': return (nb + 1) + (4 * nb + 2);
    case 'Q4_0': return (nb + 1) + K;
    case 'Q4_K': return (2 * nb + 2) + (32 * nb + 2);
    case 'Q6_K': return (nb + 2) + (32 * nb + 2);
  }
}

/** The derived bound on |y_webgpu − y_cpu| for each output (see the file comment). */
function bounds(type: Quant, bytes: Uint8Array, x: Float32Array, M: number, N: number, K: number): Float64Array {
  const xr = roundActivations(GGML_TYPES[type], x), [scaled, mins] = weightParts(type, bytes, N * K), r = roundings(type, K);
  const out = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let a = 0;
      for (let k = 0; k < K; k++) a += Math.abs(xr[m * K + k]!) * (scaled[n * K + k]! + mins[n * K + k]!);
      out[m * N + n] = 2 * r * U * a;
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
  for (const type of ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'] as const) {
    it(`${type}: equals the cpu kernels within the derived float32 bound (random shapes, M = 1 and M > 1)`, async () => {
      const per = GGML_TYPES[type].blockSize;
      let gpuCalls = 0, worst = 0;
      await fc.assert(fc.asyncProperty(
        fc.integer({ min: 0, max: 3 }).map((h) => 2 * h + 1), fc.integer({ min: 1, max: GGML_TYPES[type].blockSize === 32 ? 6 : 2 }),
        fc.constantFrom(1, 1, 3, 5), fc.integer({ min: 1, max: 2 ** 30 }),
        async (N, kb, M, seed) => {
          const K = kb * per, rng = new Rng(seed);
          const bytes = randomWeights(type, rng, N, K);
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

  it('with unit scales and integer activations (every float32 operation exact) equals the cpu kernels and the integer product bit for bit', async () => {
    // Weights: random quant and scale bytes, every f16 scale 1 (Q4_K's dmin too), −128 bytes
    // included. Activations: integers in [−3, 3] with one ±127 per 32, so each activation block's
    // scale is ±1 and its quants are ±x. Every sum stays below 2^24.
    const rng = new Rng(11), N = 5;
    for (const [type, M] of [['Q8_0', 1], ['Q4_0', 5], ['Q4_K', 1], ['Q4_K', 5], ['Q6_K', 1], ['Q6_K', 5], ['Q8_0', 5]] as const) {
      const t = GGML_TYPES[type], K = t.blockSize === 32 ? 128 : 256;
      const bytes = Uint8Array.from({ length: (N * K / t.blockSize) * t.typeSize }, () => Math.floor(rng.uniform() * 256));
      for (let o = 0; o < bytes.length; o += t.typeSize) for (const at of type === 'Q6_K' ? [208] : type === 'Q4_K' ? [0, 2] : [0]) { bytes[o + at] = 0x00; bytes[o + at + 1] = 0x3c; }
      const x = Float32Array.from({ length: M * K }, (_, i) => (i % 32 === 7 ? (rng.uniform() < 0.5 ? -127 : 127) : Math.floor(rng.uniform() * 7) - 3));
      const w = new QuantMatrix(t, [N, K], bytes), wf = dequantize(t, bytes, N * K);
      const gpu = product(w, x, M);
      await useDevice('cpu');
      const cpu = product(w, x, M);
      await useDevice('webgpu');
      for (let m = 0; m < M; m++) {
        for (let n = 0; n < N; n++) {
          let exact = 0;
          for (let k = 0; k < K; k++) exact += x[m * K + k]! * wf[n * K + k]!;
          expect([gpu[m * N + n], cpu[m * N + n]], `${type} y[${m}][${n}]`).toEqual([exact, exact]);
        }
      }
    }
  });

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

  it('tiny GGUF models (Q4_K, Q8_0, F32, and llama-quantize\'s mix with Q6_K and Q4_0) generate the same greedy tokens on webgpu as on cpu', async () => {
    const tmp = tempDir('apertus-gguf-webgpu-');
    try {
      const tok = fixtureTokenizer(), source = fixtureModel();
      const write = (type: 'Q4_K' | 'Q8_0' | 'F32'): string => {
        const file = path.join(tmp.dir, `m.${type}.gguf`);
        writeModelGguf(source, file, { type, tokenizer: { json: tok.tokenizerJson, config: tok.tokenizerConfig } });
        return file;
      };
      // As a Q4_K_M file mixes types: a Q6_K output matrix (random blocks: no Q6_K quantizer is
      // written) and a Q4_0 matrix in a Q8_0 file.
      const mixed = (): string => {
        const q6 = randomQ6K(new Rng(4), CONFIG.vocab_size * CONFIG.hidden_size, 1e-4);
        const down = source.params.get('model.layers.0.mlp.down_proj.weight')!.toFloat32();
        return rewrite(write('Q8_0'), path.join(tmp.dir, 'mixed.gguf'), {}, {}, {
          'output.weight': { type: 'Q6_K', data: q6 },
          'blk.0.ffn_down.weight': { type: 'Q4_0', data: quantize('Q4_0', down) },
        });
      };
      // Which kernels must have run: the quantized products in this package's, F32's in the webgpu GEMM.
      const cases = [
        { name: 'Q4_K', file: () => write('Q4_K'), kernels: ['gguf.q4_k|'] },
        { name: 'Q8_0', file: () => write('Q8_0'), kernels: ['gguf.q8_0|'] },
        { name: 'F32', file: () => write('F32'), kernels: ['gemm.NT|'] },
        { name: 'mixed', file: mixed, kernels: ['gguf.q8_0|', 'gguf.q6_k|', 'gguf.q4_0|'] },
      ];
      for (const c of cases) {
        const { model } = loadGguf(c.file(), { tokenizer: false });
        const prompt = [1, 17, 42, 300, 5];
        const options = { maxTokens: 6, temperature: 0, stopTokenIds: [] };
        const before = webgpuTransfers().calls;
        const onGpu = generate(model, prompt, options).tokens;
        for (const k of c.kernels) expect(Object.keys(webgpuBuiltKernels()).some((key) => key.startsWith(k)), `${c.name}: ${k}`).toBe(true);
        expect(webgpuTransfers().calls - before).toBeGreaterThan(0);
        await useDevice('cpu');
        const onCpu = generate(model, prompt, options).tokens;
        await useDevice('webgpu');
        expect(onGpu, c.name).toEqual(onCpu);
      }
    } finally {
      tmp.remove();
    }
  });
});
