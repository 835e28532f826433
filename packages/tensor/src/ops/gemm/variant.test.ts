import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, test, vi } from 'vitest';
import { backward } from '../../autograd';
import { kernelInfo, resetKernels, selectKernels } from '../../registry';
import { linearCrossEntropy } from '../linear-cross-entropy';
import { sgemm } from '.';
import { expectClose } from '../test-util';
import { Rng } from '../../random';
import { Tensor } from '../../tensor';
import { GemmError, gemmKernelInfo, parseGemmSetting, relaxedSimdAvailable, setGemmThreads, setGemmVariant, sgemmReference, type GemmVariantName } from './cpu';
import { errorBound, randomArray, worstRatio } from './test-util';
import { attentionKernel } from '../attention/kernel';
import { kernelSet } from '../../kernels/types';
import { revectorizeOn } from '../../host';

const jsKernels = kernelSet('reference');

afterAll(() => {
  resetKernels();
  setGemmVariant('relaxed');
});

/** C = 1·(−1) + a·a with a = 1 + 2⁻¹²: a·a = 1 + 2⁻¹¹ + 2⁻²⁴ rounds (to even) to 1 + 2⁻¹¹ unless fused. */
function fmaProbe(): number {
  const a = 1 + 2 ** -12;
  const C = new Float32Array(1);
  sgemm({ transA: false, transB: false, M: 1, N: 1, K: 2, A: new Float32Array([1, a]), B: new Float32Array([-1, a]), C });
  return C[0]!;
}

/** The micro-tile of a variant: 16 columns where the revectorizer is on (see wasm/variants.ts). */
const tile = (v: GemmVariantName): string => `${v === 'relaxed' ? 6 : 4}x${revectorizeOn() ? 16 : 8}`;

/** Whether the CPU has fused multiply-add, from the kernel's own CPU flags (x86-64 Linux). */
const cpuHasFma = /^flags\s*:.*\bfma\b/m.test(readFileSync('/proc/cpuinfo', 'utf8'));

describe('the cpu GEMM variants: relaxed-SIMD FMA by default where the CPU has it, plain SIMD selectable', () => {
  test('the default is the FMA variant on a CPU with FMA (relaxed SIMD is on by default from Node 22)', () => {
    expect(process.arch).toBe('x64');
    expect(relaxedSimdAvailable()).toBe(true);
    expect(gemmKernelInfo().variant).toBe(cpuHasFma ? 'relaxed' : 'simd');
    expect(gemmKernelInfo().microTile).toBe(tile(cpuHasFma ? 'relaxed' : 'simd'));
    expect(fmaProbe()).toBe(cpuHasFma ? 2 ** -11 + 2 ** -24 : 2 ** -11);
  });

  test('setGemmVariant switches between fused (relaxed) and separate multiply and add (simd) on the cpu backend', () => {
    setGemmVariant('simd');
    expect(kernelInfo('gemm')?.impl).toBe('wasm');
    expect(gemmKernelInfo()).toMatchObject({ variant: 'simd', microTile: tile('simd') });
    expect(fmaProbe()).toBe(2 ** -11);
    setGemmVariant('relaxed');
    expect(gemmKernelInfo()).toMatchObject({ variant: 'relaxed', microTile: tile('relaxed') });
    expect(fmaProbe()).toBe(cpuHasFma ? 2 ** -11 + 2 ** -24 : 2 ** -11);
    expect(() => setGemmVariant('fma' as GemmVariantName)).toThrow(GemmError);
  });

  test('APERTUS_GEMM=fma|relaxed|simd picks the variant of a fresh process; other values are a GemmError naming it', async () => {
    expect(parseGemmSetting(undefined)).toBeNull();
    expect(parseGemmSetting('')).toBeNull();
    expect(parseGemmSetting('fma')).toBe('relaxed');
    expect(parseGemmSetting('RELAXED')).toBe('relaxed');
    expect(parseGemmSetting('simd')).toBe('simd');
    expect(() => parseGemmSetting('avx')).toThrow(expect.objectContaining({ field: 'APERTUS_GEMM' }));
    const before = process.env.APERTUS_GEMM;
    try {
      for (const [value, want] of [['simd', 'simd'], ['fma', 'relaxed']] as const) {
        process.env.APERTUS_GEMM = value;
        vi.resetModules();
        const fresh = (await import('./cpu')) as typeof import('./cpu');
        expect(fresh.gemmKernelInfo().variant).toBe(want);
        fresh.terminateGemmWorkers();
      }
    } finally {
      if (before === undefined) delete process.env.APERTUS_GEMM;
      else process.env.APERTUS_GEMM = before;
      vi.resetModules();
    }
  });

  test.each(['relaxed', 'simd'] as const)('%s matches the reference GEMM on odd shapes, transposes, alpha and beta, 1 and 2 threads', (v) => {
    setGemmVariant(v);
    for (const threads of [1, 2]) {
      setGemmThreads(threads);
      for (const [M, N, K, transA, transB] of [[7, 9, 33, false, false], [65, 130, 300, true, false], [3, 200, 129, false, true], [140, 90, 530, true, true]] as const) {
        const A = randomArray(M * K, M), B = randomArray(K * N, N), C = randomArray(M * N, K);
        const args = { transA, transB, M, N, K, A, B, C: C.slice(), alpha: 0.5, beta: -1 };
        const want = C.slice();
        sgemmReference({ ...args, C: want });
        sgemm(args);
        expect(worstRatio(args.C, want, errorBound(args))).toBeLessThanOrEqual(1);
      }
    }
  });

  test.each(['relaxed', 'simd'] as const)('attention and the fused loss on the %s GEMM agree with the reference kernels', (v) => {
    resetKernels();
    setGemmVariant(v);
    const r = new Rng(11);
    const h = Tensor.randn([20, 16], r).requireGrad(), w = Tensor.randn([50, 16], r, 0.3).requireGrad();
    const targets = Tensor.ints(Array.from({ length: 20 }, (_, i) => (i * 7) % 50));
    const cpu = linearCrossEntropy(h, w, targets);
    backward(cpu);
    const gh = Array.from(h.grad!.data);
    selectKernels('reference', ['gemm', 'linearCrossEntropy']);
    h.zeroGrad(); w.zeroGrad();
    const ref = linearCrossEntropy(h, w, targets);
    backward(ref);
    resetKernels();
    expect(Math.abs(cpu.item() - ref.item())).toBeLessThan(1e-5 * ref.item());
    expectClose(gh, h.grad!.data, 1e-4);
    const B = 1, T = 70, S = 70, nh = 2, nkv = 1, d = 8;
    const base = { B, T, S, nh, nkv, d, scale: 0.3, qOffset: 0, q: randomArray(T * nh * d, 1), k: randomArray(S * d, 2), v: randomArray(S * d, 3) };
    const mk = () => ({ ...base, out: new Float32Array(T * nh * d), lse: new Float32Array(nh * T) });
    const want = mk(), got = mk();
    jsKernels.attention(want);
    expect(kernelInfo('attention')?.impl).toBe('wasm');
    attentionKernel.run(got);
    expectClose(got.out, want.out, 1e-5);
  });
});
