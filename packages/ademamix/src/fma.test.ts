import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fmaF32, fmaF64 } from './fma';

// Exact reference: a·b + c as an integer times a power of two (BigInt), rounded once to a
// `precision`-bit significand with ties to even. Inputs stay far from overflow and subnormals.
function decompose(x: number): [bigint, number] {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const exp = (hi >>> 20) & 0x7ff;
  let m = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  if (exp !== 0) m |= 1n << 52n;
  const e = exp === 0 ? -1074 : exp - 1075;
  return [hi >>> 31 ? -m : m, e];
}

function exactFma(a: number, b: number, c: number, precision: number): number {
  const [ma, ea] = decompose(a);
  const [mb, eb] = decompose(b);
  const [mc, ec] = decompose(c);
  const ep = ea + eb;
  let e = Math.min(ep, ec);
  const sum = ((ma * mb) << BigInt(ep - e)) + (mc << BigInt(ec - e));
  if (sum === 0n) return a * b + c; // signed zero as IEEE gives it
  const neg = sum < 0n;
  let m = neg ? -sum : sum;
  const shift = m.toString(2).length - precision;
  if (shift > 0) {
    const rem = m & ((1n << BigInt(shift)) - 1n);
    const half = 1n << BigInt(shift - 1);
    m >>= BigInt(shift);
    if (rem > half || (rem === half && (m & 1n) === 1n)) m += 1n;
    e += shift;
  }
  const r = Number(m) * 2 ** e;
  return neg ? -r : r;
}

const f32 = fc.float({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }).filter((x) => x === 0 || Math.abs(x) > 1e-6);
const f64 = fc.double({ min: -1e12, max: 1e12, noNaN: true, noDefaultInfinity: true }).filter((x) => x === 0 || Math.abs(x) > 1e-12);

/** a·b lands within a few units of 2^-precision of half an ulp of c: the cases where double rounding bites. */
function nearTie(precision: number, round: (x: number) => number) {
  return fc.record({
    c: precision === 24 ? f32.filter((x) => x !== 0) : f64.filter((x) => x !== 0),
    i: fc.integer({ min: -8, max: 8 }),
    j: fc.integer({ min: -8, max: 8 }),
    sign: fc.constantFrom(1, -1),
  }).map(({ c, i, j, sign }) => {
    const halfUlp = 2 ** (Math.floor(Math.log2(Math.abs(c))) - precision);
    const a = round(halfUlp * (1 + i * 2 ** (1 - precision)));
    const b = round(sign * (1 + j * 2 ** (1 - precision)));
    return [a, b, c] as const;
  });
}

describe('fmaF32: correctly rounded float32 fused multiply-add', () => {
  it('matches exact BigInt arithmetic on random float32 triples', () => {
    fc.assert(fc.property(f32, f32, f32, (a, b, c) => {
      expect(fmaF32(a, b, c)).toBe(exactFma(a, b, c, 24));
    }), { numRuns: 5000 });
  });
  it('matches on near-tie triples where rounding the double sum to float32 would be wrong', () => {
    fc.assert(fc.property(nearTie(24, Math.fround), ([a, b, c]) => {
      expect(fmaF32(a, b, c)).toBe(exactFma(a, b, c, 24));
    }), { numRuns: 5000 });
  });
  it('the near-tie generator does produce cases where fround(a*b + c) is wrong', () => {
    const wrong = fc.sample(nearTie(24, Math.fround), { numRuns: 2000, seed: 1 }).filter(([a, b, c]) => Math.fround(a * b + c) !== exactFma(a, b, c, 24));
    expect(wrong.length).toBeGreaterThan(0);
  });
  it('a hand-made case: 2^-24(1+2^-23)·(1−2^-23) + (1+2^-23) rounds down, not to even', () => {
    const a = 2 ** -24 * (1 + 2 ** -23);
    const b = 1 - 2 ** -23;
    const c = 1 + 2 ** -23;
    expect(Math.fround(a * b + c)).toBe(1 + 2 ** -22); // naive: the double sum is a float32 tie
    expect(fmaF32(a, b, c)).toBe(1 + 2 ** -23);
  });
});

describe('fmaF64: correctly rounded float64 fused multiply-add', () => {
  it('matches exact BigInt arithmetic on random double triples', () => {
    fc.assert(fc.property(f64, f64, f64, (a, b, c) => {
      expect(fmaF64(a, b, c)).toBe(exactFma(a, b, c, 53));
    }), { numRuns: 5000 });
  });
  it('matches on near-tie triples', () => {
    fc.assert(fc.property(nearTie(53, (x) => x), ([a, b, c]) => {
      expect(fmaF64(a, b, c)).toBe(exactFma(a, b, c, 53));
    }), { numRuns: 5000 });
  });
  it('the near-tie generator does produce cases where a*b + c is wrong', () => {
    const wrong = fc.sample(nearTie(53, (x) => x), { numRuns: 2000, seed: 1 }).filter(([a, b, c]) => a * b + c !== exactFma(a, b, c, 53));
    expect(wrong.length).toBeGreaterThan(10);
  });
  it('keeps the low part a plain multiply-add loses: (1+2^-30)² − (1+2^-29) = 2^-60', () => {
    const a = 1 + 2 ** -30;
    expect(a * a - (1 + 2 ** -29)).toBe(0);
    expect(fmaF64(a, a, -(1 + 2 ** -29))).toBe(2 ** -60);
  });
});
