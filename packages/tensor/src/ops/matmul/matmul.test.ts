import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { f32ArrayToBf16 } from '../../dtype';
import { ShapeError } from '../../errors';
import { Rng } from '../../random';
import { Tensor } from '../../tensor';
import { linear, matmul } from './index';
import { transpose } from '../view';
import { expectClose, expectGrads, param } from '../test-util';

/** float64 reference product of [.., M, K] and [.., K, N] (b broadcast when 2-D). */
function refMatmul(a: Tensor, b: Tensor): number[] {
  const A = a.materialize().data, B = b.materialize().data;
  const M = a.shape[a.rank - 2]!, K = a.shape[a.rank - 1]!, N = b.shape[b.rank - 1]!;
  const nb = a.size / (M * K), out: number[] = [];
  for (let i = 0; i < nb; i++) for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
    let s = 0;
    const bo = b.rank === 2 ? 0 : i * K * N;
    for (let k = 0; k < K; k++) s += A[i * M * K + m * K + k]! * B[bo + k * N + n]!;
    out.push(s);
  }
  return out;
}

describe('matmul', () => {
  test('batched, shared and transposed operands match a float64 reference (odd sizes)', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 19 }), fc.integer({ min: 1, max: 19 }), fc.integer({ min: 1, max: 19 }), fc.boolean(), fc.boolean(), fc.boolean(), fc.integer(),
      (nb, M, K, N, shared, ta, tb, seed) => {
        const r = new Rng(seed);
        const a = ta ? transpose(Tensor.randn([nb, K, M], r)) : Tensor.randn([nb, M, K], r);
        const b = shared ? (tb ? transpose(Tensor.randn([N, K], r)) : Tensor.randn([K, N], r)) : (tb ? transpose(Tensor.randn([nb, N, K], r)) : Tensor.randn([nb, K, N], r));
        expectClose(matmul(a, b).data, refMatmul(a, b), 1e-5);
      }), { numRuns: 80 });
  });
  test('gradients (plain, shared weight, transposed views)', () => {
    const rng = new Rng(2);
    expectGrads(([a, b]) => matmul(a!, b!), [param([2, 3, 5], rng), param([2, 5, 4], rng)], 1e-2, 1e-3);
    expectGrads(([a, b]) => matmul(a!, b!), [param([2, 3, 5], rng), param([5, 4], rng)], 1e-2, 1e-3);
    expectGrads(([a, b]) => matmul(transpose(a!), transpose(b!)), [param([5, 3], rng), param([4, 5], rng)], 1e-2, 1e-3);
  });
  test('shape errors name the operands', () => {
    expect(() => matmul(Tensor.zeros([2, 3]), Tensor.zeros([4, 2]))).toThrow(ShapeError);
  });
});

describe('linear', () => {
  test('x · Wᵀ with f32 and bf16 weights, and gradients', () => {
    const rng = new Rng(4);
    const x = param([2, 3, 6], rng), w = param([5, 6], rng);
    expectClose(linear(x, w).data, refMatmul(x, transpose(w)), 1e-5);
    expectGrads(([a, b]) => linear(a!, b!), [x, w], 1e-2, 1e-3);
    const wb = new Tensor(f32ArrayToBf16(w.data), [5, 6], 'bf16');
    expectClose(linear(x, wb).data, refMatmul(x, transpose(new Tensor(wb.toFloat32(), [5, 6], 'f32'))), 1e-5);
    expectGrads(([a]) => linear(a!, wb), [x], 1e-2, 1e-3);
  });
});
