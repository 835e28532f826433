import { afterAll, describe, expect, test } from 'vitest';
import { backward } from './autograd';
import { backendOf, kernel, setBackend } from './backend';
import { enableCpuFma } from './cpu-fma-backend';
import { sgemmReference } from './kernels/gemm/index';
import { errorBound, randomArray, worstRatio } from './kernels/gemm/test-util';
import { jsKernels } from './kernels/js/index';
import { linearCrossEntropy } from './ops/linear-cross-entropy';
import { sgemm } from './ops/matmul';
import { expectClose } from './ops/test-util';
import { Rng } from './random';
import { Tensor } from './tensor';

afterAll(() => setBackend('cpu'));

/** C = 1·(−1) + a·a with a = 1 + 2⁻¹²: a·a = 1 + 2⁻¹¹ + 2⁻²⁴ rounds (to even) to 1 + 2⁻¹¹ unless fused. */
function fmaProbe(): number {
  const a = 1 + 2 ** -12;
  const C = new Float32Array(1);
  sgemm({ transA: false, transB: false, M: 1, N: 1, K: 2, A: new Float32Array([1, a]), B: new Float32Array([-1, a]), C });
  return C[0]!;
}

describe('the cpu-fma backend (relaxed SIMD, enabled in-process on Node 20)', () => {
  test('is opt-in: the default cpu GEMM multiplies and adds separately, cpu-fma fuses', () => {
    expect(backendOf('gemm').name).toBe('cpu');
    expect(fmaProbe()).toBe(2 ** -11);
    expect(enableCpuFma().name).toBe('cpu-fma');
    for (const op of ['gemm', 'attention', 'attentionBackward', 'linearCrossEntropy'] as const) expect(backendOf(op).name).toBe('cpu-fma');
    expect(fmaProbe()).toBe(2 ** -11 + 2 ** -24);
  });

  test('matches the reference GEMM on odd shapes, transposes, alpha and beta, 1 and 2 threads', () => {
    enableCpuFma();
    for (const [M, N, K, transA, transB] of [[7, 9, 33, false, false], [65, 130, 300, true, false], [3, 200, 129, false, true], [140, 90, 530, true, true]] as const) {
      const A = randomArray(M * K, M), B = randomArray(K * N, N), C = randomArray(M * N, K);
      const args = { transA, transB, M, N, K, A, B, C: C.slice(), alpha: 0.5, beta: -1 };
      const want = C.slice();
      sgemmReference({ ...args, C: want });
      sgemm(args);
      expect(worstRatio(args.C, want, errorBound(args))).toBeLessThanOrEqual(1);
    }
  });

  test('attention and the fused loss on it agree with the reference kernels', () => {
    enableCpuFma();
    const r = new Rng(11);
    const h = Tensor.randn([20, 16], r).requireGrad(), w = Tensor.randn([50, 16], r, 0.3).requireGrad();
    const targets = Tensor.ints(Array.from({ length: 20 }, (_, i) => (i * 7) % 50));
    const fma = linearCrossEntropy(h, w, targets);
    backward(fma);
    const gh = Array.from(h.grad!.data);
    setBackend('js', ['gemm', 'linearCrossEntropy']);
    h.zeroGrad(); w.zeroGrad();
    const ref = linearCrossEntropy(h, w, targets);
    backward(ref);
    expect(Math.abs(fma.item() - ref.item())).toBeLessThan(1e-5 * ref.item());
    expectClose(gh, h.grad!.data, 1e-4);
    const B = 1, T = 70, S = 70, nh = 2, nkv = 1, d = 8;
    const base = { B, T, S, nh, nkv, d, scale: 0.3, qOffset: 0, q: randomArray(T * nh * d, 1), k: randomArray(S * d, 2), v: randomArray(S * d, 3) };
    const mk = () => ({ ...base, out: new Float32Array(T * nh * d), lse: new Float32Array(nh * T) });
    const want = mk(), got = mk();
    jsKernels.attention(want);
    enableCpuFma();
    expect(backendOf('attention').name).toBe('cpu-fma');
    kernel('attention')(got);
    expectClose(got.out, want.out, 1e-5);
  });
});
