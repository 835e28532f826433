// The tensor ops (forward and backward through autograd) on backend 'webgpu': gpu.js webgpu kernels
// run by a worker thread, on SwiftShader here. Results are compared with the same graph on 'js'.
import { afterAll, describe, expect, test } from 'vitest';
import { backward } from './autograd';
import { kernelInfo, resetKernels, selectKernels } from './registry';
import { useDevice } from './device';
import { webgpuTransfers } from './gpujs-backend';
import { GpujsBackendError, createWebgpuSyncKernels } from './kernels/gpujs/index';
import { randomF32, useSwiftshaderUnlessDriverNamed } from './kernels/gpujs/testing';
import { TENSOR_KERNELS, type AttentionArgs, type AttentionBackwardArgs } from './kernels/types';
import { attention, pagedAttention } from './ops/attention';
import { crossEntropy } from './ops/cross-entropy';
import { add, exp, mul, silu } from './ops/elementwise';
import { embedding } from './ops/embedding';
import { linearCrossEntropy } from './ops/linear-cross-entropy';
import { linear, matmul } from './ops/matmul';
import { max, sum } from './ops/reduce';
import { rmsnorm } from './ops/rmsnorm';
import { rope } from './ops/rope';
import { logSoftmax, softmax } from './ops/softmax';
import { narrow, reshape } from './ops/view';
import { Rng } from './random';
import { Tensor } from './tensor';
import { expectClose } from './ops/test-util';
import { kernelSet } from './kernels/types';

const jsKernels = kernelSet('reference');

useSwiftshaderUnlessDriverNamed();

afterAll(() => useDevice('cpu'));

/** A small decoder-like graph touching every registry op; returns the outputs and the input gradients. */
function graph(): Float32Array[] {
  const r = new Rng(3);
  const B = 1, T = 5, nh = 4, d = 8, V = 23, H = nh * d;
  const table = Tensor.randn([V, H], r).requireGrad();
  const w = Tensor.randn([H], r).requireGrad();
  const ids = Tensor.ints([3, 7, 3, 22, 0]);
  const x = rmsnorm(embedding(ids, table), w, 1e-5); // [T, H]
  const invFreq = Float32Array.from({ length: d / 2 }, (_, i) => 10000 ** (-(2 * i) / d));
  const pos = Tensor.ints([0, 1, 2, 3, 4]);
  const q = rope(reshape(x, [T, nh, d]), pos, invFreq);
  const kv = reshape(x, [T, nh, d]);
  const k = rope(kv, pos, invFreq);
  const a = attention(reshape(q, [B, T, nh, d]), reshape(k, [B, T, nh, d]), reshape(kv, [B, T, nh, d]));
  // The last two queries decoding over the same keys and values held in pages of 2 tokens.
  const pages = [0, 2, 4].map((s) => {
    const blk = new Float32Array(4 * H), n = Math.min(2, T - s);
    blk.set(k.data.subarray(s * H, (s + n) * H));
    blk.set(kv.data.subarray(s * H, (s + n) * H), 2 * H);
    return blk;
  });
  const paged = pagedAttention(narrow(reshape(q, [B, T, nh, d]), 1, 3, 2), { blocks: pages, blockSize: 2, keys: 0, values: 2 * H, heads: nh, length: T }, { qOffset: 3 });
  const h = add(silu(reshape(a, [T, H])), mul(x, exp(x)));
  const logits = reshape(h, [T, H]); // H = 32 classes
  const head = Tensor.randn([V, H], r).requireGrad();
  const lm = linearCrossEntropy(matmul(h, Tensor.randn([H, H], r)), head, Tensor.ints([1, 0, 22, -100, 9]), { chunkRows: 2 });
  const loss = add(add(crossEntropy(logits, Tensor.ints([1, 0, 31, 5, 9])), sum(mul(softmax(logits), logSoftmax(logits)))), lm);
  backward(loss);
  return [loss.data, a.data, paged.data, max(logits, 1).data, table.grad!.data, w.grad!.data, head.grad!.data];
}

