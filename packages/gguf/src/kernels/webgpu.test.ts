// QuantMatrix on device `webgpu` (gpu.js kernels on the packed blocks), Q8_0, Q4_0, Q4_K and Q6_K,
// over random shapes (fast-check), M = 1 and M > 1 (the CPU's decode and prefill kernels), odd N:
// - against the exact value of what the kernel computes (Σ over blocks of d·dy·Σ iw·q8, minus
//   dmin·dy·Σ m·q8 for Q4_K, from the quantized activations and the weights' integers), within
//   the first-order float32 error of the kernel's own operations as `sumErrorBound` in
//   @apertus/tensor's gpu.js tests derives it (the roundings in each block term, each addition to
//   the accumulator after the first: u·|exact partial sum|; u = 2^-24), × 2. The integer block
//   sums are exact, so only the scaling and the block sums round.
// - against the same matrix on `cpu` (the WebAssembly kernels; for Q4_0, dequantized rows in the
//   float32 GEMM), within that bound plus one for the CPU kernels that holds for any order and
//   lane split of their float32 sums: a sum of T terms, each a product with r roundings, is
//   within (T − 1 + r)·u·Σ|term|, with Σ|term| ≤ Σ_k |x_k|·(|a_k| + |c_k|) for w = a − c split as
//   a kernel may multiply it; T: 4 lane terms per block of 32 (Q8_0), 32 per super-block (Q4_K,
//   Q6_K), K products (Q4_0); × 2. (Observed: up to ~25 % of the first bound, a few % of the second.)
// - with unit scales and integer activations every float32 operation is exact: both devices give
//   the integer product bit for bit;
// - one kernel launch per product, built in `webgpu` (no silent CPU path), the weights uploaded once;
// - tiny GGUF models generate the same greedy tokens on both devices.
// Runs on SwiftShader without a GPU; a missing driver or adapter fails, it never skips.
import path from 'node:path';
import { generate } from '@apertus/model';
import { Rng, SWIFTSHADER_ICD, useDevice } from '@apertus/tensor';
import { webgpuBuiltKernels, webgpuTransfers } from '@apertus/tensor/gpujs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeModelGguf } from '../convert';
import { CONFIG, fixtureModel, fixtureTokenizer, randomQ6K, randomWeights, rewrite, tempDir } from '../fixture.test-helper';
import { loadGguf } from '../open';
import { quantizeActivationsQ8_0, quantizeActivationsQ8_K, roundActivations } from '../quant/activations';
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
 * A stored matrix as the integers and scales the kernels multiply: per weight iw = sc·q (the
 * signed quant times the integer sub-block scale, 1 for Q8_0/Q4_0) and im (Q4_K's 6-bit min, else
 * 0); per block d and dmin (so w = d·iw − dmin·im); per weight `mag` = |a| + |c| of w = a − c split
 * as a CPU kernel may multiply it (Q4_K d·sc·q and dmin·m; Q6_K d·sc·u and 32·d·sc with the
 * unsigned quant u = q + 32).
 */
interface Decoded { iw: Int32Array; im: Int32Array; d: Float64Array; dmin: Float64Array; mag: Float64Array }

