import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BATCH_K3_H7, BATCH_K4_H4, BATCH_K50_H50, BATCH_ROWS, SPEC_K4_H13, SPEC_K4_H4, SPEC_K50_H50 } from '../test/torch-golden';
import { GoldfishError } from './errors';
import { goldfishHashTable } from './hash-table';
import { APERTUS_GOLDFISH, combineMasks, goldfishMask, keptCount, toFloatMask } from './mask';

const dropped = (mask: Uint8Array, from = 0, to = mask.length): number[] => {
  const out: number[] = [];
  for (let i = from; i < to; i++) if (mask[i] === 0) out.push(i - from);
  return out;
};

/** Independent reference: BigInt int64 products, as §2.3 describes (`BigInt.asIntN(64, p * tok)`). */
function referenceDropped(row: readonly number[], k: number, h: number): number[] {
  const table = goldfishHashTable();
  const M = 1_000_003n;
  const out: number[] = [];
  for (let i = h - 1; i < row.length; i++) {
    let p = 1n;
    for (let j = i - h + 1; j <= i; j++) p = BigInt.asIntN(64, p * BigInt(row[j]!));
    const key = Number(((p % M) + M) % M);
    if (table[key]! < Math.fround(1 / k)) out.push(i);
  }
  return out;
}

// §2.5: labels[i] = (i·7919 + 13) mod 131072, i = 0 … 399.
const SPEC = Array.from({ length: 400 }, (_, i) => (i * 7919 + 13) % 131072);

describe('hash-table mask: spec vectors (training-recipe.md §2.5)', () => {
  it('k = 50, h = 50 drops exactly [227, 235, 287, 347, 351]', () => {
    expect(dropped(goldfishMask(SPEC, { goldfishK: 50, goldfishH: 50 }))).toEqual([227, 235, 287, 347, 351]);
    expect(dropped(goldfishMask(Int32Array.from(SPEC), APERTUS_GOLDFISH))).toEqual([227, 235, 287, 347, 351]);
  });
  it('k = 4, h = 4: first 20 as printed, 101 in total', () => {
    const d = dropped(goldfishMask(SPEC, { goldfishK: 4, goldfishH: 4 }));
    expect(d.slice(0, 20)).toEqual([4, 8, 10, 21, 24, 28, 31, 32, 34, 36, 42, 48, 51, 52, 63, 64, 67, 70, 72, 86]);
    expect(d.length).toBe(101);
  });
  it('k = 4, h = 13: first 20 as printed, 104 in total', () => {
    const d = dropped(goldfishMask(SPEC, { goldfishK: 4, goldfishH: 13 }));
    expect(d.slice(0, 20)).toEqual([15, 16, 18, 19, 20, 22, 26, 33, 36, 37, 38, 39, 46, 48, 50, 54, 59, 62, 66, 76]);
    expect(d.length).toBe(104);
  });
  it('window 0: int64 product −6122925168386899968 → key 499033 → 0.2351139784 (not dropped)', () => {
    let p = 1n;
    for (const t of SPEC.slice(0, 50)) p = BigInt.asIntN(64, p * BigInt(t));
    expect(p).toBe(-6122925168386899968n);
    expect(Number(((p % 1_000_003n) + 1_000_003n) % 1_000_003n)).toBe(499033);
    expect(goldfishMask(SPEC, { goldfishK: 50, goldfishH: 50 })[49]).toBe(1);
  });
  it('complete dropped lists equal the torch reference (test/golden.py)', () => {
    expect(dropped(goldfishMask(SPEC, { goldfishK: 50, goldfishH: 50 }))).toEqual(SPEC_K50_H50);
    expect(dropped(goldfishMask(SPEC, { goldfishK: 4, goldfishH: 4 }))).toEqual(SPEC_K4_H4);
    expect(dropped(goldfishMask(SPEC, { goldfishK: 4, goldfishH: 13 }))).toEqual(SPEC_K4_H13);
  });
});

