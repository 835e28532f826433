import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clipGradNorm, gradNorm } from './clip';
import { OptimizerError } from './errors';
import type { FloatArray, OptimParam } from './types';

function withGrad(g: number[], ctor: Float32ArrayConstructor | Float64ArrayConstructor = Float64Array): OptimParam & { grad: { data: FloatArray } } {
  const data: FloatArray = ctor.from(g);
  return { shape: [g.length], data: new ctor(g.length), grad: { data } };
}

describe('clipGradNorm (global L2 norm, coef = max/(norm + 1e-6) applied when < 1)', () => {
  it('hand example: grads [3, 4] and [12] have norm 13; max 1.3 scales by 1.3/(13 + 1e-6)', () => {
    const a = withGrad([3, 4]);
    const b = withGrad([12]);
    const norm = clipGradNorm([a, b], 1.3);
    expect(norm).toBe(13);
    const coef = 1.3 / (13 + 1e-6);
    expect([...a.grad.data]).toEqual([3 * coef, 4 * coef]);
    expect([...b.grad.data]).toEqual([12 * coef]);
  });

  it('leaves gradients alone when the norm is below the threshold (coef ≥ 1), returns the norm', () => {
    const a = withGrad([0.03, 0.04]);
    expect(clipGradNorm([['a', a]], 0.1)).toBeCloseTo(0.05, 16);
    expect([...a.grad.data]).toEqual([0.03, 0.04]);
  });

  it('against a direct computation on random gradients (float64 and float32, null grads skipped)', () => {
    const g = fc.array(fc.double({ min: -10, max: 10, noNaN: true }), { minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(fc.array(g, { minLength: 1, maxLength: 4 }), fc.double({ min: 0.01, max: 20, noNaN: true }), fc.boolean(), (grads, maxNorm, f32) => {
        const ctor = f32 ? Float32Array : Float64Array;
        const params = grads.map((x) => withGrad(x, ctor));
        const skipped: OptimParam = { shape: [1], data: new Float64Array(1), grad: null };
        const before = params.map((p) => [...p.grad.data]);
        const direct = Math.sqrt(before.flat().reduce((s, v) => s + v * v, 0));
        const norm = clipGradNorm([...params, skipped], maxNorm);
        expect(norm).toBeCloseTo(direct, 10);
        const coef = maxNorm / (direct + 1e-6);
        params.forEach((p, i) =>
          p.grad.data.forEach((v, j) => {
            const want = coef < 1 ? before[i]![j]! * coef : before[i]![j]!;
            expect(Math.abs(v - want)).toBeLessThanOrEqual(f32 ? 1e-6 * Math.abs(want) + 1e-30 : 1e-15 * Math.abs(want));
          }),
        );
        if (coef < 1) expect(gradNorm(params)).toBeLessThanOrEqual(maxNorm * (1 + 1e-6));
      }),
      { numRuns: 300 },
    );
  });

  it('rejects a non-positive or non-finite threshold with a typed error', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => clipGradNorm([withGrad([1])], bad)).toThrowError(expect.objectContaining({ code: 'InvalidClip', field: 'maxNorm' }) as Error);
    }
    expect(() => clipGradNorm([withGrad([1])], -1)).toThrowError(OptimizerError);
  });

  it('a non-finite norm is returned and nothing is scaled', () => {
    const a = withGrad([Number.POSITIVE_INFINITY, 1]);
    expect(clipGradNorm([a], 1)).toBe(Number.POSITIVE_INFINITY);
    expect(a.grad.data[1]).toBe(1);
  });
});
