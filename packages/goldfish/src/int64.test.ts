import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mulLimbs, signedMod, windowKeys, writeLimbs } from './int64';

const limbsOf = (v: bigint): number[] => {
  const u = BigInt.asUintN(64, v);
  return [0n, 16n, 32n, 48n].map((s) => Number((u >> s) & 0xffffn));
};
const safe = fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }));

describe('int64 limb arithmetic (against BigInt)', () => {
  it('writeLimbs gives the two’s-complement limbs of any safe integer', () => {
    fc.assert(
      fc.property(safe, (v) => {
        const out = new Uint16Array(4);
        writeLimbs(v, out, 0);
        expect(Array.from(out)).toEqual(limbsOf(BigInt(v)));
      }),
      { numRuns: 1000 },
    );
  });

  it('mulLimbs is multiplication mod 2^64 and signedMod the floor residue mod 1,000,003', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (a, b) => {
        const x = Uint16Array.from([...limbsOf(a), ...limbsOf(b)]);
        const out = new Uint16Array(4);
        mulLimbs(x, 0, x, 4, out, 0);
        const p = BigInt.asIntN(64, a * b);
        expect(Array.from(out)).toEqual(limbsOf(p));
        expect(signedMod(out, 0)).toBe(Number(((p % 1_000_003n) + 1_000_003n) % 1_000_003n));
      }),
      { numRuns: 1000 },
    );
  });

  it('windowKeys equals the product of each window, computed naively', () => {
    fc.assert(
      fc.property(fc.array(safe, { maxLength: 60 }), fc.integer({ min: 1, max: 20 }), fc.integer({ min: 0, max: 5 }), (row, h, offset) => {
        const padded = [...new Array<number>(offset).fill(3), ...row];
        const keys = new Int32Array(row.length);
        const n = windowKeys(padded, offset, row.length, h, keys);
        expect(n).toBe(Math.max(0, row.length - h + 1));
        for (let j = 0; j < n; j++) {
          let p = 1n;
          for (let i = j; i < j + h; i++) p = BigInt.asIntN(64, p * BigInt(row[i]!));
          expect(keys[j]).toBe(Number(((p % 1_000_003n) + 1_000_003n) % 1_000_003n));
        }
      }),
      { numRuns: 300 },
    );
  });
});
