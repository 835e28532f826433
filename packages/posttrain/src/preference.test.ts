// Quantile rewards (spec §3.7 vector) and the §3.5 pair selection on hand-worked cases and as
// property tests of its rules.

import fc from 'fast-check';
import { Xoshiro128 } from '@apertus/data';
import { describe, expect, it } from 'vitest';
import { PosttrainError } from './errors';
import { buildPreferencePairs, quantileRewards, selectPreferencePairs, type Branch, type ScoredBranch } from './preference';

const ref = (completion: string, reward: number): Branch => ({ completion, reward, isReference: true });
const off = (completion: string, reward: number): Branch => ({ completion, reward, isReference: false });

describe('quantileRewards', () => {
  it('reproduces the spec §3.7 vector (ties count as ≤)', () => {
    const p1 = quantileRewards([off('c', 0.9), off('r', -0.5), ref('a', 0.1), ref('b', 0.5), ref('c2', 0.9), ref('d', 1.3), ref('e', -0.2)]);
    const p2 = quantileRewards([off('c', 2.0), off('r', 1.0), ref('a', 1.0), ref('b', 1.5), ref('c2', 2.5), ref('d', 3.0), ref('e', 0.0)]);
    expect([p1[0]!.quantileReward, p2[0]!.quantileReward]).toEqual([0.8, 0.6]);
    expect([p1[1]!.quantileReward, p2[1]!.quantileReward]).toEqual([0.0, 0.4]);
    // a reference completion counts itself: the best reference has R_q = 1
    expect(p1[5]!.quantileReward).toBe(1);
  });

  it('needs a reference completion', () => {
    expect(() => quantileRewards([off('a', 1)])).toThrow(PosttrainError);
  });
});

describe('selectPreferencePairs (spec §3.5)', () => {
  // n = 5 references → worst threshold max(0.2, 1/5) = 0.2; distinct R_q so the order is fixed
  const scored = (qs: number[]): ScoredBranch[] => qs.map((q, i) => ({ completion: `q${q}`, reward: i, isReference: false, quantileReward: q }));

  it('first pair: best bucket vs the highest of the worst bucket', () => {
    const pairs = selectPreferencePairs(scored([0.4, 1, 0.2, 0.8, 0, 0.6]), 5, 1, new Xoshiro128(1));
    // best = [1], middle = [0.8, 0.6, 0.4], worst = [0.2, 0] → (1, 0.2): "first" of worst is its highest
    expect(pairs.map(([c, r]) => [c.quantileReward, r.quantileReward])).toEqual([[1, 0.2]]);
  });

  it('falls back to middle, then to the other extreme bucket', () => {
    // no best: chosen = highest of middle; worst empty too: rejected = next of middle
    expect(selectPreferencePairs(scored([0.6, 0.8, 0.4]), 5, 1, new Xoshiro128(0)).map(([c, r]) => [c.quantileReward, r.quantileReward])).toEqual([[0.8, 0.6]]);
    // only worst: chosen and rejected both come from it, highest first
    expect(selectPreferencePairs(scored([0, 0.2]), 5, 1, new Xoshiro128(0)).map(([c, r]) => [c.quantileReward, r.quantileReward])).toEqual([[0.2, 0]]);
    // only best (every branch beats all references): rejected = next of best
    expect(selectPreferencePairs(scored([1, 1]), 5, 1, new Xoshiro128(0)).map(([c, r]) => [c.quantileReward, r.quantileReward])).toEqual([[1, 1]]);
    // n = 2: threshold max(0.2, 1/2) = 0.5, so R_q = 0.5 is "worst"
    expect(selectPreferencePairs(scored([0.5, 1]), 2, 1, new Xoshiro128(0)).map(([c, r]) => [c.quantileReward, r.quantileReward])).toEqual([[1, 0.5]]);
  });

  it('further pairs: one from R_q ≥ 0.5 and one from R_q < 0.5 of the remaining branches, higher first', () => {
    // after (1, 0.2): remaining 0.8, 0.6 (≥ 0.5) and 0.4, 0 (< 0.5)
    for (let seed = 0; seed < 20; seed++) {
      const pairs = selectPreferencePairs(scored([0.4, 1, 0.2, 0.8, 0, 0.6]), 5, 3, new Xoshiro128(seed));
      expect(pairs[0]!.map((b) => b.quantileReward)).toEqual([1, 0.2]);
      const rest = pairs.slice(1).map(([c, r]) => [c.quantileReward, r.quantileReward]);
      expect(rest.map(([c]) => c).sort()).toEqual([0.6, 0.8]);
      expect(rest.map(([, r]) => r).sort()).toEqual([0, 0.4]);
    }
  });

  it('property: every pair uses distinct branches, chosen ≥ rejected, and chosen of pair 1 is the maximum', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 8 }),
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.integer({ min: 0, max: 8 }), { minLength: 6, maxLength: 14 }),
        fc.nat(1000),
        (n, numPairs, counts, seed) => {
          const qs = counts.map((c) => Math.min(c, n) / n);
          const branches = scored(qs).map((b, i) => ({ ...b, completion: `b${i}` }));
          const pairs = selectPreferencePairs(branches, n, numPairs, new Xoshiro128(seed));
          expect(pairs).toHaveLength(numPairs);
          const used = pairs.flat().map((b) => b.completion);
          expect(new Set(used).size).toBe(used.length);
          expect(pairs[0]![0].quantileReward).toBe(Math.max(...qs));
          // rejected: the highest remaining "worst", else the highest remaining "middle", else a "best"
          const worstValue = Math.max(0.2, 1 / n);
          const rem = [...qs];
          rem.splice(rem.indexOf(Math.max(...qs)), 1);
          const w = rem.filter((q) => q <= worstValue);
          const m = rem.filter((q) => q > worstValue && q < 1);
          expect(pairs[0]![1].quantileReward).toBe(w.length > 0 ? Math.max(...w) : m.length > 0 ? Math.max(...m) : 1);
          for (const [c, r] of pairs.slice(1)) expect(c.quantileReward).toBeGreaterThanOrEqual(r.quantileReward);
          // deterministic for a seed
          expect(selectPreferencePairs(branches, n, numPairs, new Xoshiro128(seed))).toEqual(pairs);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('breaks ties with the seeded shuffle', () => {
    const tied = scored([1, 1, 1, 1, 0]).map((b, i) => ({ ...b, completion: `t${i}` }));
    const firsts = new Set(Array.from({ length: 40 }, (_, s) => selectPreferencePairs(tied, 5, 1, new Xoshiro128(s))[0]![0].completion));
    expect(firsts.size).toBeGreaterThan(1);
  });
});

