import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BackendError } from '../../errors';
import { kernelInfo, resetKernels, selectKernels } from '../../registry';
import { sgemm } from '.';
import {
  GemmError, gemmKernelInfo, setGemmThreads, sgemmReference, terminateGemmWorkers, THREAD_MIN_WORK, type GemmArgs,
} from './cpu';
import { WasmGemmEngine } from './wasm/engine';
import { checkGemmArgs } from './args';
import { heapF32, heapRelease } from '../../memory/heap';
import { GEMM_BACKENDS as BACKENDS, ODD_SIZES, errorBound, randomArray, useGemm as use, worstRatio } from './test-util';

afterAll(() => {
  resetKernels();
  setGemmThreads(2);
  terminateGemmWorkers();
});

const size = fc.oneof(fc.constantFrom(...ODD_SIZES), fc.integer({ min: 1, max: 80 }));
const problem = fc.record({
  M: size,
  N: size,
  K: size,
  transA: fc.boolean(),
  transB: fc.boolean(),
  alpha: fc.constantFrom(1, -0.5, 2.25, 1e-3),
  beta: fc.constantFrom(0, 1, -1.5),
  seed: fc.integer({ min: 1, max: 2 ** 30 }),
});
interface Problem {
  M: number; N: number; K: number; transA: boolean; transB: boolean; alpha: number; beta: number; seed: number;
}

function build(p: Problem): { args: GemmArgs; want: Float32Array; bound: Float32Array } {
  const A = randomArray(p.M * p.K, p.seed);
  const B = randomArray(p.K * p.N, p.seed + 1);
  const C = randomArray(p.M * p.N, p.seed + 2);
  const args: GemmArgs = { transA: p.transA, transB: p.transB, M: p.M, N: p.N, K: p.K, A, B, C, alpha: p.alpha, beta: p.beta };
  const want = C.slice();
  sgemmReference({ ...args, C: want });
  return { args, want, bound: errorBound(args) };
}

