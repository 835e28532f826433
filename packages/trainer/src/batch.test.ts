import { describe, expect, it } from 'vitest';
import { collateLm, TrainerOptionError } from './index';

// training-recipe.md §2.5: labels[i] = (i·7919 + 13) mod 131072, i = 0…399; hash-table, k = 4, h = 4
// drops 101 targets, the first 20 being these.
const SPEC_LABELS = Int32Array.from({ length: 400 }, (_, i) => (i * 7919 + 13) % 131072);
const SPEC_K4_H4_FIRST20 = [4, 8, 10, 21, 24, 28, 31, 32, 34, 36, 42, 48, 51, 52, 63, 64, 67, 70, 72, 86];

function sample(labels: Int32Array, lossMask?: Uint8Array) {
  return {
    tokens: Int32Array.from(labels, (x) => (x + 1) % 131072),
    labels,
    lossMask: lossMask ?? new Uint8Array(labels.length).fill(1),
  };
}

describe('collateLm', () => {
  it('stacks samples row-major and flattens the targets', () => {
    const a = { tokens: [1, 11, 12], labels: [11, 12, 2], lossMask: [1, 1, 1], positionIds: [0, 1, 2], documentIds: [7, 7, 7] };
    const b = { tokens: [2, 1, 13], labels: [1, 13, 2], lossMask: [0, 1, 1], positionIds: [3, 0, 1], documentIds: [7, 8, 8] };
    const batch = collateLm([a, b]);
    expect(batch.ids.shape).toEqual([2, 3]);
    expect(Array.from(batch.ids.toArray() as number[][]).flat()).toEqual([1, 11, 12, 2, 1, 13]);
    expect(batch.targets.shape).toEqual([6]);
    expect(batch.targets.toArray()).toEqual([11, 12, 2, 1, 13, 2]);
    expect(Array.from(batch.mask)).toEqual([1, 1, 1, 0, 1, 1]);
    expect(batch.keptTokens).toBe(5);
    expect((batch.positions!.toArray() as number[][]).flat()).toEqual([0, 1, 2, 3, 0, 1]);
    // document ids renumbered per row from the row's first document
    expect((batch.docIds!.toArray() as number[][]).flat()).toEqual([0, 0, 0, 0, 1, 1]);
  });

  it('keeps padding (−1) document ids and large corpus ordinals fit i32 after renumbering', () => {
    const s = { tokens: [5, 6, 3, 3], labels: [6, 2, 3, 3], lossMask: [1, 1, 0, 0], documentIds: [5_000_000_000, 5_000_000_001, -1, -1] };
    const batch = collateLm([s]);
    expect((batch.docIds!.toArray() as number[][]).flat()).toEqual([0, 1, -1, -1]);
    expect(batch.positions).toBeUndefined();
  });

  it('applies the Goldfish hash-table mask to the labels (spec §2.5 vector, k=4, h=4)', () => {
    const batch = collateLm([sample(SPEC_LABELS)], { goldfish: { goldfishK: 4, goldfishH: 4 } });
    const dropped = [...batch.mask.keys()].filter((i) => batch.mask[i] === 0);
    expect(dropped.length).toBe(101);
    expect(dropped.slice(0, 20)).toEqual(SPEC_K4_H4_FIRST20);
    expect(batch.keptTokens).toBe(299);
    expect(batch.goldfishDropped).toBe(101);
  });

  it('combines the Goldfish mask with the loss mask (AND), counting only newly dropped targets', () => {
    const lossMask = new Uint8Array(400).fill(1);
    for (const i of [4, 5, 6, 50]) lossMask[i] = 0; // 4 is also a Goldfish drop; 5, 6, 50 are not (all below 86)
    const batch = collateLm([sample(SPEC_LABELS, lossMask)], { goldfish: { goldfishK: 4, goldfishH: 4 } });
    const dropped = new Set([...batch.mask.keys()].filter((i) => batch.mask[i] === 0));
    for (const i of [4, 5, 6, 50, 8, 10, 21]) expect(dropped.has(i)).toBe(true);
    expect(batch.goldfishDropped).toBe(100); // index 4 was already masked
    expect(batch.keptTokens).toBe(400 - dropped.size);
    expect(dropped.size).toBe(101 + 3); // 5, 6, 50 are not Goldfish drops
  });

  it('applies the Goldfish mask per row: the same labels in two rows give the same mask', () => {
    const batch = collateLm([sample(SPEC_LABELS), sample(SPEC_LABELS)], { goldfish: { goldfishK: 50, goldfishH: 50 } });
    const row = (r: number) => [...batch.mask.subarray(r * 400, (r + 1) * 400).keys()].filter((i) => batch.mask[r * 400 + i] === 0);
    expect(row(0)).toEqual([227, 235, 287, 347, 351]); // spec §2.5, k=50, h=50
    expect(row(1)).toEqual(row(0));
  });

  it('rejects empty batches and ragged samples, naming the field', () => {
    expect(() => collateLm([])).toThrow(TrainerOptionError);
    const bad = { tokens: [1, 2, 3], labels: [2, 3], lossMask: [1, 1, 1] };
    expect(() => collateLm([bad])).toThrow(/samples\[0\]\.labels: has length 2, expected 3/);
  });
});
