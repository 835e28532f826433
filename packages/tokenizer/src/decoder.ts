// ByteLevel decoding: token strings -> bytes -> text, plus a streaming decoder.
//
// Each token string is mapped back to bytes with the byte-level table; a token containing a
// character outside that table (e.g. an added token with a real space) contributes its own UTF-8
// instead. This is the reference decoder's per-token rule, and it applies to added tokens too (the
// reference passes them through the same decoder). The bytes are then decoded as UTF-8 with
// invalid sequences replaced by U+FFFD (maximal-subpart rule, as Rust's `from_utf8_lossy`).

import { byteLevelToBytes } from './byte-level.js';
import { TokenizerError } from './errors.js';

/** `tokenizer.json` `decoder` object this package implements. */
export type DecoderConfig =
  | { type: 'ByteLevel'; add_prefix_space?: boolean; trim_offsets?: boolean; use_regex?: boolean }
  | { type: 'Sequence'; decoders: DecoderConfig[] };

/** Validate the `decoder` field: ByteLevel, or a Sequence of ByteLevel decoders. */
export function checkDecoderConfig(config: unknown, field = 'decoder'): void {
  if (config === null || config === undefined) {
    throw new TokenizerError('UnsupportedComponent', 'a missing decoder is not supported (byte-level BPE needs the ByteLevel decoder)', {
      field,
    });
  }
  if (typeof config !== 'object' || Array.isArray(config)) throw new TokenizerError('InvalidField', 'expected a decoder object', { field });
  const o = config as Record<string, unknown>;
  if (o.type === 'ByteLevel') return;
  if (o.type === 'Sequence') {
    if (!Array.isArray(o.decoders)) throw new TokenizerError('InvalidField', 'expected an array', { field: `${field}.decoders` });
    // Several ByteLevel decoders in a row are not the same as one (the second would re-map the
    // output); only a single one is accepted.
    if (o.decoders.length !== 1) {
      throw new TokenizerError('UnsupportedComponent', 'only a Sequence holding exactly one ByteLevel decoder is supported', {
        field: `${field}.decoders`,
      });
    }
    checkDecoderConfig(o.decoders[0], `${field}.decoders[0]`);
    return;
  }
  throw new TokenizerError('UnsupportedComponent', `decoder type ${JSON.stringify(o.type)} is not supported (supported: ByteLevel)`, {
    field: `${field}.type`,
  });
}

const encoder = new TextEncoder();

/** Bytes of each token id, computed lazily and cached. */
export class TokenBytes {
  private readonly table: (Uint8Array | undefined)[] = [];
  private readonly tokens: readonly (string | undefined)[];

  constructor(tokens: readonly (string | undefined)[]) {
    this.tokens = tokens;
  }

  /** Bytes of token `id`; throws {@link TokenizerError} (`IdOutOfRange`) for an unknown id. */
  get(id: number, index: number): Uint8Array {
    const hit = this.table[id];
    if (hit !== undefined) return hit;
    const token = Number.isInteger(id) && id >= 0 ? this.tokens[id] : undefined;
    if (token === undefined) {
      throw new TokenizerError('IdOutOfRange', `token id ${String(id)} is not in the vocabulary (size ${this.tokens.length})`, {
        field: `ids[${index}]`,
      });
    }
    const bytes = byteLevelToBytes(token) ?? encoder.encode(token);
    this.table[id] = bytes;
    return bytes;
  }
}

/**
 * The replacements of HF `clean_up_tokenization` (transformers): remove the space before
 * `.`, `?`, `!`, `,`, and before common English contractions.
 */
export function cleanUpTokenizationSpaces(text: string): string {
  return text
    .replaceAll(' .', '.')
    .replaceAll(' ?', '?')
    .replaceAll(' !', '!')
    .replaceAll(' ,', ',')
    .replaceAll(" ' ", "'")
    .replaceAll(" n't", "n't")
    .replaceAll(" 'm", "'m")
    .replaceAll(" 's", "'s")
    .replaceAll(" 've", "'ve")
    .replaceAll(" 're", "'re");
}

/**
 * Incremental decoder for generation: feed ids one at a time, get text as soon as it is complete.
 * Never emits half a UTF-8 character: bytes of an unfinished character are held back until the
 * character completes (or turn into U+FFFD once they cannot). The concatenation of all `step`
 * results plus `flush()` equals `decode(allIds)` with the same `skipSpecialTokens`.
 */
export class DecodeStream {
  private readonly bytes: TokenBytes;
  private readonly special: ReadonlySet<number>;
  private readonly skipSpecial: boolean;
  private decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  private index = 0;

  /** @internal Use `Tokenizer.decodeStream()`. */
  constructor(bytes: TokenBytes, special: ReadonlySet<number>, skipSpecialTokens: boolean) {
    this.bytes = bytes;
    this.special = special;
    this.skipSpecial = skipSpecialTokens;
  }

  /** Add one token id; returns the text completed by it (possibly the empty string). */
  step(id: number): string {
    const index = this.index++;
    if (this.skipSpecial && this.special.has(id)) return '';
    return this.decoder.decode(this.bytes.get(id, index), { stream: true });
  }

  /** Add several ids; returns the text completed by them. */
  stepMany(ids: readonly number[]): string {
    let s = '';
    for (const id of ids) s += this.step(id);
    return s;
  }

  /** End of stream: returns the held-back bytes as U+FFFD (if any) and resets the stream. */
  flush(): string {
    const s = this.decoder.decode();
    this.decoder = new TextDecoder('utf-8', { ignoreBOM: true });
    this.index = 0;
    return s;
  }
}
