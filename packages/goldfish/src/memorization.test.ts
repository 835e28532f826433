import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { exactMatch, lcsNorm, longestCommonSubsequence, longestCommonSubstring, rougeL, typeTokenRatio } from './memorization';

/** Brute force: longest contiguous run of `a` that occurs in `b`. */
function bruteSubstring(a: number[], b: number[]): number {
  let best = 0;
  for (let i = 0; i < a.length; i++) {
    for (let j = i + 1; j <= a.length; j++) {
      const s = a.slice(i, j);
      for (let o = 0; o + s.length <= b.length; o++) if (s.every((v, q) => b[o + q] === v)) best = Math.max(best, s.length);
    }
  }
  return best;
}

/** Brute force: largest subset of `a`'s positions whose ids form a subsequence of `b`. */
function bruteSubsequence(a: number[], b: number[]): number {
  let best = 0;
  for (let mask = 0; mask < 1 << a.length; mask++) {
    const sub = a.filter((_, i) => (mask >> i) & 1);
    let j = 0;
    for (const v of b) if (j < sub.length && sub[j] === v) j++;
    if (j === sub.length) best = Math.max(best, sub.length);
  }
  return best;
}

const ids = fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 10 });

describe('memorization metrics (training-recipe.md §2.6)', () => {
  it('longest common substring equals brute force', () => {
    fc.assert(
      fc.property(ids, ids, (a, b) => {
        expect(longestCommonSubstring(a, b)).toBe(bruteSubstring(a, b));
        expect(longestCommonSubstring(Int32Array.from(b), a)).toBe(bruteSubstring(a, b));
      }),
      { numRuns: 500 },
    );
  });

  it('longest common subsequence equals brute force', () => {
    fc.assert(
      fc.property(ids, ids, (a, b) => {
        expect(longestCommonSubsequence(a, b)).toBe(bruteSubsequence(a, b));
      }),
      { numRuns: 500 },
    );
  });

  it('Rouge-L F1 and lcs_norm by hand, with the reference edge cases', () => {
    const ref = [1, 2, 3, 4, 5, 6];
    const gen = [1, 2, 9, 4, 5, 6, 7, 8];
    // LCS subsequence = [1, 2, 4, 5, 6] (5): P = 5/8, R = 5/6, F1 = 2PR/(P+R) = 5/7
    expect(rougeL(ref, gen)).toBeCloseTo(5 / 7, 15);
    // longest common substring = [4, 5, 6] (3) → 3/6
    expect(lcsNorm(ref, gen)).toBe(0.5);
    expect(rougeL([], gen)).toBe(0);
    expect(rougeL(ref, [])).toBe(0);
    expect(rougeL(ref, [7, 8])).toBe(0);
    expect(lcsNorm([], gen)).toBe(0);
    expect(rougeL(ref, ref)).toBe(1);
  });

  it('exact match needs equal length and equal ids; type-token ratio', () => {
    expect(exactMatch([1, 2, 3], Int32Array.from([1, 2, 3]))).toBe(true);
    expect(exactMatch([1, 2, 3], [1, 2, 4])).toBe(false);
    expect(exactMatch([1, 2], [1, 2, 3])).toBe(false);
    expect(typeTokenRatio([5, 5, 6, 7])).toBe(0.75);
    expect(typeTokenRatio([])).toBe(0);
  });
});