describe('buildPreferencePairs', () => {
  it('drops prompts with too few reference rewards or branches, and keeps the rest', () => {
    const prompts = [
      { prompt: 'p0', branches: [off('a', 1), off('b', 0), ref('r', 0.5)] }, // 1 reference: dropped
      { prompt: 'p1', branches: [off('a', 2), off('b', -1), ref('r1', 0), ref('r2', 1)] },
      { prompt: 'p2', branches: [ref('r1', 0)] }, // 1 branch: dropped
    ];
    const d = buildPreferencePairs(prompts, { seed: 3 });
    expect(d.droppedFewReferences).toBe(1);
    expect(d.droppedFewBranches).toBe(1);
    expect(d.pairs).toHaveLength(1);
    const [pair] = d.pairs;
    // R_q: a → 1, b → 0, r1 → 1/2, r2 → 1; n = 2 → worst threshold 0.5: best [a, r2], worst [r1, b] (r1 first)
    expect(pair!.promptIndex).toBe(1);
    expect(pair!.refRewards).toEqual([0, 1]);
    expect(pair!.chosen.quantileReward).toBe(1);
    expect(pair!.rejected.completion).toBe('r1');
    expect(d).toEqual(buildPreferencePairs(prompts, { seed: 3 }));
  });

  it('validates options and rewards', () => {
    expect(() => buildPreferencePairs([], { minRefRewards: 1 })).toThrow(/minRefRewards/);
    expect(() => buildPreferencePairs([], { numPairs: 0 })).toThrow(/numPairs/);
    expect(() => buildPreferencePairs([{ prompt: 'p', branches: [ref('a', Number.NaN), ref('b', 1)] }])).toThrow(
      expect.objectContaining({ code: 'InvalidPreference', field: 'prompts[0].branches[0].reward' }),
    );
  });
});