describe('the tensor ops on backend webgpu', () => {
  test('every registry op with a gpu.js kernel moves to webgpu, and forward and backward match the js backend', async () => {
    selectKernels('reference');
    const want = graph().map((a) => Float32Array.from(a));
    const info = await useDevice('webgpu');
    expect(info.adapter).toMatch(/\S/);
    // Every op of the registry moves, GEMM and the LM-head loss included.
    for (const op of Object.keys(TENSOR_KERNELS)) expect(kernelInfo(op), op).toEqual({ device: 'webgpu', impl: 'gpujs' });
    const got = graph();
    got.forEach((g, i) => expectClose(g, want[i]!, 1e-4));

    // Softmax over [2, 5] is two kernels, the row statistics and the apply: x goes up once (the
    // apply binds the same buffer), the statistics stay on the GPU, and so does y until it is read.
    const before = webgpuTransfers();
    const y = softmax(Tensor.from([[1, 2, 3, 4, 5], [0, -1, 2, 1, 0]]));
    const after = webgpuTransfers();
    expect(after.calls - before.calls).toBe(2);
    expect([after.uploads - before.uploads, after.uploadBytes - before.uploadBytes]).toEqual([1, 40]);
    expect([after.readbacks - before.readbacks, after.readbackBytes - before.readbackBytes]).toEqual([0, 0]);
    expect(y.data[4]).toBeCloseTo(Math.exp(4) / [0, 1, 2, 3, 4].reduce((s, k) => s + Math.exp(k), 0), 6);
    const read = webgpuTransfers();
    expect([read.readbacks - after.readbacks, read.readbackBytes - after.readbackBytes]).toEqual([1, 40]);
  }, 300_000);

  test('tensors stay on the GPU across ops, forward and backward: only what the host reads comes back, when it reads it', async () => {
    /** Embedding, RMSNorm, a SiLU MLP to the logits, cross-entropy; ids repeat (5 distinct of 6). */
    const block = () => {
      const r = new Rng(5);
      const V = 19, H = 16;
      const table = Tensor.randn([V, H], r).requireGrad();
      const g = Tensor.randn([H], r, 0.1, 1).requireGrad();
      const w1 = Tensor.randn([2 * H, H], r, 0.3).requireGrad();
      const w2 = Tensor.randn([V, 2 * H], r, 0.3).requireGrad();
      const x = rmsnorm(embedding(Tensor.ints([3, 1, 4, 1, 5, 9]), table), g, 1e-5);
      const loss = crossEntropy(linear(silu(linear(x, w1)), w2), Tensor.ints([1, 4, 1, 5, 9, 2]));
      backward(loss);
      return { loss, params: [table, g, w1, w2] };
    };
    await useDevice('cpu');
    selectKernels('reference');
    const want = block();
    await useDevice('webgpu');
    const t0 = webgpuTransfers();
    const got = block();
    const t1 = webgpuTransfers();
    // One kernel output is needed on the host during the step: cross-entropy's per-row
    // [lse, loss] (6 rows), summed into the loss there. Every activation and every gradient (the
    // embedding's scatter-add included) stays on the GPU.
    expect([t1.readbacks - t0.readbacks, t1.readbackBytes - t0.readbackBytes]).toEqual([1, 4 * 6 * 2]);
    expect(got.loss.item()).toBeCloseTo(want.loss.item(), 5);
    // Reading a gradient is its readback.
    const sizes = [19 * 16, 16, 32 * 16, 19 * 32];
    got.params.forEach((p, i) => {
      const before = webgpuTransfers();
      // 32 terms at most per sum, values O(1): float32 against the js kernels' f64 sums ≲ 1e-5.
      expectClose(p.grad!.data, want.params[i]!.grad!.data, 1e-4);
      const after = webgpuTransfers();
      expect(after.readbackBytes - before.readbackBytes, p.toString()).toBe(4 * sizes[i]!);
    });
  }, 300_000);

  test('RoPE keeps its cos/sin table on the GPU while the positions stay the same, forward and backward', async () => {
    await useDevice('webgpu');
    const r = new Rng(9);
    const N = 6, heads = 2, d = 8;
    const invFreq = Float32Array.from({ length: d / 2 }, (_, i) => 10000 ** (-(2 * i) / d));
    const tableBytes = 4 * 2 * N * (d / 2);
    const run = (positions: number[]) => {
      const x = Tensor.randn([N, heads, d], r).requireGrad();
      const t0 = webgpuTransfers();
      const y = rope(x, Tensor.ints(positions), invFreq);
      backward(sum(y));
      const t1 = webgpuTransfers();
      return { uploads: t1.uploadBytes - t0.uploadBytes, x, y };
    };
    // x and the table (built once for the forward and the inverse rotation) go up on the first run.
    const xBytes = 4 * N * heads * d;
    const first = run([0, 1, 2, 3, 4, 5]);
    const again = run([0, 1, 2, 3, 4, 5]);
    const moved = run([7, 1, 2, 3, 4, 5]);
    expect(again.uploads).toBe(first.uploads - tableBytes);
    expect(moved.uploads).toBe(first.uploads);
    expect(first.uploads).toBeGreaterThanOrEqual(xBytes + tableBytes);
    // The rotation itself against the js backend.
    await useDevice('cpu');
    selectKernels('reference');
    const want = rope(moved.x, Tensor.ints([7, 1, 2, 3, 4, 5]), invFreq);
    await useDevice('webgpu');
    expectClose(moved.y.data, want.data, 1e-6);
  }, 300_000);

  test('within an op, kernel outputs that later kernels read stay on the GPU and each host array goes up once (attention)', async () => {
    const ks = await createWebgpuSyncKernels();
    try {
      const B = 1, T = 5, S = 5, nh = 4, nkv = 2, d = 8;
      const fwd = (): AttentionArgs => ({
        B, T, S, nh, nkv, d, q: randomF32(B * T * nh * d, 1), k: randomF32(B * S * nkv * d, 2), v: randomF32(B * S * nkv * d, 3),
        scale: d ** -0.5, qOffset: 0, out: new Float32Array(B * T * nh * d), lse: new Float32Array(B * nh * T),
      });
      const got = fwd(), want = fwd();
      const bytes = (...a: ArrayBufferView[]) => a.reduce((n, x) => n + x.byteLength, 0);
      const docsBytes = 4 * 2 * B * Math.max(T, S); // the document ids of queries and keys, one buffer
      let t0 = ks.transfers();
      ks.attention(got);
      let t1 = ks.transfers();
      jsKernels.attention(want);
      // Fixed inputs in [-2, 2]: each score sums d = 8 products (|score| ≤ 11.4 after scaling),
      // each output and gradient at most S·d = 40 terms, so float32 (eps 6e-8) with the js kernels'
      // f64 sums differs by ≲ 50·eps·|value| ≈ 3e-6 relative; 1e-4 leaves a wide margin.
      expectClose(got.out, want.out, 1e-4);
      expectClose(got.lse, want.lse, 1e-4);
      // lse kernel: q, k and the document ids up; out kernel: v up, the lse binds the lse kernel's
      // output; lse and out come back (both are outputs of the op).
      expect(t1.calls - t0.calls).toBe(2);
      expect([t1.uploads - t0.uploads, t1.uploadBytes - t0.uploadBytes]).toEqual([4, bytes(got.q, got.k, got.v) + docsBytes]);
      expect([t1.readbacks - t0.readbacks, t1.readbackBytes - t0.readbackBytes]).toEqual([2, bytes(got.lse, got.out)]);

      const gout = randomF32(B * T * nh * d, 4);
      const grads = (a: AttentionArgs): AttentionBackwardArgs => ({
        ...a, gout, gq: new Float32Array(a.q.length), gk: new Float32Array(a.k.length), gv: new Float32Array(a.v.length),
      });
      const gGot = grads(got), gWant = grads(want);
      t0 = ks.transfers();
      ks.attentionBackward(gGot);
      t1 = ks.transfers();
      jsKernels.attentionBackward(gWant);
      for (const g of ['gq', 'gk', 'gv'] as const) expectClose(gGot[g], gWant[g], 1e-4);
      // delta (gout and out up) stays on the GPU for gq, gk and gv, which share every other input:
      // seven uploads for four kernels, and only the three gradients come back.
      expect(t1.calls - t0.calls).toBe(4);
      expect([t1.uploads - t0.uploads, t1.uploadBytes - t0.uploadBytes])
        .toEqual([7, bytes(gout, got.out, got.q, got.k, got.v, got.lse) + docsBytes]);
      expect([t1.readbacks - t0.readbacks, t1.readbackBytes - t0.readbackBytes]).toEqual([3, bytes(gGot.gq, gGot.gk, gGot.gv)]);
    } finally {
      ks.dispose();
    }
  }, 300_000);

  test('the synchronous webgpu set runs its kernels in the worker, in webgpu mode, and reports failures', async () => {
    const ks = await createWebgpuSyncKernels();
    const rows = 2, n = 131072;
    const x = randomF32(rows * n, 1, -8, 8);
    const y = new Float32Array(rows * n);
    const y0 = new Float32Array(rows * n);
    ks.softmax(x, rows, n, y);
    jsKernels.softmax(x, rows, n, y0);
    expectClose(y, y0, 1e-4);
    expect(Object.keys(ks.builtKernels()).sort()).toEqual(['softmax.apply|2,131072', 'softmax.stats|2,131072']);
    expect(Object.values(ks.builtKernels())).toEqual(['webgpu', 'webgpu']);
    ks.dispose();
    expect(() => ks.softmax(x, rows, n, y)).toThrow(GpujsBackendError);
  }, 300_000);

  test('a tensor left on the GPU is still read correctly after switching devices cpu → webgpu', async () => {
    // useDevice('webgpu') after useDevice('cpu') selects the kernel set that holds the tensor; a
    // new set (a new worker) would leave its host memory stale (zeros here) without an error.
    await useDevice('webgpu');
    const y = exp(Tensor.from(Float32Array.of(0, 1, 2)));
    await useDevice('cpu');
    await useDevice('webgpu');
    // WGSL's exp is within 3 + 2·|x| ulp (7 ulp ≈ 4e-7 relative at x = 2).
    const got = y.data;
    [1, Math.E, Math.exp(2)].forEach((v, i) => expect(Math.abs(got[i]! - v)).toBeLessThanOrEqual(2 * 7 * 2 ** -23 * v));
    await useDevice('cpu');
  }, 300_000);
});
