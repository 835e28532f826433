import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { kernelInfo } from '../../registry';
import { sgemm, sgemmBf16 } from '.';
import { terminateGemmWorkers } from './cpu';
import { GEMM_BACKENDS, ODD_SIZES, errorBound, randomArray, useGemm, worstRatio } from './test-util';

afterAll(() => {
  useGemm('cpu relaxed 2 threads');
  terminateGemmWorkers();
});

/** Round-to-nearest-even f32 -> bf16 bits (independent of the kernels, which only widen). */
function toBf16(x: Float32Array): Uint16Array {
  const u = new Uint32Array(x.buffer, x.byteOffset, x.length);
  return Uint16Array.from(u, (b) => (b + 0x7fff + ((b >>> 16) & 1)) >>> 16);
}

/** bf16 bits -> f32, the conversion sgemmBf16 promises (`bits << 16`). */
function widen(b: Uint16Array): Float32Array {
  return new Float32Array(Uint32Array.from(b, (x) => x << 16).buffer);
}

const size = fc.oneof(fc.constantFrom(...ODD_SIZES), fc.integer({ min: 1, max: 70 }));

describe.each(GEMM_BACKENDS)('sgemmBf16 on %s', (backend) => {
  it('equals sgemm on the widened B (all transposes, alpha, beta)', () => {
    useGemm(backend);
    fc.assert(
      fc.property(
        fc.record({ M: size, N: size, K: size, transA: fc.boolean(), transB: fc.boolean(), beta: fc.constantFrom(0, 1, 0.5), seed: fc.nat() }),
        ({ M, N, K, transA, transB, beta, seed }) => {
          const A = randomArray(M * K, seed + 1);
          const Bh = toBf16(randomArray(K * N, seed + 2));
          const C0 = randomArray(M * N, seed + 3);
          const got = C0.slice(), want = C0.slice();
          sgemmBf16({ transA, transB, M, N, K, A, B: Bh, C: got, alpha: -1.25, beta });
          const args = { transA, transB, M, N, K, A, B: widen(Bh), C: C0, alpha: -1.25, beta };
          sgemm({ ...args, C: want });
          expect(kernelInfo('gemm')?.impl).toBe(backend === 'js' ? 'reference' : 'wasm');
          // Both results are f32 GEMMs of the same values; only the summation order may differ.
          expect(worstRatio(got, want, errorBound(args).map((b) => 2 * b))).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('handles decode-sized x * W^T with a bf16 weight (the unpacked dot path) and big products', () => {
    useGemm(backend);
    for (const [M, N, K] of [[1, 777, 300], [5, 1000, 513], [64, 300, 200]] as const) {
      const A = randomArray(M * K, M), W = toBf16(randomArray(N * K, N));
      const got = new Float32Array(M * N), want = new Float32Array(M * N);
      sgemmBf16({ transA: false, transB: true, M, N, K, A, B: W, C: got });
      const args = { transA: false, transB: true, M, N, K, A, B: widen(W), C: want };
      sgemm(args);
      expect(worstRatio(got, want, errorBound(args).map((b) => 2 * b))).toBeLessThanOrEqual(1);
    }
  });
});

it('widens bf16 exactly: powers of two and signed values through a 1 x 1 x 1 product', () => {
  useGemm('cpu relaxed 1 thread');
  const values = [1, -2, 0.5, 3.140625, -65536, 1e-3];
  for (const v of values) {
    const C = new Float32Array(1);
    sgemmBf16({ transA: false, transB: false, M: 1, N: 1, K: 1, A: new Float32Array([1]), B: toBf16(new Float32Array([v])), C });
    expect(C[0]).toBe(widen(toBf16(new Float32Array([v])))[0]);
  }
});
