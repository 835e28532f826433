/** Metadata values a document may carry (JSON scalars only, so documents stay serialisable). */
export type MetadataValue = string | number | boolean;

/**
 * A text document as it flows through readers, filters and the packer.
 * Filters never mutate a document: they return a new object.
 */
export interface Document {
  /** Stable id, unique within the corpus (used for validation splits and sampling). */
  readonly id: string;
  /** Document text. */
  readonly text: string;
  /** Source URL, if any (robots.txt filtering keeps documents without one). */
  readonly url?: string;
  /** Language code (BCP 47 or ISO 639), if known. */
  readonly lang?: string;
  /** Extra metadata (e.g. `pii_count`, UDHR article number). */
  readonly metadata?: Readonly<Record<string, MetadataValue>>;
}

/**
 * Structural tokenizer interface: anything with `encode(text) → ids` works
 * (the `@apertus/tokenizer` package, an HF tokenizer wrapper, a test stub).
 * The encoder must NOT add BoD/EoD itself; the packer adds them.
 */
export interface TokenEncoder {
  /** Token ids of `text`, without special tokens. */
  encode(text: string): ArrayLike<number>;
}

/** Alias of {@link TokenEncoder} under the name used in the project's issue. */
export type TextEncoder = TokenEncoder;

/** Documents from any reader: sync or async iterables are both accepted. */
export type DocumentSource<T = Document> = AsyncIterable<T> | Iterable<T>;
