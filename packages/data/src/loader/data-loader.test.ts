import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EmptyCorpusError, InvalidOptionError, LoaderStateError } from '../errors';
import type { PackedSample } from '../packing/sample';
import type { SampleSource } from '../shards/dataset';
import { DataLoader, parseLoaderState } from './data-loader';
import { samplePermutation } from './shuffle';

/** A source whose sample i carries i in its tokens, so order is observable. */
function fakeSource(n: number): SampleSource {
  return {
    numSamples: n,
    sample: (i: number): PackedSample => ({
      tokens: Int32Array.of(i),
      labels: Int32Array.of(i + 1),
      lossMask: Uint8Array.of(1),
      positionIds: Int32Array.of(0),
      documentIds: Float64Array.of(0),
    }),
  };
}

describe('samplePermutation', () => {
  it('matches the reference Fisher–Yates order (Python transcription)', () => {
    expect(Array.from(samplePermutation(10, 42, 0))).toEqual([5, 3, 9, 8, 2, 4, 1, 0, 6, 7]);
    expect(Array.from(samplePermutation(10, 42, 1))).toEqual([6, 4, 5, 2, 7, 1, 9, 8, 3, 0]);
    expect(Array.from(samplePermutation(10, 7, 0))).toEqual([6, 7, 1, 2, 0, 4, 3, 5, 8, 9]);
  });

  it('is a permutation for any size, seed and epoch (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 300 }), fc.nat(), fc.nat(50), (n, seed, epoch) => {
        const p = Array.from(samplePermutation(n, seed, epoch));
        expect([...p].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i));
      }),
    );
  });
});

describe('DataLoader', () => {
  it('serves every sample once per epoch, in a different order each epoch', () => {
    const loader = new DataLoader(fakeSource(50), { seed: 3 });
    const e0 = loader.nextBatch(50).map((s) => s.index);
    const e1 = loader.nextBatch(50).map((s) => s.index);
    expect(new Set(e0).size).toBe(50);
    expect(new Set(e1).size).toBe(50);
    expect(e0).toEqual(Array.from(samplePermutation(50, 3, 0)));
    expect(e1).toEqual(Array.from(samplePermutation(50, 3, 1)));
    expect(e0).not.toEqual(e1);
    expect(loader.state).toEqual({ epoch: 1, cursor: 50, seed: 3 });
    expect(loader.next()).toMatchObject({ epoch: 2, position: 0, index: samplePermutation(50, 3, 2)[0] });
  });

  it('resumes bit-exactly from a JSON state, including across epoch boundaries (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.nat(1000), fc.nat(120), fc.integer({ min: 1, max: 60 }), (n, seed, k, m) => {
        const a = new DataLoader(fakeSource(n), { seed });
        for (let i = 0; i < k; i++) a.next();
        const saved = JSON.stringify(a.state);
        const b = new DataLoader(fakeSource(n), { state: parseLoaderState(saved) });
        for (let i = 0; i < m; i++) {
          const x = a.next();
          const y = b.next();
          expect([y.index, y.epoch, y.position]).toEqual([x.index, x.epoch, x.position]);
          expect(Array.from(y.sample.tokens)).toEqual(Array.from(x.sample.tokens));
        }
        expect(b.state).toEqual(a.state);
      }),
      { numRuns: 150 },
    );
  });

  it('serves in index order without shuffle', () => {
    const loader = new DataLoader(fakeSource(4), { shuffle: false });
    expect(loader.nextBatch(6).map((s) => s.index)).toEqual([0, 1, 2, 3, 0, 1]);
  });

  it('rejects invalid states and options with typed errors', () => {
    expect(() => parseLoaderState('{')).toThrow(LoaderStateError);
    expect(() => parseLoaderState({ epoch: -1, cursor: 0, seed: 0 })).toThrow(/epoch/);
    expect(() => parseLoaderState({ epoch: 0, cursor: 1.5, seed: 0 })).toThrow(/cursor/);
    expect(() => parseLoaderState({ epoch: 0, cursor: 0 })).toThrow(/seed/);
    expect(() => new DataLoader(fakeSource(5), { state: { epoch: 0, cursor: 6, seed: 0 } })).toThrow(LoaderStateError);
    expect(() => new DataLoader(fakeSource(5), { seed: -2 })).toThrow(InvalidOptionError);
    expect(() => new DataLoader(fakeSource(0))).toThrow(EmptyCorpusError);
    expect(() => new DataLoader(fakeSource(5)).nextBatch(0)).toThrow(InvalidOptionError);
  });
});
