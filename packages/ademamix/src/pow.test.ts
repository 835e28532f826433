import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { powInt } from './pow';

/** Exact base^n rounded once to double (ties to even), with BigInt. Normal range only. */
function exactPow(base: number, n: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, base);
  const hi = view.getUint32(0);
  const exp = (hi >>> 20) & 0x7ff;
  const m = ((BigInt(hi & 0xfffff) << 32n) | BigInt(view.getUint32(4))) | (1n << 52n);
  let e = (exp - 1075) * n;
  let p = m ** BigInt(n);
  const shift = p.toString(2).length - 53;
  if (shift > 0) {
    const rem = p & ((1n << BigInt(shift)) - 1n);
    const half = 1n << BigInt(shift - 1);
    p >>= BigInt(shift);
    if (rem > half || (rem === half && (p & 1n) === 1n)) p += 1n;
    e += shift;
  }
  return Number(p) * 2 ** e;
}

describe('powInt: correctly rounded β^t', () => {
  it('equals the exactly rounded power for random bases in (0.5, 1) and exponents ≤ 1000', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.5, max: 0.99999, noNaN: true }), fc.integer({ min: 0, max: 1000 }), (b, n) => {
        fc.pre(n * Math.log2(b) > -1000); // stay in the normal range (the reference does not round subnormals)
        expect(powInt(b, n)).toBe(exactPow(b, n));
      }),
      { numRuns: 300 },
    );
  });

  it('known values (Python fractions.Fraction, exact): 0.9^4, 0.999^2904, 0.999^100000', () => {
    expect(powInt(0.9, 4)).toBe(0.6561); // V8's 0.9 ** 4 gives 0.6561000000000001
    expect(powInt(0.999, 2904)).toBe(0.054723996727378245); // glibc's pow gives 0.05472399672737824
    expect(powInt(0.999, 100000)).toBe(exactPow(0.999, 100000));
    expect(powInt(0.9, 0)).toBe(1);
    expect(powInt(0, 3)).toBe(0);
  });

  it('rejects a negative or fractional exponent', () => {
    expect(() => powInt(0.9, -1)).toThrow(RangeError);
    expect(() => powInt(0.9, 1.5)).toThrow(RangeError);
  });
});
