import { describe, expect, it } from 'vitest';
import { TABLE_PROBE_INDEX, TABLE_PROBE_VALUE, TABLE_SUM } from '../test/torch-golden';
import { goldfishHashTable, GOLDFISH_TABLE_SIZE } from './hash-table';
import { MT19937 } from './mt19937';

describe('MT19937', () => {
  it('matches the reference generator outputs for init_genrand(5489) (std::mt19937 default seed)', () => {
    const rng = new MT19937(5489);
    expect([rng.nextUint32(), rng.nextUint32(), rng.nextUint32()]).toEqual([3499211612, 581869302, 3890346734]);
    for (let i = 3; i < 9999; i++) rng.nextUint32();
    expect(rng.nextUint32()).toBe(4123659995); // the 10000th output, as the C++ standard specifies
  });
});

describe('Goldfish hash table (training-recipe.md §2.3)', () => {
  const table = goldfishHashTable();

  it('has 1,000,003 float32 entries and the spec first values', () => {
    expect(table).toBeInstanceOf(Float32Array);
    expect(table.length).toBe(GOLDFISH_TABLE_SIZE);
    expect(Array.from(table.subarray(0, 5), (v) => Number(v.toFixed(10)))).toEqual([0.2336838841, 0.4412640333, 0.741147697, 0.9092718959, 0.7113223076]);
    expect(Number(table[499033]!.toFixed(10))).toBe(0.2351139784);
  });

  it('equals torch.rand(1_000_003, generator=manual_seed(2971215073)): probes and the exact sum of all entries', () => {
    expect(TABLE_PROBE_INDEX.map((i) => table[i])).toEqual(TABLE_PROBE_VALUE);
    let sum = 0;
    for (let i = 0; i < table.length; i++) sum += table[i]!;
    expect(sum).toBe(TABLE_SUM); // every entry is n/2^24, so the float64 sum is exact and order-free
    expect(goldfishHashTable()).toBe(table); // built once
  });
});
