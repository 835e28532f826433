// The order in which training rows (conversations, preference pairs) are served: every row once
// per epoch, epoch e in the order samplePermutation(n, seed, e) (@apertus/data's seeded
// Fisher–Yates), resumable from the plain-JSON position {epoch, cursor, seed} saved in each checkpoint.

import { parseLoaderState, samplePermutation, type LoaderState } from '@apertus/data';
import { CheckpointReadError } from './errors';

/** Seeded, epoch-aware, resumable iterator over row indices 0 … n−1. */
export class EpochOrder {
  private epoch: number;
  private cursor: number;
  private readonly seed: number;
  private order: Uint32Array;

  /**
   * @param n - number of rows (≥ 1)
   * @param start - a seed for a fresh order, or a saved {@link LoaderState} to continue from
   * @throws CheckpointReadError when a saved position does not fit `n` rows
   */
  constructor(readonly n: number, start: { readonly seed: number } | { readonly state: unknown }) {
    if ('state' in start) {
      const s = parseLoaderState(start.state);
      if (s.cursor > n) throw new CheckpointReadError('trainer_state.json', `cursor ${s.cursor} exceeds the ${n} rows`, 'loader');
      this.epoch = s.epoch;
      this.cursor = s.cursor;
      this.seed = s.seed;
    } else {
      this.epoch = 0;
      this.cursor = 0;
      this.seed = start.seed;
    }
    this.order = samplePermutation(n, this.seed, this.epoch);
  }

  /** The position after the indices served so far (JSON). */
  get state(): LoaderState {
    return { epoch: this.epoch, cursor: this.cursor, seed: this.seed };
  }

  /** The next `count` indices, wrapping into the next epoch (a new permutation) when one ends. */
  next(count: number): number[] {
    const out: number[] = [];
    while (out.length < count) {
      if (this.cursor === this.n) {
        this.epoch++;
        this.cursor = 0;
        this.order = samplePermutation(this.n, this.seed, this.epoch);
      }
      out.push(this.order[this.cursor++]!);
    }
    return out;
  }
}
