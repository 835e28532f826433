import { EmptyCorpusError, InvalidOptionError, LoaderStateError } from '../errors';
import type { PackedSample } from '../packing/sample';
import type { SampleSource } from '../shards/dataset';
import { samplePermutation } from './shuffle';

/**
 * Resumable position of a {@link DataLoader}: plain JSON. Saving it with a
 * checkpoint and restoring it reproduces the remaining sample sequence exactly.
 */
export interface LoaderState {
  /** Current epoch (0-based). */
  readonly epoch: number;
  /** Samples already served in the current epoch. */
  readonly cursor: number;
  /** Shuffle seed. */
  readonly seed: number;
}

/** Options of {@link DataLoader}. */
export interface DataLoaderOptions {
  /** Shuffle seed, a non-negative safe integer (default 0). Ignored when `state` is given. */
  readonly seed?: number;
  /** Shuffle each epoch (default true); false serves samples in index order. */
  readonly shuffle?: boolean;
  /** Resume from a saved state. */
  readonly state?: LoaderState;
}

/** A sample with where it came from. */
export interface LoadedSample {
  /** The sample. */
  readonly sample: PackedSample;
  /** Its index in the dataset. */
  readonly index: number;
  /** Epoch it was served in. */
  readonly epoch: number;
  /** Its position within that epoch's order. */
  readonly position: number;
}

/**
 * Validate an untrusted loader state (e.g. parsed from a checkpoint's JSON).
 * Throws {@link LoaderStateError} naming the bad field.
 */
export function parseLoaderState(value: unknown): LoaderState {
  const v = typeof value === 'string' ? safeParse(value) : value;
  if (typeof v !== 'object' || v === null) throw new LoaderStateError('state', 'not an object');
  const r = v as Record<string, unknown>;
  for (const f of ['epoch', 'cursor', 'seed'] as const) {
    if (typeof r[f] !== 'number' || !Number.isSafeInteger(r[f]) || (r[f] as number) < 0) {
      throw new LoaderStateError(f, `expected a non-negative integer, got ${JSON.stringify(r[f])}`);
    }
  }
  return { epoch: r.epoch as number, cursor: r.cursor as number, seed: r.seed as number };
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new LoaderStateError('state', 'not valid JSON');
  }
}

/**
 * Epoch-aware, seeded, resumable sample iterator. Epoch `e` serves every sample
 * once in the order {@link samplePermutation}(numSamples, seed, e); `state`
 * captures `{epoch, cursor, seed}` after each step.
 */
export class DataLoader {
  private epoch: number;
  private cursor: number;
  private readonly seed: number;
  private readonly shuffle: boolean;
  private order: Uint32Array | undefined;
  private orderEpoch = -1;

  constructor(
    readonly source: SampleSource,
    options: DataLoaderOptions = {},
  ) {
    if (source.numSamples <= 0) throw new EmptyCorpusError('data loader', 'the dataset has no sample');
    this.shuffle = options.shuffle ?? true;
    if (options.state !== undefined) {
      const s = parseLoaderState(options.state);
      if (s.cursor > source.numSamples) {
        throw new LoaderStateError('cursor', `${s.cursor} exceeds the ${source.numSamples} samples of the dataset`);
      }
      this.epoch = s.epoch;
      this.cursor = s.cursor;
      this.seed = s.seed;
    } else {
      const seed = options.seed ?? 0;
      if (!Number.isSafeInteger(seed) || seed < 0) {
        throw new InvalidOptionError('seed', `expected a non-negative safe integer, got ${String(seed)}`);
      }
      this.epoch = 0;
      this.cursor = 0;
      this.seed = seed;
    }
  }

  /** The current position, as plain JSON-serialisable data. */
  get state(): LoaderState {
    return { epoch: this.epoch, cursor: this.cursor, seed: this.seed };
  }

  /** Sample order of `epoch` (identity when shuffling is off). */
  orderOf(epoch: number): Uint32Array {
    if (this.order === undefined || this.orderEpoch !== epoch) {
      const n = this.source.numSamples;
      this.order = this.shuffle ? samplePermutation(n, this.seed, epoch) : Uint32Array.from({ length: n }, (_, i) => i);
      this.orderEpoch = epoch;
    }
    return this.order;
  }

  /** Serve the next sample (rolling over to the next epoch when one ends). */
  next(): LoadedSample {
    if (this.cursor >= this.source.numSamples) {
      this.epoch++;
      this.cursor = 0;
    }
    const position = this.cursor;
    const index = this.orderOf(this.epoch)[position]!;
    const sample = this.source.sample(index);
    this.cursor++;
    return { sample, index, epoch: this.epoch, position };
  }

  /** Serve `size` samples. */
  nextBatch(size: number): LoadedSample[] {
    if (!Number.isInteger(size) || size < 1) throw new InvalidOptionError('size', `expected a positive integer, got ${size}`);
    return Array.from({ length: size }, () => this.next());
  }
}
