import { afterAll, describe, expect, test } from 'vitest';
import { kernelInfo, resetKernels } from './registry';
import { enableGpujs } from './gpujs-backend';
import { createGpujsKernels, GpujsBackendError } from './kernels/gpujs/index';
import { call, into, type KernelOp } from './kernels/gpujs/runtime';
import { attention } from './ops/attention';
import { crossEntropy } from './ops/cross-entropy';
import { rmsnorm } from './ops/rmsnorm';
import { softmax } from './ops/softmax';
import { Rng } from './random';
import { Tensor } from './tensor';
import { expectClose } from './ops/test-util';

afterAll(() => resetKernels());

describe('running the tensor ops on gpu.js', () => {
  test('ops give the reference results on gpu.js webasm (selected on the cpu device), and kernelInfo reports it', () => {
    const r = new Rng(1);
    const x = Tensor.randn([3, 40], r), w = Tensor.randn([40], r);
    const q = Tensor.randn([1, 9, 4, 8], r), k = Tensor.randn([1, 9, 2, 8], r), v = Tensor.randn([1, 9, 2, 8], r);
    const tg = Tensor.ints([1, 39, 0]);
    const ref = [rmsnorm(x, w, 1e-5).data, softmax(x).data, attention(q, k, v).data, [crossEntropy(x, tg).item()]];
    expect(enableGpujs('webasm')).toBe('webasm');
    expect(kernelInfo('rmsnorm')).toEqual({ device: 'cpu', impl: 'gpujs' });
    expect(kernelInfo('attention')?.impl).toBe('gpujs');
    const got = [rmsnorm(x, w, 1e-5).data, softmax(x).data, attention(q, k, v).data, [crossEntropy(x, tg).item()]];
    got.forEach((g, i) => expectClose(g, ref[i]!, 1e-5));
  });
  test('a mode that is not available here is an error, not a silent fallback', () => {
    expect(() => enableGpujs('headlessgl')).toThrow(GpujsBackendError);
  });
  test('an op defined outside the set runs on it (runOp)', () => {
    // out = 2·x + 1, as another package would write it with the public helpers.
    function* affine(x: Float32Array, out: Float32Array): KernelOp {
      yield* into(out, call('test.affine', `${x.length}`, () => ({
        source: 'function (x) { return 2 * x[this.thread.x] + 1; }', output: [x.length], argumentTypes: { x: 'Array' },
      }), [x]));
    }
    const ks = createGpujsKernels('webasm');
    try {
      const out = new Float32Array(3);
      ks.runOp(affine(new Float32Array([1, -2, 0.5]), out));
      expect([...out]).toEqual([3, -3, 2]);
      expect(ks.builtKernels()).toEqual({ 'test.affine|3': 'webasm' });
    } finally {
      ks.dispose();
    }
  });
});
