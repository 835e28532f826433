import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { wasmApi } from '../../wasm/api';
import { heapRelease, scratchF32 } from '../../memory/heap';
import { expf, expShift, expShiftScalar, rowMax, rowMaxScalar, scaleRow, softmaxRowsModule } from './cpu-rows';

const f = Math.fround;
const bits = new Uint32Array(1);
const asF32 = new Float32Array(bits.buffer);
const MIN_NORMAL = 2 ** -126;

/** A heap copy of `xs` (so the SIMD path runs) and a plain copy (the scalar twin runs). */
function onHeap(xs: number[]): Float32Array {
  const a = scratchF32(xs.length);
  a.set(xs);
  return a;
}

describe('SIMD softmax rows (exp, max, scale)', () => {
  test('the module validates', () => {
    expect(wasmApi!.validate(softmaxRowsModule())).toBe(true);
  });

  test('expf against Math.exp over every 8191st f32 bit pattern (both signs, subnormal results, overflow)', () => {
    let maxRel = 0, maxSubAbs = 0;
    for (let u = 0; u < 2 ** 32; u += 8191) {
      bits[0] = u;
      const x = asF32[0]!;
      const got = expf(x), want = f(Math.exp(x));
      if (Number.isNaN(x)) { expect(got).toBeNaN(); continue; }
      if (!Number.isFinite(want)) { expect(got).toBe(want); continue; }
      if (want >= MIN_NORMAL) maxRel = Math.max(maxRel, Math.abs(got - want) / want);
      else maxSubAbs = Math.max(maxSubAbs, Math.abs(got - want));
    }
    // Two units in the last place of f32 on normal results, one subnormal step below them.
    expect(maxRel).toBeLessThan(2 * 2 ** -23);
    expect(maxSubAbs).toBeLessThanOrEqual(2 ** -149);
    expect([expf(-Infinity), expf(Infinity), expf(0), expf(-104), expf(88.72)]).toEqual([0, Infinity, 1, 0, f(Math.exp(88.72))]);
  });

  test('the SIMD module gives the bits of the scalar twin (odd lengths, −∞, extremes)', () => {
    const value = fc.oneof(
      fc.float({ min: -120, max: 100, noNaN: true }),
      fc.constantFrom(-Infinity, 0, -0, 88.7, -87.4, -103.9, 1e-40),
    );
    fc.assert(fc.property(fc.array(value, { minLength: 0, maxLength: 67 }), fc.float({ min: -20, max: 20, noNaN: true }), (xs, shift) => {
      const heap = onHeap(xs), plain = Float32Array.from(xs);
      expect(rowMax(heap, 0, xs.length)).toBe(rowMaxScalar(plain, 0, xs.length));
      const s1 = expShift(heap, 0, xs.length, shift);
      const s2 = expShiftScalar(plain, 0, xs.length, shift, plain, 0);
      expect(s1).toBe(s2);
      expect(Array.from(heap)).toEqual(Array.from(plain));
      for (let j = 0; j < xs.length; j++) {
        const want = f(Math.exp(f(f(xs[j]!) - f(shift))));
        if (want >= MIN_NORMAL && Number.isFinite(want)) expect(Math.abs(heap[j]! - want) / want).toBeLessThan(2.5 * 2 ** -23);
      }
      scaleRow(heap, 0, xs.length, 0.37);
      for (let j = 0; j < xs.length; j++) expect(heap[j]).toBe(f(plain[j]! * f(0.37)));
      heapRelease(heap);
    }), { numRuns: 300 });
  });

  test('offsets inside a row and the sum against double-precision Math.exp', () => {
    const xs = Array.from({ length: 1003 }, (_, i) => Math.sin(i) * 30);
    const heap = onHeap(xs);
    const m = rowMax(heap, 5, 990);
    expect(m).toBe(Math.max(...xs.slice(5, 995).map(f)));
    const s = expShift(heap, 5, 990, m);
    const ref = xs.slice(5, 995).reduce((a, x) => a + Math.exp(f(x) - m), 0);
    expect(Math.abs(s - ref) / ref).toBeLessThan(1e-7);
    expect(heap[4]).toBe(f(xs[4]!));
    expect(heap[995]).toBe(f(xs[995]!));
    heapRelease(heap);
  });
});