function decodeWeights(type: Quant, bytes: Uint8Array, n: number): Decoded {
  const t = GGML_TYPES[type], nb = n / t.blockSize, q6 = new Uint8Array(QK_K);
  const r: Decoded = { iw: new Int32Array(n), im: new Int32Array(n), d: new Float64Array(nb), dmin: new Float64Array(nb), mag: new Float64Array(n) };
  for (let b = 0; b < nb; b++) {
    const at = b * t.typeSize, y = b * t.blockSize, f16 = (o: number) => f16BitsToF32(bytes[at + o]! | (bytes[at + o + 1]! << 8));
    if (type === 'Q8_0') {
      r.d[b] = f16(0);
      for (let j = 0; j < 32; j++) r.iw[y + j] = (bytes[at + 2 + j]! << 24) >> 24;
    } else if (type === 'Q4_0') {
      r.d[b] = f16(0);
      for (let j = 0; j < 16; j++) { r.iw[y + j] = (bytes[at + 2 + j]! & 15) - 8; r.iw[y + j + 16] = (bytes[at + 2 + j]! >> 4) - 8; }
    } else if (type === 'Q4_K') {
      r.d[b] = f16(0);
      r.dmin[b] = f16(2);
      for (let s = 0; s < 8; s++) {
        const [sc, m] = scaleMinK4(bytes, at + 4, s);
        for (let l = 0; l < 32; l++) {
          const byte = bytes[at + 16 + 32 * (s >> 1) + l]!;
          r.iw[y + 32 * s + l] = sc * (s & 1 ? byte >> 4 : byte & 15);
          r.im[y + 32 * s + l] = m;
        }
      }
    } else {
      r.d[b] = f16(208);
      quantsQ6_K(bytes, at, q6);
      for (let i = 0; i < QK_K; i++) r.iw[y + i] = ((bytes[at + 192 + (i >> 4)]! << 24) >> 24) * (q6[i]! - 32);
    }
    for (let k = y; k < y + t.blockSize; k++) {
      const sc = type === 'Q6_K' ? (bytes[at + 192 + ((k - y) >> 4)]! << 24) >> 24 : 0;
      r.mag[k] = type === 'Q6_K' ? Math.abs(r.d[b]! * sc) * (q6[k - y]! + 32) : Math.abs(r.d[b]! * r.iw[k]!) + Math.abs(r.dmin[b]! * r.im[k]!);
    }
  }
  return r;
}

/** Roundings per block term of the webgpu kernels: fl(d·dy) and the product (Q4_K/Q6_K: and the super-block sum's one rounding); Q4_K's min term 2. */
const GPU_ROUNDINGS: Readonly<Record<Quant, [number, number]>> = { Q8_0: [2, 0], Q4_0: [2, 0], Q4_K: [3, 2], Q6_K: [3, 0] };

/**
 * The exact value of what the webgpu kernel computes — Σ_b (d·dy·Σ iw·q8 − dmin·dy·Σ im·q8) over
 * the blocks of the quantized activations — and the first-order bound (× 2) on the kernel's float32
 * error, as `sumErrorBound` derives it: the roundings in each block term, the subtraction of Q4_K's
 * two terms, and each addition to the accumulator after the first (the exact partial sums).
 */
function gpuReference(type: Quant, w: Decoded, x: Float32Array, M: number, N: number, K: number): { exact: Float64Array; bound: Float64Array } {
  const per = GGML_TYPES[type].blockSize, kq = type === 'Q4_K' || type === 'Q6_K';
  const a = kq ? quantizeActivationsQ8_K(x.subarray(0, M * K)) : quantizeActivationsQ8_0(x.subarray(0, M * K));
  const [rA, rC] = GPU_ROUNDINGS[type], exact = new Float64Array(M * N), bound = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let acc = 0, e = 0;
      for (let b = 0; b < K / per; b++) {
        let s = 0, mins = 0;
        for (let k = b * per; k < (b + 1) * per; k++) { s += w.iw[n * K + k]! * a.q[m * K + k]!; mins += w.im[n * K + k]! * a.q[m * K + k]!; }
        const wb = (n * K) / per + b, dy = a.d[m * (K / per) + b]!, A = w.d[wb]! * dy * s, C = w.dmin[wb]! * dy * mins;
        acc += A - C;
        e += rA * Math.abs(A) + rC * Math.abs(C) + (type === 'Q4_K' ? Math.abs(A - C) : 0) + (b > 0 ? Math.abs(acc) : 0);
      }
      exact[m * N + n] = acc;
      bound[m * N + n] = 2 * U * e;
    }
  }
  return { exact, bound };
}

/**
 * A bound on the CPU kernels' float32 error that holds for any order and lane split of their
 * sums (see the file comment): up to 4 lane terms per block of 32 (Q8_0), 32 per super-block
 * (Q4_K, Q6_K) or K products (Q4_0's GEMM), 3 roundings each, over Σ_k |x_k|·mag_k; × 2.
 */
