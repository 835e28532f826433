// Bounded numbers: numberComplete and numberCost against an independent enumeration. Every
// number the decoder may write with magnitude below 20 and up to three fraction digits is listed;
// for each prefix with at most two fraction digits, the fewest bytes to an in-range number must be
// the shortest listed in-range number with that prefix (the ranges are chosen so that such a
// completion is always listed).

import { describe, expect, test } from 'vitest';
import { decimalOf, numberComplete, numberCost, type NumberBounds } from './json-number';

const texts: string[] = [];
for (const sign of ['', '-']) {
  for (let i = 0; i < 20; i++) {
    texts.push(`${sign}${i}`);
    for (let digits = 1; digits <= 3; digits++) for (let f = 0; f < 10 ** digits; f++) texts.push(`${sign}${i}.${String(f).padStart(digits, '0')}`);
  }
}

function bounds(integer: boolean, lo: number | null, loOpen: boolean, hi: number | null, hiOpen: boolean): NumberBounds {
  return { integer, lo: lo === null ? null : decimalOf(lo), loOpen, hi: hi === null ? null : decimalOf(hi), hiOpen };
}

const inRange = (v: number, b: { lo: number; loOpen: boolean; hi: number; hiOpen: boolean }) =>
  (b.loOpen ? v > b.lo : v >= b.lo) && (b.hiOpen ? v < b.hi : v <= b.hi);

describe('bounded numbers', () => {
  test.each([
    ['integer [8, 12]', true, 8, false, 12, false],
    ['integer [-3, 3]', true, -3, false, 3, false],
    ['integer (-10, -7)', true, -10, true, -7, true],
    ['number (0, 1.5]', false, 0, true, 1.5, false],
    ['number [-5.25, -0.5)', false, -5.25, false, -0.5, true],
    ['number [10.5, 11]', false, 10.5, false, 11, false],
    ['number (0.25, 0.26)', false, 0.25, true, 0.26, true],
    ['number [0.1, 0.1]', false, 0.1, false, 0.1, false],
  ])('%s: completeness and cost of every prefix agree with the enumeration', (_name, integer, lo, loOpen, hi, hiOpen) => {
    const b = bounds(integer, lo, loOpen, hi, hiOpen);
    const range = { lo, loOpen, hi, hiOpen };
    const best = new Map<string, number>();
    for (const t of texts) {
      if (integer && t.includes('.')) continue;
      const ok = inRange(Number(t), range);
      expect([t, numberComplete(t, b)]).toEqual([t, ok]);
      if (!ok) continue;
      for (let k = 0; k <= t.length; k++) {
        const p = t.slice(0, k), c = t.length - k;
        if (!best.has(p) || best.get(p)! > c) best.set(p, c);
      }
    }
    const prefixes = new Set<string>();
    for (const t of texts) for (let k = 0; k <= Math.min(t.length, 6); k++) if (!/\.\d{3}/.test(t.slice(0, k))) prefixes.add(t.slice(0, k));
    for (const p of prefixes) expect([p, numberCost(p, b)]).toEqual([p, best.get(p) ?? Infinity]);
    for (const junk of ['01', '-', '--1', '1.', '.5', '1e3', '+1', '0x1']) expect(numberCost(junk, b) === Infinity || prefixes.has(junk)).toBe(true);
  });

  test('one-sided and exact decimal bounds', () => {
    const atLeast1000 = bounds(true, 1000, false, null, false);
    expect(numberCost('', atLeast1000)).toBe(4);
    expect(numberCost('9', atLeast1000)).toBe(3); // 9000
    expect(numberCost('-', atLeast1000)).toBe(Infinity);
    const positive = bounds(false, 0, true, null, false);
    expect(numberCost('0', positive)).toBe(2); // 0.1
    expect(numberComplete('0', positive)).toBe(false);
    // 0.1 is the decimal 0.1, not the double nearest to it.
    const above = bounds(false, 0.1, true, null, false);
    expect(numberComplete('0.1', above)).toBe(false);
    expect(numberComplete('0.10000000000000001', above)).toBe(true);
    expect(decimalOf(1e21)).toEqual({ m: 1n, e: 21 });
    expect(decimalOf(-1.5e-7)).toEqual({ m: -15n, e: -8 });
  });
});
