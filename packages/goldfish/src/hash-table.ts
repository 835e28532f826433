// The Goldfish hash table (training-recipe.md §2.3): 1,000,003 uniform float32 values drawn with
// torch.rand from a CPU generator seeded with 2971215073 — i.e. MT19937(2971215073), floats
// (u32 & 0xFFFFFF)·2^-24 in order. Built on first use (≈ 10 ms) and cached; never shipped.

import { MT19937 } from './mt19937';

/** Number of entries of the Goldfish hash table (a prime). */
export const GOLDFISH_TABLE_SIZE = 1_000_003;

/** Seed of the Goldfish hash table's generator (the 47th Fibonacci number, a prime). */
export const GOLDFISH_TABLE_SEED = 2_971_215_073;

let table: Float32Array | null = null;

/**
 * The Goldfish hash table, built on first call and shared afterwards. Do not modify it.
 * Equal to `torch.rand(1_000_003, generator=torch.Generator().manual_seed(2971215073))`.
 */
export function goldfishHashTable(): Float32Array {
  if (table === null) {
    table = new MT19937(GOLDFISH_TABLE_SEED).fillFloat32(new Float32Array(GOLDFISH_TABLE_SIZE));
  }
  return table;
}
