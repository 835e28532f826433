import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, test } from 'vitest';
import { backward } from '../autograd';
import { kernelInfo } from '../registry';
import { scale } from '../ops/elementwise';
import { sgemm } from '../ops/gemm';
import { linear, matmul } from '../ops/matmul';
import { narrow } from '../ops/view';
import { sum } from '../ops/reduce';
import { Rng } from '../random';
import { Tensor } from '../tensor';
import { tidy } from '../tidy';
import { gemmKernelInfo, setGemmThreads, terminateGemmWorkers } from '../ops/gemm/cpu';
import { heapAddress, heapF32, heapRelease, heapStats } from './heap';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** Collect garbage, then let the FinalizationRegistry callbacks run (they are tasks). */
async function collect(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 0));
  }
}

afterAll(() => { setGemmThreads(2); terminateGemmWorkers(); });

/** The same product computed from plain JavaScript copies of the operands (which the GEMM stages). */
function stagedProduct(A: Float32Array, B: Float32Array, M: number, N: number, K: number, transA: boolean, transB: boolean): Float32Array {
  const C = new Float32Array(M * N);
  sgemm({ transA, transB, M, N, K, A: A.slice(), B: B.slice(), C });
  return C;
}

describe('tensor storage on the cpu device', () => {
  test('tensors live in the shared wasm memory', () => {
    const t = Tensor.randn([3, 5], new Rng(1));
    expect(heapAddress(t.data)).toBeGreaterThan(0);
    expect(heapAddress(new Float32Array(4))).toBe(-1);
    expect(kernelInfo('gemm')?.impl).toBe('wasm');
  });

  test('linear and matmul, forward and backward, make no staging copies and equal the staged results bit for bit', () => {
    for (const threads of [1, 2]) {
      setGemmThreads(threads);
      const r = new Rng(7);
      const x = Tensor.randn([96, 256], r).requireGrad(), w = Tensor.randn([192, 256], r, 0.1).requireGrad();
      const b = Tensor.randn([192, 40], r).requireGrad();
      const before = gemmKernelInfo().bytesStaged;
      const h = linear(x, w);
      const y = matmul(h, b);
      backward(sum(scale(y, 0.5)));
      expect(gemmKernelInfo().bytesStaged - before).toBe(0);
      // The same products from plain arrays go through staging and give the same bits.
      expect(gemmKernelInfo().bytesStaged).toBe(before);
      expect(Array.from(stagedProduct(x.data, w.data, 96, 192, 256, false, true))).toEqual(Array.from(h.data));
      expect(Array.from(stagedProduct(h.data, b.data, 96, 40, 192, false, false))).toEqual(Array.from(y.data));
      const G = new Float32Array(96 * 40).fill(0.5);
      expect(Array.from(stagedProduct(h.data, G, 192, 40, 96, true, false))).toEqual(Array.from(b.grad!.data));
      expect(gemmKernelInfo().bytesStaged).toBeGreaterThan(before);
    }
  });

  test('storage allocated before the memory grows stays valid, and is still read in place', () => {
    const r = new Rng(2);
    const x = Tensor.randn([8, 64], r), w = Tensor.randn([16, 64], r);
    const xs = x.data, values = Array.from(xs);
    const grow = heapF32(heapStats().memoryBytes / 4); // forces the memory to (at least) double
    expect(heapStats().memoryBytes).toBeGreaterThan(grow.byteLength);
    expect(Array.from(x.data)).toEqual(values);
    xs[3] = 42;
    expect(x.data[3]).toBe(42);
    const before = gemmKernelInfo().bytesStaged;
    const y = linear(x, w);
    expect(gemmKernelInfo().bytesStaged).toBe(before);
    expect(Array.from(y.data)).toEqual(Array.from(stagedProduct(x.data, w.data, 8, 16, 64, false, true)));
    heapRelease(grow);
  });

  test('released blocks go back to the pool and come out again zeroed', () => {
    const a = heapF32(1000);
    a.fill(7);
    const at = heapAddress(a);
    const pooled = heapStats().pooledBytes;
    heapRelease(a);
    expect(heapStats().pooledBytes).toBeGreaterThan(pooled);
    const b = heapF32(1001); // same size class
    expect(heapAddress(b)).toBe(at);
    expect(b.every((v) => v === 0)).toBe(true);
    const t = Tensor.zeros([250]);
    const p = heapStats().pooledBytes;
    t.dispose();
    expect(heapStats().pooledBytes).toBe(p + 1024);
  });

  test('backward returns its intermediate gradients to the pool', () => {
    const x = Tensor.randn([64, 64], new Rng(3)).requireGrad();
    const y = scale(scale(scale(x, 2), 3), 4);
    const live = heapStats().liveBytes;
    backward(sum(y));
    // 4 gradients of 16 KiB are formed (sum, and the three scales); only x.grad stays live.
    expect(heapStats().liveBytes - live).toBeLessThanOrEqual(64 * 64 * 4 + 1024);
    expect(x.grad!.data[0]).toBe(24);
  });

  test('a block is recycled only once nothing refers to it, a partial .data view included', async () => {
    let t: Tensor | null = Tensor.randn([4, 256], new Rng(4));
    const inner = narrow(t, 0, 2, 1).data; // a view into t's storage
    const want = Array.from(inner);
    const addr = heapAddress(inner);
    t = null;
    await collect();
    // t's storage is still referenced through `inner`: allocating its size class must not hand it out.
    const probes = Array.from({ length: 8 }, () => heapF32(1024));
    expect(probes.some((p) => heapAddress(p) <= addr && addr < heapAddress(p) + p.byteLength)).toBe(false);
    expect(Array.from(inner)).toEqual(want);
    probes.forEach(heapRelease);
    // Storage nothing refers to any more returns to the pool once collected.
    const pooled = heapStats().pooledBytes;
    ((): void => { expect(Tensor.zeros([1 << 14]).size).toBe(1 << 14); })();
    await collect();
    expect(heapStats().pooledBytes).toBeGreaterThanOrEqual(pooled + (1 << 16));
  });

  test('tidy recycles the activations of a step, keeps leaf gradients and returned tensors', () => {
    const r = new Rng(9);
    const x = Tensor.randn([32, 48], r), w = Tensor.randn([40, 48], r, 0.2).requireGrad();
    const plain = (): number[] => { w.zeroGrad(); backward(sum(scale(linear(x, w), 3))); return Array.from(w.grad!.data); };
    const want = plain();
    const step = (): number => tidy(() => { const l = sum(scale(linear(x, w), 3)); const v = l.item(); backward(l); return v; });
    w.zeroGrad(); step();
    const mem = heapStats().memoryBytes, live = heapStats().liveBytes;
    for (let i = 0; i < 5; i++) { w.zeroGrad(); step(); }
    expect(Array.from(w.grad!.data)).toEqual(want);
    expect(heapStats().memoryBytes).toBe(mem);
    // Only the dropped gradients (awaiting garbage collection) are still live.
    expect(heapStats().liveBytes - live).toBeLessThanOrEqual(5 * 8192); // 40·48 floats: the 8 KiB size class
    const kept = tidy(() => ({ y: scale(x, 2), n: 1 }));
    heapF32(x.size).fill(5); // would reuse the block if kept.y had been released
    expect(kept.y.data[0]).toBe(2 * x.data[0]!);
  });

  test('storage kept out of a scope is registered then, and goes back to the pool once collected', async () => {
    const x = Tensor.randn([64, 64], new Rng(5));
    let kept: Tensor | null = tidy(() => scale(x, 2)); // 16 KiB, allocated unregistered inside the scope
    expect(kept.data[3]).toBe(2 * x.data[3]!);
    const pooled = heapStats().pooledBytes;
    kept = null;
    await collect();
    expect(heapStats().pooledBytes).toBeGreaterThanOrEqual(pooled + 64 * 64 * 4);
  });
});