describe('hash-table mask: batches, negative and large ids (torch golden)', () => {
  const L = BATCH_ROWS[0]!.length;
  for (const [k, h, gold] of [
    [4, 4, BATCH_K4_H4],
    [3, 7, BATCH_K3_H7],
    [50, 50, BATCH_K50_H50],
  ] as const) {
    it(`[3, ${L}] rows, k = ${k}, h = ${h}: nested rows and flat + shape agree with torch`, () => {
      const nested = goldfishMask(BATCH_ROWS, { goldfishK: k, goldfishH: h });
      const flat = goldfishMask(BATCH_ROWS.flat(), { goldfishK: k, goldfishH: h, shape: [BATCH_ROWS.length, L] });
      expect(flat).toEqual(nested);
      BATCH_ROWS.forEach((_, b) => expect(dropped(nested, b * L, (b + 1) * L)).toEqual(gold[b]));
    });
  }

  it('agrees with a BigInt implementation on random rows (ids from any int32, h from 1 to 70)', () => {
    const id = fc.oneof(fc.integer({ min: 0, max: 131071 }), fc.integer({ min: -2147483648, max: 2147483647 }), fc.constantFrom(0, -1, -100, 2, 1 << 16));
    fc.assert(
      fc.property(fc.array(id, { minLength: 0, maxLength: 160 }), fc.integer({ min: 1, max: 70 }), fc.constantFrom(1, 2, 3, 4, 50), (row, h, k) => {
        const mask = goldfishMask(row, { goldfishK: k, goldfishH: h });
        expect(dropped(mask)).toEqual(referenceDropped(row, k, h));
        for (let i = 0; i < Math.min(h - 1, row.length); i++) expect(mask[i]).toBe(1);
      }),
      { numRuns: 300 },
    );
  });

  it('exact for ids beyond int32 (safe integers up to ±2^53) too', () => {
    const big = fc.oneof(fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }), fc.integer({ min: 2 ** 31, max: 2 ** 40 }));
    fc.assert(
      fc.property(fc.array(big, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 9 }), (row, h) => {
        expect(dropped(goldfishMask(row, { goldfishK: 2, goldfishH: h }))).toEqual(referenceDropped(row, 2, h));
      }),
      { numRuns: 200 },
    );
  });
});

describe('hash-table mask: drop rate', () => {
  // n kept/dropped Bernoulli trials with p = 1/k: the count has standard deviation sqrt(n·p·(1−p)).
  // Windows overlap, but distinct windows of random ids give (almost surely) distinct products, so
  // the table lookups behave as independent draws; we allow 5 standard deviations (two-sided
  // probability of a false failure < 1e-6 under the normal approximation). The ids are drawn with a
  // fixed seed, so the test is deterministic anyway.
  function randomRows(seed: number, rows: number, len: number, maxId: number): Int32Array {
    let s = seed >>> 0;
    const out = new Int32Array(rows * len);
    for (let i = 0; i < out.length; i++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0; // LCG, then use the high bits
      out[i] = 1 + Math.floor((s / 2 ** 32) * (maxId - 1));
    }
    return out;
  }
  function expectRate(k: number, h: number, want: number, seed: number): void {
    const rows = 64, len = 4096;
    const labels = randomRows(seed, rows, len, 131072);
    const mask = goldfishMask(labels, { goldfishK: k, goldfishH: h, shape: [rows, len] });
    const n = rows * (len - h + 1);
    const drops = mask.length - keptCount(mask);
    const sd = Math.sqrt(n * want * (1 - want));
    expect(Math.abs(drops - n * want)).toBeLessThan(5 * sd);
  }
  it('h = 13: ≈ 1/k (k = 4 and k = 50)', () => {
    expectRate(4, 13, 1 / 4, 1);
    expectRate(50, 13, 1 / 50, 2);
  });
  it('h = 50, k = 50: ≈ 1.63%, below the nominal 2%, as the spec measured (§2.4)', () => {
    // With h = 50, ~9.1% of window products contain ≥ 64 factors of two, so they are 0 mod 2^64 →
    // key 0 → table[0] = 0.2337 → never dropped; products with many (< 64) factors of two fall on
    // few keys as well. Both effects are properties of the reference that a port must keep. Windows
    // overlap, so the per-window draws are not independent and the binomial bound above does not
    // apply; the batch is fixed (seeded), and the tolerance ±0.15 percentage points is ~4× the
    // spread we saw between different seeds (1.595%–1.630%).
    const rows = 64, len = 4096;
    const labels = randomRows(3, rows, len, 131072);
    const mask = goldfishMask(labels, { goldfishK: 50, goldfishH: 50, shape: [rows, len] });
    const n = rows * (len - 49);
    const rate = (mask.length - keptCount(mask)) / n;
    expect(Math.abs(rate - 0.0163)).toBeLessThan(0.0015);
    // the zero-product share, counted independently from the factors of two of each window
    let zero = 0;
    for (let b = 0; b < rows; b++) {
      for (let i = 49; i < len; i++) {
        let twos = 0;
        for (let j = i - 49; j <= i; j++) twos += 31 - Math.clz32(labels[b * len + j]! & -labels[b * len + j]!);
        if (twos >= 64) {
          zero++;
          expect(mask[b * len + i]).toBe(1);
        }
      }
    }
    expect(Math.abs(zero / n - 0.091)).toBeLessThan(0.01);
  });
});

