// The tensor ops (forward and backward through autograd) on the webgpu device (WGSL kernels; a
// device thread owns the GPU, the calling thread waits only on reads), on SwiftShader here. Results
// are compared with the same graph on the reference kernels; what moves between host and device is
// counted (webgpuCounters).
import { afterAll, describe, expect, test } from 'vitest';
import { backward } from './autograd';
import { kernelInfo, resetKernels, selectKernels } from './registry';
import { useDevice } from './device';
import { randomF32 } from './kernels/float-testing';
import { TENSOR_KERNELS } from './kernels/types';
import { webgpuCounters } from './webgpu/device';
import { useSwiftshaderUnlessDriverNamed } from './webgpu/testing';
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
import { contiguous, narrow, reshape, transpose } from './ops/view';
import { Rng } from './random';
import { Tensor } from './tensor';
import { expectClose } from './ops/test-util';

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

describe('the tensor ops on the webgpu device', () => {
  test('every op of the registry moves to webgpu, and forward and backward match the reference kernels', async () => {
    selectKernels('reference');
    const want = graph().map((a) => Float32Array.from(a));
    const info = await useDevice('webgpu');
    expect(info.adapter).toMatch(/\S/);
    // Every op of the registry moves, GEMM and the LM-head loss included.
    for (const op of Object.keys(TENSOR_KERNELS)) expect(kernelInfo(op), op).toEqual({ device: 'webgpu', impl: 'wgsl' });
    const got = graph();
    got.forEach((g, i) => expectClose(g, want[i]!, 1e-4));

    // Softmax over [2, 5] is one kernel: x goes up once, and y stays on the device until it is
    // read (one read of 40 bytes); nothing waits for the device before that.
    const before = webgpuCounters();
    const y = softmax(Tensor.from([[1, 2, 3, 4, 5], [0, -1, 2, 1, 0]]));
    const after = webgpuCounters();
    expect(after.dispatches - before.dispatches).toBe(1);
    expect(after.uploadBytes - after.uniformBytes - (before.uploadBytes - before.uniformBytes)).toBe(40);
    expect([after.readbacks - before.readbacks, after.readbackBytes - before.readbackBytes]).toEqual([0, 0]);
    expect(y.data[4]).toBeCloseTo(Math.exp(4) / [0, 1, 2, 3, 4].reduce((s, k) => s + Math.exp(k), 0), 6);
    const read = webgpuCounters();
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
    const t0 = webgpuCounters();
    const got = block();
    const t1 = webgpuCounters();
    // One read during the step: cross-entropy's per-row losses (6 rows, summed into the loss on
    // the host; the log-sum-exp stays for the backward). Every activation and every gradient (the
    // embedding's scatter-add included) stays on the device.
    expect([t1.readbacks - t0.readbacks, t1.readbackBytes - t0.readbackBytes]).toEqual([1, 4 * 6]);
    expect(got.loss.item()).toBeCloseTo(want.loss.item(), 5);
    // Reading a gradient is its readback.
    const sizes = [19 * 16, 16, 32 * 16, 19 * 32];
    got.params.forEach((p, i) => {
      const before = webgpuCounters();
      // 32 terms at most per sum, values O(1): float32 against the js kernels' f64 sums ≲ 1e-5.
      expectClose(p.grad!.data, want.params[i]!.grad!.data, 1e-4);
      const after = webgpuCounters();
      expect(after.readbackBytes - before.readbackBytes, p.toString()).toBe(4 * sizes[i]!);
    });
  }, 300_000);

  test('RoPE\'s table of angles goes up once per frequency vector, whatever the positions', async () => {
    await useDevice('webgpu');
    const r = new Rng(9);
    const N = 6, heads = 2, d = 8;
    const invFreq = Float32Array.from({ length: d / 2 }, (_, i) => 5000 ** (-(2 * i) / d));
    const run = (positions: number[]) => {
      const x = Tensor.randn([N, heads, d], r).requireGrad();
      const t0 = webgpuCounters();
      const y = rope(x, Tensor.ints(positions), invFreq);
      backward(sum(y));
      const t1 = webgpuCounters();
      return { uploads: t1.uploadBytes - t1.uniformBytes - (t0.uploadBytes - t0.uniformBytes), x, y };
    };
    // The table covers positions [0, 4096): 4096 · d/2 · [cos, sin] floats, once.
    const tableBytes = 4096 * (d / 2) * 2 * 4;
    const first = run([0, 1, 2, 3, 4, 5]);
    const again = run([0, 1, 2, 3, 4, 5]);
    const moved = run([7, 1, 2, 3, 4, 5]);
    expect(first.uploads - again.uploads).toBe(tableBytes);
    expect(moved.uploads).toBe(again.uploads);
    await useDevice('cpu');
    selectKernels('reference');
    const want = rope(moved.x, Tensor.ints([7, 1, 2, 3, 4, 5]), invFreq);
    await useDevice('webgpu');
    expectClose(moved.y.data, want.data, 1e-6);
  }, 300_000);

  test('a transpose of a tensor on the device is copied there: one kernel, no upload, no readback until read', async () => {
    await useDevice('webgpu');
    // x is on the device: the output of an op there.
    const x = add(reshape(Tensor.from(randomF32(24, 3)), [2, 3, 4]), 1);
    const t0 = webgpuCounters();
    const y = contiguous(transpose(x, 0, 2));
    const t1 = webgpuCounters();
    expect(t1.dispatches - t0.dispatches).toBe(1);
    expect(t1.uploadBytes - t1.uniformBytes - (t0.uploadBytes - t0.uniformBytes)).toBe(0);
    expect(t1.readbacks - t0.readbacks).toBe(0);
    const want = x.toArray() as number[][][];
    const got = y.toArray() as number[][][];
    expect(got[3]![2]![1]).toBe(want[1]![2]![3]);
  }, 300_000);

  test('a tensor left on the device is still read correctly after switching devices cpu → webgpu', async () => {
    await useDevice('webgpu');
    const y = exp(Tensor.from(Float32Array.of(0, 1, 2)));
    await useDevice('cpu');
    await useDevice('webgpu');
    // exp_ is within 3 ulp.
    const got = y.data;
    [1, Math.E, Math.exp(2)].forEach((v, i) => expect(Math.abs(got[i]! - v)).toBeLessThanOrEqual(3 * 2 ** -23 * v));
    await useDevice('cpu');
  }, 300_000);
});
