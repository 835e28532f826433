// Stored GGUF weights (`weightTensor`) on device `webgpu` (@apertus/tensor's WGSL products on the stored blocks), Q8_0,
// Q4_0, Q4_K and Q6_K, over random shapes (fast-check), M = 1 and 3 (the device's decode kernels:
// the input quantized on the device, exact integer dots per block) and M = 12 (prefill: the
// quantized input as floats and the dequantized rows in the tiled GEMM), odd N:
// - against the exact value of the quantized product both devices compute (Σ over blocks of
//   d·dy·Σ iw·q8, minus dmin·dy·Σ m·q8 for Q4_K, from the quantized activations and the weights'
//   integers), each within a bound that holds for any order and lane split of its float32 sums:
//   a sum of T terms, each with r roundings, is within (T − 1 + r)·u·Σ|term|, Σ|term| ≤
//   Σ_k |x_k|·(|a_k| + |c_k|) for w = a − c split as a kernel may multiply it; u = 2^-24, × 2.
//   webgpu: T ≤ K terms (the GEMM's K products, or one per block at decode), r ≤ 4 (the dequantized
//   weight's roundings and the product); cpu: 4 lane terms per block of 32 (Q8_0), 32 per
//   super-block (Q4_K, Q6_K) or K products (Q4_0's GEMM), 3 roundings each.
// - with unit scales and integer activations every float32 operation is exact: both devices give
//   the integer product bit for bit, at decode and at prefill;
// - the weights go up once and stay: later products upload only their activations;
// - tiny GGUF models generate the same greedy tokens on both devices, reading back one token id
//   array per step.
// Runs on SwiftShader without a GPU; a missing driver or adapter fails, it never skips.
import path from 'node:path';
import { generate } from '@apertus/model';
import { countWebgpu, f16BitsToF32, linear, Rng, scaleMinK4, SWIFTSHADER_ICD, Tensor, useDevice, weightTensor, type WeightDType } from '@apertus/tensor';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeModelGguf } from './convert';
import { CONFIG, fixtureModel, fixtureTokenizer, randomQ6K, randomWeights, rewrite, tempDir } from './fixture.test-helper';
import { loadGguf } from './open';
import { quantizeActivationsQ8_0, quantizeActivationsQ8_K, quantsQ6_K, roundActivations } from './activations.test-helper';
import { dequantize, quantize } from './quant/index';
import { GGML_TYPES, QK_K } from './types';

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

/**
 * The exact value of the quantized product — Σ_b (d·dy·Σ iw·q8 − dmin·dy·Σ im·q8) over the blocks
 * of the quantized activations (Q8_0 for Q8_0/Q4_0, Q8_K for Q4_K/Q6_K) — and the webgpu kernels'
 * bound: (K + 4)·u·Σ_k |x_k|·mag_k, × 2 (see the file comment).
 */
