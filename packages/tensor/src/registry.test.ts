import { afterEach, describe, expect, test } from 'vitest';
import { backward } from './autograd';
import { BackendError } from './errors';
import { kernelSet, type KernelSet } from './kernels/types';
import { gemmKernel } from './ops/gemm/kernel';
import { linearCrossEntropy } from './ops/linear-cross-entropy';
import { linearCrossEntropyKernel, type LinearCrossEntropyArgs } from './ops/linear-cross-entropy/kernel';
import { linear, matmul } from './ops/matmul';
import { sum } from './ops/reduce';
import { expectClose } from './ops/test-util';
import { Rng } from './random';
import { defineKernel, implementationOf, kernelInfo, kernelOp, listKernels, removeKernels, resetKernels, selectKernels, setKernelDevice } from './registry';
import { Tensor } from './tensor';

const jsKernels = kernelSet('reference');
const cpuKernels = kernelSet('wasm');

afterEach(() => { removeKernels('cpu', 'counting'); setKernelDevice('cpu'); });

/** Register, as implementation 'counting' of the cpu device, the reference kernels of `ops`, counting the calls per op. */
function counting(ops: (keyof KernelSet)[]): Record<string, number> {
  const calls: Record<string, number> = {};
  const ops_ = { gemm: gemmKernel, linearCrossEntropy: linearCrossEntropyKernel } as const;
  for (const op of ops) {
    calls[op] = 0;
    const k = jsKernels[op] as (...a: unknown[]) => void;
    defineKernel(ops_[op as keyof typeof ops_] as never, { device: 'cpu', impl: 'counting', rank: -5, run: ((...a: unknown[]) => { calls[op]!++; k(...a); }) as never });
  }
  return calls;
}

describe('one kernel registry for every op × dtype × device', () => {
  test('GEMM and the fused LM-head loss are ops of the registry, wasm on the cpu device by default', () => {
    const ops = new Set(listKernels().map((k) => k.op));
    for (const op of ['gemm', 'linearCrossEntropy', 'attention', 'rmsnorm', 'softmax']) expect(ops.has(op), op).toBe(true);
    for (const op of ['gemm', 'linearCrossEntropy', 'attention', 'attentionBackward', 'rmsnorm', 'rmsnormBackward'] as const) expect(kernelInfo(op)).toEqual({ device: 'cpu', impl: 'wasm' });
    expect(kernelInfo('softmax')).toEqual({ device: 'cpu', impl: 'reference' });
    // The dtype key picks among implementations too: bf16 weights have a GEMM of their own.
    expect(kernelInfo(gemmKernel, 'bf16')).toEqual({ device: 'cpu', impl: 'wasm' });
  });

  test('matmul, linear and their gradients run the gemm kernel that kernelInfo names', () => {
    const calls = counting(['gemm']);
    selectKernels('counting');
    expect(kernelInfo(gemmKernel)).toEqual({ device: 'cpu', impl: 'counting' });
    const r = new Rng(3);
    const x = Tensor.randn([5, 7], r).requireGrad(), w = Tensor.randn([4, 7], r).requireGrad(), b = Tensor.randn([4, 3], r).requireGrad();
    backward(sum(matmul(linear(x, w), b)));
    // Forward: linear and matmul; backward: dx, dW of linear and dA, dB of matmul.
    expect(calls.gemm).toBe(2 + 4);
  });

  test('linearCrossEntropy runs the kernel that kernelInfo names', () => {
    const calls = counting(['gemm', 'linearCrossEntropy']);
    selectKernels('counting', [linearCrossEntropyKernel]);
    const r = new Rng(4);
    const h = Tensor.randn([6, 8], r), w = Tensor.randn([11, 8], r);
    linearCrossEntropy(h, w, Tensor.ints([1, 2, 3, 4, 5, 6]));
    expect(calls).toEqual({ gemm: 0, linearCrossEntropy: 1 });
  });

  test('no fallback: an implementation an op lacks, an unknown device or a dtype with no kernel is a BackendError', () => {
    counting(['gemm']);
    expect(() => selectKernels('counting', ['linearCrossEntropy'])).toThrow(BackendError);
    expect(() => selectKernels('nope', ['gemm'])).toThrow(BackendError);
    expect(kernelInfo('linearCrossEntropy')?.impl).toBe('wasm');
    expect(() => setKernelDevice('tpu' as never)).toThrow(/unknown device 'tpu'/);
    const op = kernelOp<(x: Float32Array, out: Float32Array) => void>('test.negate', (x) => (x.length > 3 ? 'long' : 'f32'));
    defineKernel(op, { device: 'cpu', impl: 'reference', dtypes: ['f32'], run: (x, out) => { for (let i = 0; i < x.length; i++) out[i] = -x[i]!; } });
    const out = new Float32Array(2);
    op.run(Float32Array.of(1, -2), out);
    expect(Array.from(out)).toEqual([-1, 2]);
    expect(() => op.run(new Float32Array(4), new Float32Array(4))).toThrow(/no kernel for 'test\.negate' with dtype long on device cpu; registered there: reference \(f32\)/);
    setKernelDevice('webgpu');
    expect(() => op.run(new Float32Array(2), out)).toThrow(/no kernel for 'test\.negate' with dtype f32 on device webgpu; registered there: none/);
    expect(() => kernelOp('test.negate')).toThrow(/declared twice/);
  });

  test('an implementation that is not available here is never chosen, and cannot be selected', () => {
    const op = kernelOp<(out: Float32Array) => void>('test.available');
    defineKernel(op, { device: 'cpu', impl: 'reference', run: (o) => { o[0] = 1; } });
    defineKernel(op, { device: 'cpu', impl: 'fast', available: () => false, run: (o) => { o[0] = 2; } });
    const o = new Float32Array(1);
    op.run(o);
    expect(o[0]).toBe(1);
    expect(() => selectKernels('fast', [op])).toThrow(/not available here/);
    resetKernels();
    expect(implementationOf(op, 'fast')).toBeTypeOf('function');
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
        k(a);
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
