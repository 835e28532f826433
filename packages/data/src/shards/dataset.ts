import { EmptyCorpusError, InvalidOptionError } from '../errors';
import { checkInteger } from '../packing/packer';
import type { PackedSample, SampleOptions } from '../packing/sample';
import { buildSample } from '../packing/sample';
import type { ShardedTokens } from './reader';

/** Anything that serves samples by index (a {@link PackedDataset}, an in-memory list...). */
export interface SampleSource {
  /** Number of samples. */
  readonly numSamples: number;
  /** Sample `index` (0 ≤ index < numSamples). */
  sample(index: number): PackedSample;
}

/** Options of {@link PackedDataset}. */
export interface PackedDatasetOptions extends SampleOptions {
  /** Model sequence length; each sample reads `seqLength + 1` tokens. */
  readonly seqLength: number;
  /** Pad id: when given, the tail shorter than a sample becomes one padded sample. */
  readonly padId?: number;
}

/**
 * Samples of `seqLength + 1` tokens over a shard set, exactly as the streaming
 * {@link Packer} cuts them: sample `i` is the window of global tokens
 * `[i·seqLength, i·seqLength + seqLength + 1)`, with document ids from the shard
 * index and positions / loss mask from the EoD tokens (training-recipe §4.4).
 * Reads only the window from disk.
 */
export class PackedDataset implements SampleSource {
  /** Number of samples: ⌊(numTokens − 1) / seqLength⌋, plus one padded tail sample when `padId` is set. */
  readonly numSamples: number;
  private readonly L: number;

  constructor(
    readonly tokens: ShardedTokens,
    readonly options: PackedDatasetOptions,
  ) {
    this.L = checkInteger('seqLength', options.seqLength, 1, 2 ** 24);
    if (options.padId !== undefined) checkInteger('padId', options.padId, 0, tokens.vocabSize - 1);
    const full = Math.floor(Math.max(0, tokens.numTokens - 1) / this.L);
    const tail = options.padId !== undefined && (tokens.numTokens - 1) % this.L > 0 ? 1 : 0;
    this.numSamples = full + tail;
    if (this.numSamples === 0) {
      throw new EmptyCorpusError('packed dataset', `${tokens.numTokens} tokens do not fill one sample of ${this.L + 1}`);
    }
  }

  /** Sample `index`. */
  sample(index: number): PackedSample {
    if (!Number.isInteger(index) || index < 0 || index >= this.numSamples) {
      throw new InvalidOptionError('index', `sample ${index} out of range [0, ${this.numSamples})`);
    }
    const L = this.L;
    const start = index * L;
    const real = this.tokens.readTokens(start, start + L + 1);
    const window = new Int32Array(L + 1);
    window.set(real);
    if (real.length < L + 1) window.fill(this.options.padId!, real.length);
    const docs = new Float64Array(L + 1);
    let doc = this.tokens.documentAt(start);
    let end = this.tokens.documentRange(doc)[1];
    for (let t = 0; t < real.length; t++) {
      while (start + t >= end) end = this.tokens.documentRange(++doc)[1];
      docs[t] = doc;
    }
    return buildSample(window, docs, this.tokens.eodId, this.options, real.length);
  }
}
