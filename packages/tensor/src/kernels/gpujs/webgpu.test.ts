// Every gpu.js kernel in gpu.js's `webgpu` mode (WGSL compute shaders through Dawn) against the JS
// reference kernels. Without a GPU this runs on SwiftShader's Vulkan driver from Debian's
// `chromium` package; a missing driver fails the tests (with what to install), it never skips them.
import { GPU, type IGPUKernelSettings } from 'gpu.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kernelSet } from '../types';
import { f32ArrayToBf16 } from '../../dtype';
import type { AttentionArgs, AttentionBackwardArgs, LinearCrossEntropyArgs } from '../types';
import { type WebgpuKernelSet, createWebgpuKernels } from './index';
import { expectAllRanIn, expectClose, randomF32, randomI32, useSwiftshaderUnlessDriverNamed } from './testing';

const jsKernels = kernelSet('reference');

useSwiftshaderUnlessDriverNamed();

/** gpu.js's `WebGPUBufferResult` (not in its type declarations). */
interface GpuBuffer {
  readonly type: string;
  toArray(): Promise<Float32Array>;
  delete(): void;
}

// SwiftShader compiles and runs every WGSL kernel on the CPU: allow for a loaded CI machine.
describe('gpu.js kernels in webgpu mode', { timeout: 240_000 }, () => {
  let ks: WebgpuKernelSet;
  beforeAll(async () => {
    ks = await createWebgpuKernels();
  }, 120_000);
  afterAll(async () => {
    await ks?.dispose();
  });

  it('runs on a real WebGPU adapter', () => {
    expect(ks.mode).toBe('webgpu');
    expect(ks.adapter.vendor + ks.adapter.architecture).not.toBe('');
  });

  it('unary ops and their backward passes', async () => {
    const x = randomF32(300, 1, 0.1, 3);
    const gy = randomF32(300, 2);
    for (const op of ['exp', 'log', 'neg', 'sqrt', 'rsqrt', 'tanh', 'sigmoid', 'silu', 'softplus', 'square', 'abs', 'relu', 'expm1', 'log1p'] as const) {
      const y = new Float32Array(300);
      const y0 = new Float32Array(300);
      await ks.unary(op, x, y);
      jsKernels.unary(op, x, y0);
      expectClose(y, y0, op, 2e-6, 1e-6);
      const gx = new Float32Array(300);
      const gx0 = new Float32Array(300);
      await ks.unaryBackward(op, x, y0, gy, gx);
      jsKernels.unaryBackward(op, x, y0, gy, gx0);
      expectClose(gx, gx0, `${op} backward`, 1e-5, 1e-6);
    }
  });

  it('binary ops with broadcasting, including leading axes walked on the host', async () => {
    // out [2, 3, 4, 5] = a [2, 3, 4, 5] (op) b [1, 3, 1, 5]
    const shape = [2, 3, 4, 5];
    const a = randomF32(120, 3, 0.5, 2);
    const b = randomF32(15, 4, 0.5, 2);
    const aS = [60, 20, 5, 1];
    const bS = [0, 5, 0, 1];
    for (const op of ['add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'pow'] as const) {
      const out = new Float32Array(120);
      const out0 = new Float32Array(120);
      await ks.binary(op, a, aS, b, bS, shape, out);
      jsKernels.binary(op, a, aS, b, bS, shape, out0);
      expectClose(out, out0, op, 2e-6, 1e-7);
    }
  });

  it('sum and max/argmax over [outer, n, inner]', async () => {
    for (const [outer, n, inner] of [[3, 70, 1], [2, 9, 5]] as const) {
      const x = randomF32(outer * n * inner, outer + n);
      const s = new Float32Array(outer * inner);
      const s0 = new Float32Array(outer * inner);
      await ks.sum(x, outer, n, inner, s);
      jsKernels.sum(x, outer, n, inner, s0);
      expectClose(s, s0, 'sum', 1e-5, 1e-5);
      const m = new Float32Array(outer * inner);
      const m0 = new Float32Array(outer * inner);
      const arg = new Int32Array(outer * inner);
      const arg0 = new Int32Array(outer * inner);
      await ks.max(x, outer, n, inner, m, arg);
      jsKernels.max(x, outer, n, inner, m0, arg0);
      expect(Array.from(m)).toEqual(Array.from(m0));
      expect(Array.from(arg)).toEqual(Array.from(arg0));
    }
  });

  it('softmax, log-softmax and their backward passes over a vocabulary of 131072', async () => {
    for (const [rows, n] of [[3, 37], [2, 131072]] as const) {
      const x = randomF32(rows * n, n, -8, 8);
      const gy = randomF32(rows * n, n + 1);
      const y = new Float32Array(rows * n);
      const y0 = new Float32Array(rows * n);
      await ks.softmax(x, rows, n, y);
      jsKernels.softmax(x, rows, n, y0);
      expectClose(y, y0, `softmax n=${n}`, 1e-4, 1e-10);
      const gx = new Float32Array(rows * n);
      const gx0 = new Float32Array(rows * n);
      await ks.softmaxBackward(y0, gy, rows, n, gx);
      jsKernels.softmaxBackward(y0, gy, rows, n, gx0);
      expectClose(gx, gx0, `softmaxBackward n=${n}`, 1e-3, 1e-9);
      await ks.logSoftmax(x, rows, n, y);
      jsKernels.logSoftmax(x, rows, n, y0);
      expectClose(y, y0, `logSoftmax n=${n}`, 1e-5, 1e-5);
      await ks.logSoftmaxBackward(y0, gy, rows, n, gx);
      jsKernels.logSoftmaxBackward(y0, gy, rows, n, gx0);
      expectClose(gx, gx0, `logSoftmaxBackward n=${n}`, 1e-4, 1e-4);
    }
  });

  it('RMSNorm forward and backward', async () => {
    const rows = 5;
    const n = 48;
    const x = randomF32(rows * n, 5);
    const w = randomF32(n, 6);
    const out = new Float32Array(rows * n);
    const out0 = new Float32Array(rows * n);
    const rstd = new Float32Array(rows);
    const rstd0 = new Float32Array(rows);
    await ks.rmsnorm(x, w, rows, n, 1e-5, out, rstd);
    jsKernels.rmsnorm(x, w, rows, n, 1e-5, out0, rstd0);
    expectClose(rstd, rstd0, 'rstd', 1e-5, 0);
    expectClose(out, out0, 'rmsnorm', 1e-5, 1e-6);
    const gy = randomF32(rows * n, 7);
    const gx = new Float32Array(rows * n);
    const gx0 = new Float32Array(rows * n);
    const gw = randomF32(n, 8);
    const gw0 = gw.slice();
    await ks.rmsnormBackward(x, w, rstd0, gy, rows, n, gx, gw);
    jsKernels.rmsnormBackward(x, w, rstd0, gy, rows, n, gx0, gw0);
    expectClose(gx, gx0, 'rmsnorm gx', 1e-4, 1e-5);
    expectClose(gw, gw0, 'rmsnorm gw', 1e-5, 1e-5);
  });

  it('RoPE forward and inverse at positions up to 131071', async () => {
    const N = 4;
    const heads = 3;
    const d = 16;
    const x = randomF32(N * heads * d, 9);
    const positions = Int32Array.from([0, 7, 4096, 131071]);
    const invFreq = Float32Array.from({ length: d / 2 }, (_, i) => 500000 ** (-(2 * i) / d));
    for (const inverse of [false, true]) {
      const out = new Float32Array(x.length);
      const out0 = new Float32Array(x.length);
      await ks.rope(x, N, heads, d, positions, invFreq, inverse, out);
      jsKernels.rope(x, N, heads, d, positions, invFreq, inverse, out0);
      expectClose(out, out0, `rope inverse=${inverse}`, 0, 1e-6);
    }
  });

  it('embedding gather and scatter-add backward with repeated ids', async () => {
    const V = 11;
    const H = 6;
    const N = 9;
    const table = randomF32(V * H, 10);
    const ids = Int32Array.from([3, 0, 3, 10, 5, 3, 0, 7, 10]);
    const out = new Float32Array(N * H);
    const out0 = new Float32Array(N * H);
    await ks.embedding(ids, table, H, out);
    jsKernels.embedding(ids, table, H, out0);
    expect(Array.from(out)).toEqual(Array.from(out0));
    const gy = randomF32(N * H, 11);
    const gt = randomF32(V * H, 12);
    const gt0 = gt.slice();
    await ks.embeddingBackward(ids, gy, H, gt);
    jsKernels.embeddingBackward(ids, gy, H, gt0);
    expectClose(gt, gt0, 'gtable', 1e-6, 1e-6);
  });

  it('causal GQA attention with a KV-cache offset and document masks, forward and backward', async () => {
    const B = 2, T = 3, S = 5, nkv = 2, nh = 4, d = 8;
    const docK = Int32Array.from([0, 0, 1, 1, 1, 0, 0, 0, 0, 2]);
    const a: AttentionArgs = {
      B, T, S, nh, nkv, d,
      q: randomF32(B * T * nh * d, 13), k: randomF32(B * S * nkv * d, 14), v: randomF32(B * S * nkv * d, 15),
      scale: 1 / Math.sqrt(d), qOffset: S - T,
      docQ: Int32Array.from([1, 1, 1, 0, 0, 2]), docK,
      out: new Float32Array(B * T * nh * d), lse: new Float32Array(B * nh * T),
    };
    const a0 = { ...a, out: new Float32Array(a.out.length), lse: new Float32Array(a.lse.length) };
    await ks.attention(a);
    jsKernels.attention(a0);
    expectClose(a.lse, a0.lse, 'lse', 1e-5, 1e-5);
    expectClose(a.out, a0.out, 'attention out', 1e-4, 1e-5);
    const g: AttentionBackwardArgs = {
      ...a0, gout: randomF32(a.out.length, 16),
      gq: new Float32Array(a.q.length), gk: new Float32Array(a.k.length), gv: new Float32Array(a.v.length),
    };
    const g0 = { ...g, gq: new Float32Array(a.q.length), gk: new Float32Array(a.k.length), gv: new Float32Array(a.v.length) };
    await ks.attentionBackward(g);
    jsKernels.attentionBackward(g0);
    expectClose(g.gq, g0.gq, 'gq', 1e-4, 1e-5);
    expectClose(g.gk, g0.gk, 'gk', 1e-4, 1e-5);
    expectClose(g.gv, g0.gv, 'gv', 1e-4, 1e-5);
  });

  it('cross-entropy forward and backward over a vocabulary of 131072, with row weights', async () => {
    for (const V of [50, 131072]) {
      const rows = 2;
      const logits = randomF32(rows * V, V, -6, 6);
      const targets = randomI32(rows, V + 1, 0, V);
      const weights = Float32Array.from([1, 0.25]);
      const loss = new Float32Array(rows);
      const loss0 = new Float32Array(rows);
      const lse = new Float32Array(rows);
      const lse0 = new Float32Array(rows);
      await ks.crossEntropy(logits, targets, weights, rows, V, loss, lse);
      jsKernels.crossEntropy(logits, targets, weights, rows, V, loss0, lse0);
      expectClose(lse, lse0, `lse V=${V}`, 1e-6, 1e-6);
      expectClose(loss, loss0, `loss V=${V}`, 1e-5, 1e-5);
      const g = Float32Array.from([0.5, 2]);
      const gl = new Float32Array(rows * V);
      const gl0 = new Float32Array(rows * V);
      await ks.crossEntropyBackward(logits, targets, weights, lse0, g, rows, V, gl);
      jsKernels.crossEntropyBackward(logits, targets, weights, lse0, g, rows, V, gl0);
      expectClose(gl, gl0, `glogits V=${V}`, 1e-4, 1e-9);
    }
  });

  it('GEMM in all four transpose layouts with K = 4096, alpha and beta', async () => {
    const M = 3, N = 5, K = 4096;
    const A = randomF32(M * K, 17);
    const Bm = randomF32(K * N, 18);
    for (const [transA, transB] of [[false, false], [true, false], [false, true], [true, true]] as const) {
      const C = randomF32(M * N, 19);
      const want = new Float64Array(M * N);
      for (let i = 0; i < M; i++) {
        for (let j = 0; j < N; j++) {
          let s = 0;
          for (let p = 0; p < K; p++) s += A[transA ? p * M + i : i * K + p]! * Bm[transB ? j * K + p : p * N + j]!;
          want[i * N + j] = 0.5 * s + 2 * C[i * N + j]!;
        }
      }
      await ks.gemm({ transA, transB, M, N, K, A, B: Bm, C, alpha: 0.5, beta: 2 });
      // f32 accumulation of 4096 terms of size ~1 against a float64 sum.
      expectClose(C, want, `gemm ${transA ? 'T' : 'N'}${transB ? 'T' : 'N'}`, 1e-4, 2e-4);
    }
  });

  it('the LM-head loss (linearCrossEntropy) in chunks, with masked rows, f32 and bf16 heads, against the fused JS kernel', async () => {
    const rows = 5, V = 300, H = 24;
    const h = randomF32(rows * H, 21);
    const w = randomF32(V * H, 22);
    // Row 2 is masked (weight 0) with an out-of-range target, which must never be read.
    const targets = Int32Array.from([7, 299, 100000, 0, 150]);
    const weights = Float32Array.from([1, 0.5, 0, 2, 1]);
    const run = async (k: { linearCrossEntropy?: (a: LinearCrossEntropyArgs) => unknown }, head: Float32Array | Uint16Array, grads: boolean) => {
      const a: LinearCrossEntropyArgs = {
        rows, V, H, h, w: head, targets, weights, chunkRows: 2, sums: new Float64Array(2),
        dh: grads ? new Float32Array(rows * H) : null, dw: grads ? new Float32Array(V * H).fill(Number.NaN) : null,
      };
      await k.linearCrossEntropy!(a);
      return a;
    };
    const got = await run(ks, w, true);
    const want = await run(jsKernels, w, true);
    expect(got.sums[1]).toBe(want.sums[1]);
    expect(Math.abs(got.sums[0]! - want.sums[0]!) / want.sums[0]!).toBeLessThan(1e-6);
    expectClose(got.dh!, want.dh!, 'dh', 1e-4, 1e-6);
    expectClose(got.dw!, want.dw!, 'dw', 1e-4, 1e-6);
    const wb = f32ArrayToBf16(w);
    const gotB = await run(ks, wb, false);
    const wantB = await run(jsKernels, wb, false);
    expect(Math.abs(gotB.sums[0]! - wantB.sums[0]!) / wantB.sums[0]!).toBeLessThan(1e-6);
  });

  it('gpu.js pipeline kernels keep outputs on the GPU and bind them as the next kernel\'s input (the basis for device-resident tensors)', async () => {
    const gpu = new GPU({ mode: 'webgpu' });
    try {
      const settings: IGPUKernelSettings = { output: [1000], pipeline: true, immutable: true, argumentTypes: { a: 'Array' } };
      const double = gpu.createKernel('function (a) { return 2 * a[this.thread.x]; }', settings);
      const addOne = gpu.createKernel('function (a) { return a[this.thread.x] + 1; }', settings);
      const x = Float32Array.from({ length: 1000 }, (_, i) => i - 500);
      const y = await (double as unknown as (a: Float32Array) => Promise<GpuBuffer>)(x);
      expect(y.type).toBe('WebGPUBuffer'); // a GPU buffer handle, not data
      const z = await (addOne as unknown as (a: GpuBuffer) => Promise<GpuBuffer>)(y);
      expect(z.type).toBe('WebGPUBuffer');
      expect(Array.from(await z.toArray())).toEqual(Array.from(x, (v) => 2 * v + 1));
      y.delete();
      z.delete();
    } finally {
      gpu.destroy();
    }
  });

  it('every kernel built ran in webgpu mode (no silent fallback)', () => {
    expectAllRanIn(ks, 'webgpu', 30);
  });
});