describe('static strategy, ignore index, helpers, bad input', () => {
  it('static drops start, start + k, … in every row', () => {
    const m = goldfishMask([[5, 5, 5, 5, 5, 5, 5], [1, 2, 3, 4, 5, 6, 7]], { strategy: 'static', goldfishK: 3 });
    expect(Array.from(m)).toEqual([0, 1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0]);
    const s = goldfishMask(new Array<number>(10).fill(9), { strategy: 'static', goldfishK: 4, goldfishStart: 2 });
    expect(dropped(s)).toEqual([2, 6]);
  });

  it('ignoreIndex positions get keep 0 while their raw value still enters the products', () => {
    const row = SPEC.slice(0, 120).map((v, i) => (i % 10 === 7 ? -1 : v));
    const m = goldfishMask(row, { goldfishK: 4, goldfishH: 4, ignoreIndex: -1 });
    const hashed = referenceDropped(row, 4, 4);
    const ignored = row.flatMap((v, i) => (v === -1 ? [i] : []));
    expect(dropped(m)).toEqual([...new Set([...hashed, ...ignored])].sort((a, b) => a - b));
  });

  it('rows shorter than h are kept entirely; empty input gives an empty mask', () => {
    expect(Array.from(goldfishMask([1, 2, 3], { goldfishK: 1, goldfishH: 4 }))).toEqual([1, 1, 1]);
    expect(goldfishMask([], { goldfishK: 2 }).length).toBe(0);
    // k = 1 drops every position from h − 1 on (table values are < 1)
    expect(Array.from(goldfishMask([7, 8, 9, 10], { goldfishK: 1, goldfishH: 2 }))).toEqual([1, 0, 0, 0]);
  });

  it('combineMasks / keptCount / toFloatMask', () => {
    const eod = new Float32Array([1, 1, 1, 0, 1, 1, 0, 1, 1]); // §4.4 example loss mask
    const gf = Uint8Array.from([1, 0, 1, 1, 1, 1, 1, 1, 0]);
    const both = combineMasks(gf, eod);
    expect(Array.from(both)).toEqual([1, 0, 1, 0, 1, 1, 0, 1, 0]);
    expect(keptCount(both)).toBe(5);
    expect(Array.from(toFloatMask(both))).toEqual([1, 0, 1, 0, 1, 1, 0, 1, 0]);
    expect(() => combineMasks(gf, [1, 0])).toThrowError(expect.objectContaining({ code: 'LengthMismatch' }) as Error);
  });

  it('bad options and labels raise GoldfishError naming the field', () => {
    const cases: Array<[() => unknown, string, string]> = [
      [() => goldfishMask([1, 2], { goldfishK: 0 }), 'InvalidOption', 'goldfishK'],
      [() => goldfishMask([1, 2], { goldfishH: 2.5 }), 'InvalidOption', 'goldfishH'],
      [() => goldfishMask([1, 2], { strategy: 'seeded_random' as never }), 'InvalidOption', 'strategy'],
      [() => goldfishMask([1, 2, 3], { shape: [2, 2] }), 'InvalidOption', 'shape'],
      [() => goldfishMask([1, 2.5, 3]), 'InvalidLabel', 'labels'],
      [() => goldfishMask([[1, 2], [3]]), 'LengthMismatch', 'labels'],
    ];
    for (const [f, code, field] of cases) {
      let err: unknown;
      try {
        f();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(GoldfishError);
      expect([(err as GoldfishError).code, (err as GoldfishError).field]).toEqual([code, field]);
    }
    expect(() => goldfishMask([1, Number.NaN])).toThrowError(expect.objectContaining({ index: 1 }) as Error);
  });
});
