import type { Document, DocumentSource, TokenEncoder } from '../document';
import { DataError, EmptyCorpusError, InvalidOptionError, TokenError } from '../errors';
import type { PackedSample, SampleOptions } from './sample';
import { buildSample } from './sample';

/** Options shared by the packer, the shard writer and the datasets. */
export interface PackingOptions extends SampleOptions {
  /** Model sequence length; samples hold `seqLength + 1` tokens. */
  readonly seqLength: number;
  /** Beginning-of-document id (Apertus `<s>` = 1). */
  readonly bodId: number;
  /** End-of-document id (Apertus `</s>` = 2). */
  readonly eodId: number;
  /** Pad id: when given, the last partial sample is padded instead of dropped (Apertus `<pad>` = 3). */
  readonly padId?: number;
  /** Vocabulary size: token ids must lie in [0, vocabSize) (checked when given). */
  readonly vocabSize?: number;
}

/** Throw {@link InvalidOptionError} unless `value` is an integer in [min, max]. */
export function checkInteger(option: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidOptionError(option, `expected an integer in [${min}, ${max}], got ${String(value)}`);
  }
  return value;
}

/** Validate packing options (shared by the packer and the datasets). */
export function checkPackingOptions(o: PackingOptions): void {
  checkInteger('seqLength', o.seqLength, 1, 2 ** 24);
  const maxId = o.vocabSize === undefined ? 2 ** 31 - 1 : checkInteger('vocabSize', o.vocabSize, 1, 2 ** 31) - 1;
  checkInteger('bodId', o.bodId, 0, maxId);
  checkInteger('eodId', o.eodId, 0, maxId);
  if (o.bodId === o.eodId) throw new InvalidOptionError('eodId', 'must differ from bodId');
  if (o.padId !== undefined) checkInteger('padId', o.padId, 0, maxId);
}

/**
 * Streaming document packer (training-recipe §4.4, Megatron GPT dataset):
 * every document becomes `BoD + tokens + EoD`, documents are concatenated, and
 * the stream is cut into windows of `seqLength + 1` tokens advancing by
 * `seqLength` — consecutive samples share one token, so every token after the
 * first is a target exactly once (Megatron's sample index does the same).
 * Only one window is held in memory: a document longer than memory can be
 * pushed in chunks.
 */
export class Packer {
  private readonly L: number;
  private readonly window: Int32Array;
  private readonly windowDocs: Float64Array;
  private fill = 0;
  private inDocument = false;
  private documentCount = 0;
  private tokenCount = 0;
  private sampleCount = 0;
  private finished = false;

  constructor(readonly options: PackingOptions) {
    checkPackingOptions(options);
    this.L = options.seqLength;
    this.window = new Int32Array(this.L + 1);
    this.windowDocs = new Float64Array(this.L + 1);
  }

  /** Documents started so far. */
  get documents(): number {
    return this.documentCount + (this.inDocument ? 1 : 0);
  }

  /** Tokens (BoD/EoD included) packed so far. */
  get tokens(): number {
    return this.tokenCount;
  }

  /** Samples emitted so far. */
  get samples(): number {
    return this.sampleCount;
  }

  private push(token: number, out: PackedSample[]): void {
    this.window[this.fill] = token;
    this.windowDocs[this.fill] = this.documentCount;
    this.fill++;
    this.tokenCount++;
    if (this.fill === this.L + 1) {
      out.push(buildSample(this.window, this.windowDocs, this.options.eodId, this.options));
      this.sampleCount++;
      this.window[0] = this.window[this.L]!;
      this.windowDocs[0] = this.windowDocs[this.L]!;
      this.fill = 1;
    }
  }

  private checkOpen(): void {
    if (this.finished) throw new DataError('packer: already finished');
  }

  /** Start a document (emits its BoD). Returns the samples completed by it. */
  beginDocument(): PackedSample[] {
    this.checkOpen();
    if (this.inDocument) throw new DataError(`packer: document ${this.documentCount} is still open`);
    this.inDocument = true;
    const out: PackedSample[] = [];
    this.push(this.options.bodId, out);
    return out;
  }

  /** Append text tokens to the open document. Returns the samples completed. */
  pushTokens(chunk: ArrayLike<number>): PackedSample[] {
    this.checkOpen();
    if (!this.inDocument) throw new DataError('packer: pushTokens() outside a document; call beginDocument() first');
    const { eodId, vocabSize } = this.options;
    const limit = vocabSize ?? 2 ** 31;
    const out: PackedSample[] = [];
    for (let i = 0; i < chunk.length; i++) {
      const t = chunk[i]!;
      if (!Number.isInteger(t) || t < 0 || t >= limit) {
        throw new TokenError(this.documentCount, t, `token ${String(t)} is not an integer in [0, ${limit})`);
      }
      if (t === eodId) {
        throw new TokenError(this.documentCount, t, `text token equals the EoD id ${eodId}, which would break cross-document masking`);
      }
      this.push(t, out);
    }
    return out;
  }

  /** Close the open document (emits its EoD). Returns the samples completed. */
  endDocument(): PackedSample[] {
    this.checkOpen();
    if (!this.inDocument) throw new DataError('packer: endDocument() without beginDocument()');
    const out: PackedSample[] = [];
    this.push(this.options.eodId, out);
    this.inDocument = false;
    this.documentCount++;
    return out;
  }

  /** `beginDocument` + `pushTokens` + `endDocument`. */
  addDocument(tokens: ArrayLike<number>): PackedSample[] {
    return [...this.beginDocument(), ...this.pushTokens(tokens), ...this.endDocument()];
  }

  /**
   * Flush the tail. With `padId` the last partial window (if it has at least one
   * target) is padded to a full sample; otherwise those tokens are dropped.
   * Throws {@link EmptyCorpusError} when no document was packed.
   */
  finish(): PackedSample[] {
    this.checkOpen();
    if (this.inDocument) throw new DataError(`packer: finish() while document ${this.documentCount} is open`);
    this.finished = true;
    if (this.documentCount === 0) throw new EmptyCorpusError('packer');
    if (this.fill <= 1 || this.options.padId === undefined) return [];
    const valid = this.fill;
    this.window.fill(this.options.padId, valid);
    this.sampleCount++;
    return [buildSample(this.window, this.windowDocs, this.options.eodId, this.options, valid)];
  }

  /** Tokens left in the tail that no full sample used as a target (dropped without `padId`). */
  get pendingTokens(): number {
    return Math.max(0, this.fill - 1);
  }
}

/** A document source item: a {@link Document} (needs an encoder) or ready token ids. */
export type PackInput = Document | ArrayLike<number>;

function isDocument(x: PackInput): x is Document {
  return typeof (x as Document).text === 'string';
}

/**
 * Pack a stream of documents into samples, streaming: each document is encoded
 * (when it is a {@link Document}) and pushed into a {@link Packer}; samples are
 * yielded as soon as they are complete.
 */
export async function* packDocuments(
  documents: DocumentSource<PackInput>,
  options: PackingOptions & { readonly encoder?: TokenEncoder },
): AsyncGenerator<PackedSample> {
  const packer = new Packer(options);
  for await (const doc of documents) {
    let tokens: ArrayLike<number>;
    if (isDocument(doc)) {
      if (options.encoder === undefined) throw new InvalidOptionError('encoder', 'required to pack text documents');
      tokens = options.encoder.encode(doc.text);
    } else tokens = doc;
    yield* packer.addDocument(tokens);
  }
  yield* packer.finish();
}