function exactProduct(type: Quant, w: Decoded, x: Float32Array, M: number, N: number, K: number): { exact: Float64Array; bound: Float64Array } {
  const per = GGML_TYPES[type].blockSize, kq = type === 'Q4_K' || type === 'Q6_K';
  const a = kq ? quantizeActivationsQ8_K(x.subarray(0, M * K)) : quantizeActivationsQ8_0(x.subarray(0, M * K));
  const xr = roundActivations(GGML_TYPES[type], x), exact = new Float64Array(M * N), bound = new Float64Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let acc = 0, mag = 0;
      for (let b = 0; b < K / per; b++) {
        let s = 0, mins = 0;
        for (let k = b * per; k < (b + 1) * per; k++) { s += w.iw[n * K + k]! * a.q[m * K + k]!; mins += w.im[n * K + k]! * a.q[m * K + k]!; }
        const wb = (n * K) / per + b, dy = a.d[m * (K / per) + b]!;
        acc += w.d[wb]! * dy * s - w.dmin[wb]! * dy * mins;
      }
      for (let k = 0; k < K; k++) mag += Math.abs(xr[m * K + k]!) * w.mag[n * K + k]!;
      exact[m * N + n] = acc;
      bound[m * N + n] = 2 * (K + 4) * U * mag;
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

/** y = x·Wᵀ on the current device, read back to the host (the output's storage released at once, as a decode step releases it). */
function product(w: Tensor, x: Float32Array, M: number): Float32Array {
  const y = linear(Tensor.from(x.subarray(0, M * w.shape[1]!), [M, w.shape[1]!]), w);
  try {
    return y.toFloat32();
  } finally {
    y.dispose();
  }
}

/** A stored weight of GGUF type `t` over `bytes`. */
const stored = (t: { name: string }, shape: [number, number], bytes: Uint8Array): Tensor => weightTensor(t.name.toLowerCase() as WeightDType, shape, bytes);

beforeAll(async () => {
  // A missing driver or adapter throws here: the tests fail, they never skip.
  await useDevice('webgpu');
}, 120_000);
afterAll(async () => {
  await useDevice('cpu');
});

// SwiftShader compiles and runs the WGSL on the CPU: allow for a loaded machine.
describe('stored weights on device webgpu', { timeout: 240_000 }, () => {
  for (const type of ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'] as const) {
    it(`${type}: both devices within derived float32 bounds of the exact quantized product (random shapes, decode and prefill)`, async () => {
      const per = GGML_TYPES[type].blockSize;
      let dispatches = 0, worstGpu = 0, worstCpu = 0;
      await fc.assert(fc.asyncProperty(
        fc.integer({ min: 0, max: 3 }).map((h) => 2 * h + 1), fc.integer({ min: 1, max: GGML_TYPES[type].blockSize === 32 ? 6 : 2 }),
        fc.constantFrom(1, 1, 3, 12), fc.integer({ min: 1, max: 2 ** 30 }),
        async (N, kb, M, seed) => {
          const K = kb * per, rng = new Rng(seed);
          const bytes = randomWeights(type, rng, N, K);
          const x = Float32Array.from({ length: M * K }, () => rng.normal() * (1 + 3 * rng.uniform()));
          const w = stored(GGML_TYPES[type], [N, K], bytes);
          const { result: gpu, counters } = countWebgpu(() => product(w, x, M));
          dispatches += counters.dispatches;
          await useDevice('cpu');
          const cpu = product(w, x, M);
          await useDevice('webgpu');
          const decoded = decodeWeights(type, bytes, N * K), ref = exactProduct(type, decoded, x, M, N, K), cb = cpuBound(type, decoded, x, M, N, K);
          const what = `${type} [${M}, ${K}]·[${N}, ${K}]ᵀ output`;
          for (let i = 0; i < M * N; i++) {
            const dGpu = Math.abs(gpu[i]! - ref.exact[i]!), dCpu = Math.abs(cpu[i]! - ref.exact[i]!);
            if (!(dGpu <= ref.bound[i]!)) expect.fail(`${what} ${i}: webgpu ${gpu[i]}, exact ${ref.exact[i]} (|diff| ${dGpu} > bound ${ref.bound[i]})`);
            if (!(dCpu <= cb[i]!)) expect.fail(`${what} ${i}: cpu ${cpu[i]}, exact ${ref.exact[i]} (|diff| ${dCpu} > bound ${cb[i]})`);
            if (ref.bound[i]! > 0) worstGpu = Math.max(worstGpu, dGpu / ref.bound[i]!);
            if (cb[i]! > 0) worstCpu = Math.max(worstCpu, dCpu / cb[i]!);
          }
        }), { numRuns: 12 });
      // The products ran on the device (at least the input's quantization and the product each).
      expect(dispatches).toBeGreaterThanOrEqual(2 * 12);
      console.log(`${type}: worst |webgpu − exact| / bound ${worstGpu.toFixed(3)}, |cpu − exact| / bound ${worstCpu.toFixed(3)}`);
    });
  }

  it('with unit scales and integer activations (every float32 operation exact) equals the cpu kernels and the integer product bit for bit (decode and prefill)', async () => {
    // Weights: random quant and scale bytes, every f16 scale 1 (Q4_K's dmin too), −128 bytes
    // included. Activations: integers in [−3, 3] with one ±127 per 32, so each activation block's
    // scale is ±1 and its quants are ±x. Every sum stays below 2^24.
    const rng = new Rng(11), N = 5;
    for (const [type, M] of [['Q8_0', 1], ['Q4_0', 5], ['Q4_K', 1], ['Q4_K', 5], ['Q6_K', 1], ['Q6_K', 5], ['Q8_0', 5], ['Q8_0', 12], ['Q4_0', 12], ['Q4_K', 12], ['Q6_K', 12]] as const) {
      const t = GGML_TYPES[type], K = t.blockSize === 32 ? 128 : 256;
      const bytes = Uint8Array.from({ length: (N * K / t.blockSize) * t.typeSize }, () => Math.floor(rng.uniform() * 256));
      for (let o = 0; o < bytes.length; o += t.typeSize) for (const at of type === 'Q6_K' ? [208] : type === 'Q4_K' ? [0, 2] : [0]) { bytes[o + at] = 0x00; bytes[o + at + 1] = 0x3c; }
      const x = Float32Array.from({ length: M * K }, (_, i) => (i % 32 === 7 ? (rng.uniform() < 0.5 ? -127 : 127) : Math.floor(rng.uniform() * 7) - 3));
      const w = stored(t, [N, K], bytes), wf = dequantize(t, bytes, N * K);
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

  it('the weights go up once and stay on the device: later products upload only their activations', () => {
    const rng = new Rng(7), N = 3, K = QK_K;
    const bytes = quantize('Q4_K', Float32Array.from({ length: N * K }, () => rng.normal())), w = stored(GGML_TYPES.Q4_K, [N, K], bytes);
    const x = Float32Array.from({ length: 2 * K }, () => rng.normal());
    const refill = () => { for (let i = 0; i < x.length; i++) x[i] = rng.normal(); };
    const data = (c: { uploadBytes: number; uniformBytes: number }) => c.uploadBytes - c.uniformBytes;
    const first = countWebgpu(() => product(w, x, 2)).counters;
    expect(data(first)).toBe(bytes.byteLength + x.byteLength);
    // The same activations again: nothing goes up (a small host array is compared with what it uploaded).
    expect(data(countWebgpu(() => product(w, x, 2)).counters)).toBe(0);
    // New activations in the same array (as a decode loop refills its input): only they go up.
    refill();
    const second = countWebgpu(() => product(w, x, 2)).counters;
    expect(data(second)).toBe(x.byteLength);
    // The same shapes again: the kernel parameters and pipelines are the ones already there.
    expect([second.uniformBytes, second.pipelineBuilds, second.buffersCreated]).toEqual([0, 0, 0]);
    // One read per product: its output.
    expect([second.readbacks, second.readbackBytes]).toEqual([1, 4 * 2 * N]);
    // Forty matrices (more than a small model has) stay on the device: the second round of
    // products uploads only the new activations, once.
    const many = Array.from({ length: 40 }, () => stored(GGML_TYPES.Q4_K, [N, K], quantize('Q4_K', Float32Array.from({ length: N * K }, () => rng.normal()))));
    for (const m of many) product(m, x, 2);
    refill();
    const round2 = countWebgpu(() => { for (const m of many) product(m, x, 2); }).counters;
    expect(data(round2)).toBe(x.byteLength);
    // F32 and BF16 matrices: one matrix-vector kernel for one row.
    for (const type of ['F32', 'BF16'] as const) {
      const wf = stored(GGML_TYPES[type], [N, K], quantize(type, Float32Array.from({ length: N * K }, () => rng.normal())));
      const { result: y, counters } = countWebgpu(() => product(wf, x, 1));
      expect(counters.dispatches, type).toBe(1);
      expect(y.every(Number.isFinite)).toBe(true);
    }
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
      const cases = [
        { name: 'Q4_K', file: () => write('Q4_K') },
        { name: 'Q8_0', file: () => write('Q8_0') },
        { name: 'F32', file: () => write('F32') },
        { name: 'BF16', file: () => write('BF16') },
        { name: 'mixed', file: mixed },
      ];
      for (const c of cases) {
        const { model } = loadGguf(c.file(), { tokenizer: false });
        const prompt = [1, 17, 42, 300, 5];
        const options = { maxTokens: 6, temperature: 0, stopTokenIds: [] };
        const { result, counters } = countWebgpu(() => generate(model, prompt, options));
        const onGpu = result.tokens;
        // Each step (the prefill and 5 decode steps) reads back only its token id, chosen on the device.
        expect(onGpu).toHaveLength(6);
        expect([counters.readbacks, counters.readbackBytes], c.name).toEqual([6, 6 * 4]);
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