describe.each(BACKENDS)('sgemm on backend %s', (backend) => {
  it('is what backendOf reports', () => {
    use(backend);
    expect(kernelInfo('gemm')?.impl).toBe(backend === 'js' ? 'reference' : 'wasm');
  });

  it('matches the double-precision reference on random shapes, transposes, alpha and beta', () => {
    use(backend);
    fc.assert(
      fc.property(problem, (p) => {
        const { args, want, bound } = build(p);
        sgemm(args);
        expect(worstRatio(args.C, want, bound)).toBeLessThanOrEqual(1);
      }),
      { numRuns: backend === 'js' ? 40 : 80 },
    );
  });

  it('handles products large enough for worker threads and several cache blocks', () => {
    use(backend);
    for (const [M, N, K, transA, transB] of [
      [140, 90, 530, false, false],
      [129, 700, 40, true, true],
      [6, 900, 1100, false, true],
    ] as const) {
      const p = { M, N, K, transA, transB, alpha: 0.75, beta: 1, seed: M + N + K };
      const { args, want, bound } = build(p);
      sgemm(args);
      expect(worstRatio(args.C, want, bound)).toBeLessThanOrEqual(1);
    }
    if (backend.endsWith('2 threads')) expect(gemmKernelInfo().workers).toBeGreaterThanOrEqual(1);
  });

  it('ignores NaNs in C when beta = 0 and skips A, B when alpha = 0', () => {
    use(backend);
    const M = 9, N = 70, K = 33;
    const A = randomArray(M * K, 5), B = randomArray(K * N, 6);
    const C = new Float32Array(M * N).fill(NaN);
    const want = new Float32Array(M * N);
    sgemm({ transA: false, transB: true, M, N, K, A, B, C });
    sgemmReference({ transA: false, transB: true, M, N, K, A, B, C: want });
    expect(worstRatio(C, want, errorBound({ transA: false, transB: true, M, N, K, A, B, C: want }))).toBeLessThanOrEqual(1);
    const C2 = Float32Array.from({ length: M * N }, (_, i) => i);
    sgemm({ transA: false, transB: false, M, N, K, A: A.fill(NaN), B, C: C2, alpha: 0, beta: 2 });
    expect(Array.from(C2)).toEqual(Array.from({ length: M * N }, (_, i) => 2 * i));
  });

  it('computes K = 0 as C = beta * C and leaves empty outputs alone', () => {
    use(backend);
    const C = new Float32Array([1, 2, 3, 4, 5, 6]);
    sgemm({ transA: false, transB: false, M: 2, N: 3, K: 0, A: new Float32Array(0), B: new Float32Array(0), C, beta: -1 });
    expect(Array.from(C)).toEqual([-1, -2, -3, -4, -5, -6]);
    sgemm({ transA: false, transB: false, M: 2, N: 3, K: 0, A: new Float32Array(0), B: new Float32Array(0), C });
    expect(Array.from(C)).toEqual([0, 0, 0, 0, 0, 0]);
    const untouched = new Float32Array([7]);
    sgemm({ transA: false, transB: false, M: 0, N: 1, K: 4, A: new Float32Array(0), B: new Float32Array(4), C: untouched });
    expect(Array.from(untouched)).toEqual([7]);
  });

  it('works on subarray views (batched matmul calls it per batch)', () => {
    use(backend);
    const batch = 3, M = 5, N = 6, K = 7;
    const A = randomArray(batch * M * K, 11), B = randomArray(batch * K * N, 12);
    const C = randomArray(batch * M * N, 13);
    const before = C.slice();
    for (let b = 0; b < batch; b++) {
      const v = (x: Float32Array, n: number) => x.subarray(b * n, (b + 1) * n);
      const args: GemmArgs = { transA: false, transB: false, M, N, K, A: v(A, M * K), B: v(B, K * N), C: v(before, M * N).slice(), beta: 1 };
      const want = args.C.slice();
      sgemmReference({ ...args, C: want });
      sgemm({ ...args, C: v(C, M * N) });
      expect(worstRatio(v(C, M * N), want, errorBound(args))).toBeLessThanOrEqual(1);
    }
  });
});

describe('sgemm argument checks', () => {
  const ok = (): GemmArgs => ({
    transA: false, transB: false, M: 2, N: 3, K: 4,
    A: new Float32Array(8), B: new Float32Array(12), C: new Float32Array([1, 2, 3, 4, 5, 6]),
  });
  const bad: [string, (a: GemmArgs) => unknown][] = [
    ['M', (a) => ({ ...a, M: -1 })],
    ['N', (a) => ({ ...a, N: 2.5 })],
    ['K', (a) => ({ ...a, K: Number.NaN })],
    ['A', (a) => ({ ...a, A: new Float32Array(7) })],
    ['B', (a) => ({ ...a, B: new Float64Array(12) })],
    ['C', (a) => ({ ...a, C: new Float32Array(5) })],
    ['alpha', (a) => ({ ...a, alpha: '2' })],
  ];
  it.each(bad)('rejects a bad %s with a GemmError naming it, leaving C untouched', (field, mutate) => {
    const args = mutate(ok()) as GemmArgs;
    const before = args.C instanceof Float32Array ? Array.from(args.C) : null;
    let err: unknown;
    try {
      sgemm(args);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GemmError);
    expect((err as GemmError).field).toBe(field);
    if (before && args.C instanceof Float32Array) expect(Array.from(args.C)).toEqual(before);
  });

  it('rejects unknown implementations and thread counts', () => {
    expect(() => selectKernels('gpu', ['gemm'])).toThrow(BackendError);
    expect(() => setGemmThreads(0)).toThrow(GemmError);
    expect(() => setGemmThreads(1.5)).toThrow(GemmError);
  });

  it('runs the wasm kernel on the cpu device by default, with the thread count that was set', () => {
    expect(kernelInfo('gemm')).toEqual({ device: 'cpu', impl: 'wasm' });
    setGemmThreads(1);
    expect(gemmKernelInfo().threads).toBe(1);
    setGemmThreads(2);
    expect(['simd', 'relaxed']).toContain(gemmKernelInfo().variant);
  });
});

