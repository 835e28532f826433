import { InvalidOptionError } from '../errors';
import { Xoshiro128 } from '../hash';

/**
 * The sample order of one epoch: a Fisher–Yates permutation of `[0, n)` drawn
 * from xoshiro128** seeded with `(seed, epoch)`. Same inputs, same order, on
 * every machine; different epochs get independent orders.
 */
export function samplePermutation(n: number, seed: number, epoch: number): Uint32Array {
  if (!Number.isInteger(n) || n < 0 || n > 2 ** 32) {
    throw new InvalidOptionError('numSamples', `expected an integer in [0, 2^32], got ${String(n)}`);
  }
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const rng = new Xoshiro128(seed, epoch);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.nextBelow(i + 1);
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  return order;
}