function cpuBound(type: Quant, w: Decoded, x: Float32Array, M: number, N: number, K: number): Float64Array {
  const nb = K / GGML_TYPES[type].blockSize, xr = roundActivations(GGML_TYPES[type], x);
  const r = { Q8_0: 4 * nb + 2, Q4_0: K, Q4_K: 32 * nb + 2, Q6_K: 32 * nb + 2 }[type];
  const out = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += Math.abs(xr[m * K + k]!) * w.mag[n * K + k]!;
      out[m * N + n] = 2 * r * U * s;
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
    it(`${type}: within derived float32 bounds of the exact block sums and of the cpu kernels (random shapes, M = 1 and M > 1)`, async () => {
      const per = GGML_TYPES[type].blockSize;
      let gpuCalls = 0, worstExact = 0, worstCpu = 0;
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
          const decoded = decodeWeights(type, bytes, N * K), ref = gpuReference(type, decoded, x, M, N, K), cb = cpuBound(type, decoded, x, M, N, K);
          const what = `${type} [${M}, ${K}]·[${N}, ${K}]ᵀ output`;
          for (let i = 0; i < M * N; i++) {
            const dExact = Math.abs(gpu[i]! - ref.exact[i]!), dCpu = Math.abs(gpu[i]! - cpu[i]!), bCpu = ref.bound[i]! + cb[i]!;
            if (!(dExact <= ref.bound[i]!)) expect.fail(`${what} ${i}: webgpu ${gpu[i]}, exact ${ref.exact[i]} (|diff| ${dExact} > bound ${ref.bound[i]})`);
            if (!(dCpu <= bCpu)) expect.fail(`${what} ${i}: webgpu ${gpu[i]}, cpu ${cpu[i]} (|diff| ${dCpu} > bound ${bCpu})`);
            if (ref.bound[i]! > 0) worstExact = Math.max(worstExact, dExact / ref.bound[i]!);
            if (bCpu > 0) worstCpu = Math.max(worstCpu, dCpu / bCpu);
          }
        }), { numRuns: 12 });
      // One kernel launch per product on the GPU: the products did not run the CPU kernels.
      expect(gpuCalls).toBe(12);
      expect(Object.keys(webgpuBuiltKernels()).some((k) => k.startsWith(`gguf.${type.toLowerCase()}|`))).toBe(true);
      console.log(`${type}: worst |webgpu − exact| / bound ${worstExact.toFixed(3)}, |webgpu − cpu| / bound ${worstCpu.toFixed(3)}`);
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
    // Forty matrices (more than a small model has) stay on the device: the second round of
    // products uploads only the activations.
    const many = Array.from({ length: 40 }, () => new QuantMatrix(GGML_TYPES.Q4_K, [N, K], quantize('Q4_K', Float32Array.from({ length: N * K }, () => rng.normal()))));
    for (const m of many) product(m, x, 2);
    const round2 = webgpuTransfers();
    for (const m of many) product(m, x, 2);
    expect(webgpuTransfers().uploads - round2.uploads).toBe(40 * 3);
    // F32 and BF16 matrices: one webgpu GEMM launch per product, even for one row (where the cpu
    // device uses this package's matrix-vector kernels).
    for (const type of ['F32', 'BF16'] as const) {
      const wf = new QuantMatrix(GGML_TYPES[type], [N, K], quantize(type, Float32Array.from({ length: N * K }, () => rng.normal())));
      const calls = webgpuTransfers().calls;
      const y = product(wf, x, 1);
      expect(webgpuTransfers().calls - calls, type).toBe(1);
      expect(webgpuBuiltKernels()[`gemm.NT|1,${N},${K}`]).toBe('webgpu');
      expect(y.every(Number.isFinite)).toBe(true);
    }
    for (const [key, mode] of Object.entries(webgpuBuiltKernels())) expect(mode, key).toBe('webgpu');
  });

  it('tiny GGUF models (Q4_K, Q8_0, F32, BF16, and llama-quantize\'s mix with Q6_K and Q4_0) generate the same greedy tokens on webgpu as on cpu', async () => {
    const tmp = tempDir('apertus-gguf-webgpu-');
    try {
      const tok = fixtureTokenizer(), source = fixtureModel();
      const write = (type: 'Q4_K' | 'Q8_0' | 'F32' | 'BF16'): string => {
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
        { name: 'BF16', file: () => write('BF16'), kernels: ['gemm.NT|'] },
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
