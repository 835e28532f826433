import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from './dtype';

const f32 = (x: number) => Math.fround(x);
const fromBits = (u: number) => new Float32Array(Uint32Array.of(u).buffer)[0]!;

/** Nearest-even check: decode(r) is the closest representable value, ties go to the even pattern. */
function isNearestEven(x: number, r: number, decode: (h: number) => number): boolean {
  const v = decode(r);
  if (!Number.isFinite(v)) return true; // overflow handled by dedicated cases
  for (const n of [r - 1, r + 1]) {
    if (n < 0 || n > 0xffff || ((n ^ r) & 0x8000) !== 0) continue;
    const w = decode(n);
    if (!Number.isFinite(w) || Number.isNaN(w)) continue;
    const dv = Math.abs(x - v), dw = Math.abs(x - w);
    if (dw < dv) return false;
    if (dw === dv && (r & 1) === 1) return false;
  }
  return true;
}

describe('bf16', () => {
  test('known values (torch.tensor(x).bfloat16() bit patterns)', () => {
    expect(f32ToBf16Bits(1)).toBe(0x3f80);
    expect(f32ToBf16Bits(-2)).toBe(0xc000);
    expect(f32ToBf16Bits(f32(Math.PI))).toBe(0x4049); // 3.140625
    expect(f32ToBf16Bits(f32(0.1))).toBe(0x3dcd);
    expect(f32ToBf16Bits(fromBits(0x3f808000))).toBe(0x3f80); // tie → even (down)
    expect(f32ToBf16Bits(fromBits(0x3f818000))).toBe(0x3f82); // tie → even (up)
    expect(f32ToBf16Bits(fromBits(0x7f7fffff))).toBe(0x7f80); // max f32 rounds to +Inf
    expect(f32ToBf16Bits(NaN)).toBe(0x7fc0);
    expect(f32ToBf16Bits(Infinity)).toBe(0x7f80);
    expect(bf16BitsToF32(0x4049)).toBe(3.140625);
  });
  test('every non-NaN pattern round-trips', () => {
    for (let h = 0; h < 0x10000; h++) {
      const v = bf16BitsToF32(h);
      if (Number.isNaN(v)) continue;
      expect(f32ToBf16Bits(v)).toBe(h);
    }
  });
  test('rounds to nearest even (property)', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 0x7f7effff }), fc.boolean(), (u, s) => {
      const x = fromBits(s ? (u | 0x80000000) >>> 0 : u);
      return isNearestEven(x, f32ToBf16Bits(x), bf16BitsToF32);
    }), { numRuns: 20000 });
  });
});

describe('f16', () => {
  test('known values (numpy.float16 bit patterns)', () => {
    expect(f32ToF16Bits(1)).toBe(0x3c00);
    expect(f32ToF16Bits(65504)).toBe(0x7bff);
    expect(f32ToF16Bits(65520)).toBe(0x7c00); // halfway to the next binade → Inf
    expect(f32ToF16Bits(65519)).toBe(0x7bff);
    expect(f32ToF16Bits(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(f32ToF16Bits(2 ** -25)).toBe(0x0000); // tie → even (0)
    expect(f32ToF16Bits(f32(3 * 2 ** -25))).toBe(0x0002); // tie between 1 and 2 → even
    expect(f32ToF16Bits(2 ** -14)).toBe(0x0400); // smallest normal
    expect(f32ToF16Bits(f32(0.1))).toBe(0x2e66);
    expect(f32ToF16Bits(-0)).toBe(0x8000);
    expect(f16BitsToF32(0x2e66)).toBe(f32(0.0999755859375));
    expect(Number.isNaN(f16BitsToF32(f32ToF16Bits(NaN)))).toBe(true);
  });
  test('every non-NaN pattern round-trips', () => {
    for (let h = 0; h < 0x10000; h++) {
      const v = f16BitsToF32(h);
      if (Number.isNaN(v)) continue;
      expect(f32ToF16Bits(v)).toBe(h);
    }
  });
  test('rounds to nearest even (property)', () => {
    fc.assert(fc.property(fc.float({ min: -65000, max: 65000, noNaN: true }), (x) => {
      const fx = f32(x);
      return isNearestEven(fx, f32ToF16Bits(fx), f16BitsToF32);
    }), { numRuns: 20000 });
  });
});
