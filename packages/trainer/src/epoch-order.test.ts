// EpochOrder: each row once per epoch in samplePermutation order, resumable from its JSON state.

import { samplePermutation } from '@apertus/data';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CheckpointReadError, EpochOrder } from './index';

describe('data order', () => {
  it('serves each example once per epoch in samplePermutation order and resumes exactly from its JSON state (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.nat(1000), fc.nat(90), fc.integer({ min: 1, max: 7 }), (n, seed, k, m) => {
        const a = new EpochOrder(n, { seed });
        const served = a.next(k);
        const expected = Array.from({ length: Math.ceil(k / n) + 1 }, (_, e) => Array.from(samplePermutation(n, seed, e))).flat();
        expect(served).toEqual(expected.slice(0, k));
        const b = new EpochOrder(n, { state: JSON.parse(JSON.stringify(a.state)) });
        expect(b.next(m)).toEqual(a.next(m));
        expect(b.state).toEqual(a.state);
      }),
      { numRuns: 100 },
    );
  });
});

describe('saved positions', () => {
  it('a cursor beyond the rows is a CheckpointReadError naming the loader field', () => {
    expect(() => new EpochOrder(3, { state: { epoch: 0, cursor: 4, seed: 1 } })).toThrow(CheckpointReadError);
    expect(() => new EpochOrder(3, { state: { epoch: 0, cursor: 4, seed: 1 } })).toThrow(/\(loader\): cursor 4 exceeds the 3 rows/);
  });
});