describe('wasm engine chunking and job splitting', () => {
  // Tiny blocks and chunks force every loop of the driver (several A chunks, B chunks, cache
  // blocks and jobs per dispatch) to run on small, fast shapes; threadMinWork 0 always uses workers.
  const engines = [
    new WasmGemmEngine('simd', { MC: 8, NC: 24, KC: 20, aChunkBytes: 1500, bChunkBytes: 3000, cChunkBytes: 2000, cBlockBytes: 1500, minChunkRows: 3, minJobCols: 8, threadMinWork: 0 }),
    new WasmGemmEngine('simd', { MC: 12, NC: 16, KC: 9, aChunkBytes: 600, bChunkBytes: 700, cBlockBytes: 500, minChunkRows: 1, minJobCols: 1, threadMinWork: 0, dotMaxM: 0 }),
  ];
  afterAll(() => engines.forEach((e) => e.terminate()));

  it.each([0, 1])('engine %i matches the reference with 1, 2 and 3 threads', (which) => {
    const engine = engines[which]!;
    fc.assert(
      fc.property(problem, fc.constantFrom(1, 2, 3), (p, threads) => {
        const { args, want, bound } = build(p);
        engine.run(checkGemmArgs(args, false), threads);
        expect(worstRatio(args.C, want, bound)).toBeLessThanOrEqual(1);
      }),
      { numRuns: 60 },
    );
    expect(engine.workerCount).toBe(2);
  });

  it('runs operands in the wasm memory in one step and gives the bits of the staged path (several B chunks)', () => {
    // Tiny chunks: staged, B goes in several column chunks (transB) or K chunks (whole KC blocks);
    // in place, B goes in one step either way.
    const engine = new WasmGemmEngine('relaxed', { MC: 8, NC: 24, KC: 20, bChunkBytes: 3000, cBlockBytes: 1500, minChunkRows: 3, minJobCols: 8, threadMinWork: 0 });
    try {
      for (const [M, N, K, transA, transB] of [[37, 150, 45, false, true], [37, 60, 130, true, false]] as const) {
        const A = randomArray(M * K, M), B = randomArray(K * N, N);
        const staged = new Float32Array(M * N);
        engine.run(checkGemmArgs({ transA, transB, M, N, K, A, B, C: staged }, false), 2);
        const hA = heapF32(M * K), hB = heapF32(K * N), hC = heapF32(M * N);
        hA.set(A); hB.set(B);
        engine.run(checkGemmArgs({ transA, transB, M, N, K, A: hA, B: hB, C: hC }, false), 2);
        expect(Array.from(hC)).toEqual(Array.from(staged));
        for (const h of [hA, hB, hC]) heapRelease(h);
      }
    } finally {
      engine.terminate();
    }
  });

  it('cannot be used after terminate', () => {
    const e = new WasmGemmEngine('simd');
    e.terminate();
    const args = checkGemmArgs({ transA: false, transB: false, M: 1, N: 1, K: 1, A: new Float32Array(1), B: new Float32Array(1), C: new Float32Array(1) }, false);
    expect(() => e.run(args, 1)).toThrow(GemmError);
  });

  it('restarts workers after terminateGemmWorkers', () => {
    use('cpu relaxed 2 threads');
    terminateGemmWorkers();
    expect(gemmKernelInfo().workers).toBe(0);
    const { args, want, bound } = build({ M: 128, N: 128, K: 128, transA: false, transB: false, alpha: 1, beta: 0, seed: 3 });
    expect(128 ** 3).toBeGreaterThanOrEqual(THREAD_MIN_WORK);
    sgemm(args);
    expect(worstRatio(args.C, want, bound)).toBeLessThanOrEqual(1);
    expect(gemmKernelInfo().workers).toBe(1);
  });
});
