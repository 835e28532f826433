import { afterAll, describe, expect, test } from 'vitest';
import { backendOf, setBackend } from './backend';
import { enableGpujs } from './gpujs-backend';
import { GpujsBackendError } from './kernels/gpujs/index';
import { attention } from './ops/attention';
import { crossEntropy } from './ops/cross-entropy';
import { rmsnorm } from './ops/rmsnorm';
import { softmax } from './ops/softmax';
import { Rng } from './random';
import { Tensor } from './tensor';
import { expectClose } from './ops/test-util';

afterAll(() => { setBackend('js'); setBackend('cpu'); });

describe('running the tensor ops on gpu.js', () => {
  test('ops give the reference results on the webasm backend, and backendOf reports it', () => {
    const r = new Rng(1);
    const x = Tensor.randn([3, 40], r), w = Tensor.randn([40], r);
    const q = Tensor.randn([1, 9, 4, 8], r), k = Tensor.randn([1, 9, 2, 8], r), v = Tensor.randn([1, 9, 2, 8], r);
    const tg = Tensor.ints([1, 39, 0]);
    const ref = [rmsnorm(x, w, 1e-5).data, softmax(x).data, attention(q, k, v).data, [crossEntropy(x, tg).item()]];
    expect(enableGpujs('webasm')).toEqual({ name: 'gpujs', device: 'gpu.js webasm' });
    expect(backendOf('rmsnorm')).toEqual({ name: 'gpujs', device: 'gpu.js webasm' });
    expect(backendOf('attention').name).toBe('gpujs');
    const got = [rmsnorm(x, w, 1e-5).data, softmax(x).data, attention(q, k, v).data, [crossEntropy(x, tg).item()]];
    got.forEach((g, i) => expectClose(g, ref[i]!, 1e-5));
  });
  test('a mode that is not available here is an error, not a silent fallback', () => {
    expect(() => enableGpujs('headlessgl')).toThrow(GpujsBackendError);
  });
});
