import { afterEach, describe, expect, test } from 'vitest';
import { backward } from './autograd';
import { backendOf, kernelNames, listBackends, registerBackend, setBackend } from './backend';
import { BackendError } from './errors';
import { cpuKernels } from './kernels/cpu/index';
import { jsKernels } from './kernels/js/index';
import type { KernelSet, LinearCrossEntropyArgs } from './kernels/types';
import { linearCrossEntropy } from './ops/linear-cross-entropy';
import { linear, matmul } from './ops/matmul';
import { sum } from './ops/reduce';
import { expectClose } from './ops/test-util';
import { Rng } from './random';
import { Tensor } from './tensor';

afterEach(() => { setBackend('js'); setBackend('cpu'); });

/** A backend that runs the reference kernels of `ops` and counts the calls per op. */
function countingBackend(ops: (keyof KernelSet)[]): Record<string, number> {
  const calls: Record<string, number> = {};
  const kernels: Partial<KernelSet> = {};
  for (const op of ops) {
    calls[op] = 0;
    const k = jsKernels[op] as (...a: unknown[]) => void;
    (kernels as Record<string, unknown>)[op] = (...a: unknown[]) => { calls[op]!++; k(...a); };
  }
  registerBackend('counting', 'test double', kernels);
  return calls;
}

describe('one backend registry for every op', () => {
  test('GEMM and the fused LM-head loss are ops of the registry, on cpu by default', () => {
    expect(kernelNames()).toContain('gemm');
    expect(kernelNames()).toContain('linearCrossEntropy');
    for (const op of ['gemm', 'linearCrossEntropy', 'attention', 'attentionBackward', 'rmsnorm', 'rmsnormBackward'] as const) expect(backendOf(op).name).toBe('cpu');
    expect(backendOf('softmax').name).toBe('js');
    expect(listBackends().map((b) => b.name)).toEqual(expect.arrayContaining(['js', 'cpu']));
  });

  test('matmul, linear and their gradients run the gemm kernel that backendOf names', () => {
    const calls = countingBackend(['gemm']);
    setBackend('counting');
    expect(backendOf('gemm')).toEqual({ name: 'counting', device: 'test double' });
    const r = new Rng(3);
    const x = Tensor.randn([5, 7], r).requireGrad(), w = Tensor.randn([4, 7], r).requireGrad(), b = Tensor.randn([4, 3], r).requireGrad();
    backward(sum(matmul(linear(x, w), b)));
    // Forward: linear and matmul; backward: dx, dW of linear and dA, dB of matmul.
    expect(calls.gemm).toBe(2 + 4);
  });

  test('linearCrossEntropy runs the kernel that backendOf names', () => {
    const calls = countingBackend(['gemm', 'linearCrossEntropy']);
    setBackend('counting', ['linearCrossEntropy']);
    const r = new Rng(4);
    const h = Tensor.randn([6, 8], r), w = Tensor.randn([11, 8], r);
    linearCrossEntropy(h, w, Tensor.ints([1, 2, 3, 4, 5, 6]));
    expect(calls).toEqual({ gemm: 0, linearCrossEntropy: 1 });
  });

  test('selecting a backend for an op it lacks throws instead of falling back', () => {
    countingBackend(['gemm']);
    expect(() => setBackend('counting', ['linearCrossEntropy'])).toThrow(BackendError);
    expect(() => setBackend('nope', ['gemm'])).toThrow(BackendError);
    expect(backendOf('linearCrossEntropy').name).toBe('cpu');
  });

  test('the cpu fused LM-head loss matches the reference kernel (f32 and bf16 W, chunks, skipped rows)', () => {
    const r = new Rng(5);
    const rows = 37, V = 301, H = 24;
    const h = Float32Array.from({ length: rows * H }, () => r.normal());
    const wf = Float32Array.from({ length: V * H }, () => 0.3 * r.normal());
    const wb = Uint16Array.from(new Uint32Array(wf.buffer), (u) => u >>> 16);
    const targets = Int32Array.from({ length: rows }, () => Math.floor(r.uniform() * V));
    const weights = Float32Array.from({ length: rows }, (_, i) => (i % 7 === 3 ? 0 : 0.5 + r.uniform()));
    for (const w of [wf, wb]) {
      const run = (k: KernelSet['linearCrossEntropy']): LinearCrossEntropyArgs => {
        const a: LinearCrossEntropyArgs = {
          rows, V, H, h, w, targets, weights, chunkRows: 10, sums: new Float64Array(2),
          dh: new Float32Array(rows * H), dw: w instanceof Float32Array ? new Float32Array(V * H) : null,
        };
        k!(a);
        return a;
      };
      const ref = run(jsKernels.linearCrossEntropy), got = run(cpuKernels.linearCrossEntropy);
      expect(got.sums[1]).toBe(ref.sums[1]);
      expect(Math.abs(got.sums[0]! - ref.sums[0]!) / ref.sums[0]!).toBeLessThan(1e-5);
      expectClose(got.dh!, ref.dh!, 1e-4);
      if (ref.dw) expectClose(got.dw!, ref.dw, 1e-4);
    }
  });
});
