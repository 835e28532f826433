// The tokenizer: tokenizer.json loading and the encode / decode pipeline.
//
//   text ─► added tokens (two-pass split) ─► pre-tokenizer (Split regex, ByteLevel) ─► BPE per piece
//        ─► post-processor (BOS template, offset trimming) ─► ids, tokens, offsets
//   ids  ─► token strings ─► ByteLevel bytes ─► UTF-8 (lossy) ─► text

import { AddedVocabulary, type AddedTokenConfig } from './added-tokens.js';
import { BpeModel, type BpeModelConfig } from './bpe.js';
import { utf8Encode } from './byte-level.js';
import { checkDecoderConfig, cleanUpTokenizationSpaces, DecodeStream, TokenBytes, type DecoderConfig } from './decoder.js';
import { TokenizerError } from './errors.js';
import { Normalizer, type NormalizerConfig } from './normalizer.js';
import { PostProcessor, type PostProcessorConfig, type RawEncoding } from './post-processor.js';
import { PreTokenizer, type Pieces, type PreTokenizerConfig } from './pretokenizer.js';

/** The `tokenizer.json` document (the parts this package reads and writes). */
export interface TokenizerJson {
  /** Format version, `"1.0"`. */
  version?: string;
  /** Must be null: truncation is not supported. */
  truncation?: null;
  /** Must be null: padding is not supported. */
  padding?: null;
  /** Tokens matched before pre-tokenization. */
  added_tokens?: AddedTokenConfig[];
  /** NFC / NFD / NFKC / NFKD / Lowercase / Strip / Sequence, or null. */
  normalizer?: NormalizerConfig | null;
  /** Split / ByteLevel / Sequence. */
  pre_tokenizer?: PreTokenizerConfig | null;
  /** The BPE model. */
  model: BpeModelConfig;
  /** TemplateProcessing / ByteLevel / Sequence, or null. */
  post_processor?: PostProcessorConfig | null;
  /** ByteLevel. */
  decoder?: DecoderConfig | null;
}

/** A token given in tokenizer_config.json: a string or an AddedToken-like object. */
export type ConfigToken = string | { content: string; [key: string]: unknown } | null;

/** The fields of `tokenizer_config.json` this package reads. */
export interface TokenizerConfigJson {
  /** Beginning-of-sequence token. */
  bos_token?: ConfigToken;
  /** End-of-sequence token (Apertus Instruct: `<|assistant_end|>`). */
  eos_token?: ConfigToken;
  /** Padding token. */
  pad_token?: ConfigToken;
  /** Unknown token. */
  unk_token?: ConfigToken;
  /** Default of `decode`'s `cleanUpTokenizationSpaces`. */
  clean_up_tokenization_spaces?: boolean;
  /** Other fields are kept but not used. */
  [key: string]: unknown;
}

/** The special-token keys of `special_tokens_map.json` (transformers lets them override tokenizer_config.json's). */
export const SPECIAL_TOKEN_KEYS: readonly string[] = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token', 'additional_special_tokens'];

/**
 * tokenizer_config.json with `special_tokens_map.json`'s tokens over it, as transformers resolves
 * them (the map wins: a file set whose config says pad `[INST]` and whose map says `<pad>` pads
 * with `<pad>`). Keys of the map that are not special tokens are ignored; `map` null changes nothing.
 */
export function withSpecialTokensMap(config: TokenizerConfigJson, map: unknown, file?: string): TokenizerConfigJson {
  if (map === null || map === undefined) return config;
  if (typeof map !== 'object' || Array.isArray(map)) {
    throw new TokenizerError('InvalidField', 'special_tokens_map.json must be a JSON object', file !== undefined ? { file } : {});
  }
  const out: TokenizerConfigJson = { ...config };
  for (const [k, v] of Object.entries(map as Record<string, unknown>)) if (SPECIAL_TOKEN_KEYS.includes(k) && v !== null) out[k] = v;
  return out;
}

/** Result of {@link Tokenizer.encode}. */
export interface Encoding {
  /** Token ids. */
  ids: number[];
  /** Token strings (byte-level form for BPE tokens, content for added tokens). */
  tokens: string[];
  /** `[start, end)` of each token in the input, in UTF-16 code units (JS string indices); `[0, 0]` for inserted special tokens. */
  offsets: [number, number][];
  /** 1 for tokens inserted by the post-processor (e.g. BOS), 0 otherwise. */
  specialTokensMask: number[];
}

/** Options of the encode methods. */
export interface EncodeOptions {
  /** Apply the post-processor template (Apertus: prepend `<s>`). Default true. */
  addSpecialTokens?: boolean;
  /**
   * Match special added tokens in the text (`"<|user_start|>"` becomes id 65). Default true, as in
   * HF. Set false for untrusted text so that it cannot inject control tokens.
   */
  splitSpecialTokens?: boolean;
}

/** Options of the decode methods. */
export interface DecodeOptions {
  /** Drop added tokens marked special. Default false. */
  skipSpecialTokens?: boolean;
  /** Apply HF `clean_up_tokenization` to the text. Default: tokenizer_config's value, else false. */
  cleanUpTokenizationSpaces?: boolean;
}

/** Options of {@link Tokenizer.fromJSON}. */
export interface LoadOptions {
  /** File name used in error messages. */
  file?: string;
  /** File name of the config used in error messages. */
  configFile?: string;
  /** Maximum number of cached pre-token encodings (default 100,000). */
  cacheCapacity?: number;
}

function parseJson(text: string, file: string | undefined): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (cause) {
    throw new TokenizerError('InvalidJson', `malformed JSON (${(cause as Error).message})`, { ...(file !== undefined ? { file } : {}), cause });
  }
}

function tokenContent(t: unknown, field: string, file: string | undefined): string | null {
  if (t === undefined || t === null) return null;
  if (typeof t === 'string') return t;
  if (typeof t === 'object' && typeof (t as { content?: unknown }).content === 'string') return (t as { content: string }).content;
  throw new TokenizerError('InvalidField', 'expected a string or {"content": string}', { field, ...(file !== undefined ? { file } : {}) });
}

const hasWellFormed = typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === 'function';

/** Replace lone surrogates with U+FFFD (what the reference sees after its UTF-8 conversion). */
function wellFormed(text: string): string {
  if (hasWellFormed) {
    const s = text as unknown as { isWellFormed(): boolean; toWellFormed(): string };
    return s.isWellFormed() ? text : s.toWellFormed();
  }
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/**
 * A byte-level BPE tokenizer loaded from a Hugging Face `tokenizer.json` (+ optional
 * `tokenizer_config.json`). Bit-exact with HF `tokenizers` for the supported components: BPE
 * (`ignore_merges`, both merge formats), added tokens, Split + ByteLevel pre-tokenizers, ByteLevel
 * decoder, TemplateProcessing / ByteLevel post-processors. Anything else throws
 * {@link TokenizerError} with code `UnsupportedComponent`.
 */
export class Tokenizer {
  /** The BPE model. */
  readonly model: BpeModel;
  /** The added tokens. */
  readonly addedTokens: AddedVocabulary;
  /** tokenizer_config.json content (empty object when not given). */
  readonly config: TokenizerConfigJson;
  /** Id of `bos_token` from the config (or `<s>` when present in the vocab), else null. */
  readonly bosTokenId: number | null;
  /** Id of `eos_token` from the config (or `</s>` when present in the vocab), else null. */
  readonly eosTokenId: number | null;
  /** Id of `pad_token` from the config, else null. */
  readonly padTokenId: number | null;
  /** Id of `unk_token` from the config or the model, else null. */
  readonly unkTokenId: number | null;

  private readonly json: TokenizerJson;
  private readonly normalizer: Normalizer | null;
  private readonly preTokenizer: PreTokenizer;
  private readonly postProcessor: PostProcessor;
  private readonly idToTokenTable: (string | undefined)[];
  private readonly tokenBytes: TokenBytes;
  private readonly cleanUp: boolean;
  // Scratch buffers reused across calls.
  private segs: number[] = [];
  private pieces: Pieces = [];
  private bytes = new Uint8Array(1024);
  private charOf = new Int32Array(1024);

  private constructor(json: TokenizerJson, config: TokenizerConfigJson, options: LoadOptions) {
    const file = options.file;
    const at = (fn: () => void): void => {
      try {
        fn();
      } catch (err) {
        throw err instanceof TokenizerError && file !== undefined ? err.inFile(file) : err;
      }
    };
    for (const key of ['truncation', 'padding'] as const) {
      const v = (json as unknown as Record<string, unknown>)[key];
      if (v !== undefined && v !== null) {
        at(() => {
          throw new TokenizerError('UnsupportedComponent', `${key} is not supported (must be null)`, { field: key });
        });
      }
    }
    let model!: BpeModel;
    let normalizer!: Normalizer | null;
    let added!: AddedVocabulary;
    let pre!: PreTokenizer;
    let post!: PostProcessor;
    at(() => {
      model = BpeModel.fromConfig(json.model, options.cacheCapacity !== undefined ? { cacheCapacity: options.cacheCapacity } : {});
      normalizer = Normalizer.fromConfig(json.normalizer);
      const n = normalizer;
      added = AddedVocabulary.fromConfig(json.added_tokens, 'added_tokens', n === null ? null : (text) => n.normalize(text, 0, text.length).text);
      pre = PreTokenizer.fromConfig(json.pre_tokenizer);
      if (!pre.byteLevel) {
        throw new TokenizerError('UnsupportedComponent', 'pre-tokenizers without a ByteLevel step are not supported (byte-level BPE only)', {
          field: 'pre_tokenizer',
        });
      }
      post = PostProcessor.fromConfig(json.post_processor);
      checkDecoderConfig(json.decoder);
    });
    this.json = json;
    this.model = model;
    this.addedTokens = added;
    this.normalizer = normalizer;
    this.preTokenizer = pre;
    this.postProcessor = post;
    this.config = config;

    const table: (string | undefined)[] = [];
    const keys = model.strings.keys;
    const values = model.strings.values;
    for (let k = 0; k < keys.length; k++) table[values[k]!] = keys[k]!;
    for (const t of added.tokens) table[t.id] = t.content;
    for (let i = 0; i < table.length; i++) if (!(i in table)) table[i] = undefined;
    this.idToTokenTable = table;
    this.tokenBytes = new TokenBytes(table);

    const cfgFile = options.configFile;
    const idOf = (name: keyof TokenizerConfigJson): number | null => {
      const content = tokenContent(config[name], name as string, cfgFile);
      return content === null ? null : (this.tokenToId(content) ?? null);
    };
    this.bosTokenId = idOf('bos_token') ?? (config.bos_token === undefined ? (this.tokenToId('<s>') ?? null) : null);
    this.eosTokenId = idOf('eos_token') ?? (config.eos_token === undefined ? (this.tokenToId('</s>') ?? null) : null);
    this.padTokenId = idOf('pad_token');
    this.unkTokenId = idOf('unk_token') ?? (model.unkId >= 0 ? model.unkId : null);
    const cu = config.clean_up_tokenization_spaces ?? false;
    if (typeof cu !== 'boolean') {
      throw new TokenizerError('InvalidField', 'expected a boolean', {
        field: 'clean_up_tokenization_spaces',
        ...(cfgFile !== undefined ? { file: cfgFile } : {}),
      });
    }
    this.cleanUp = cu;
  }

  /**
   * Load from the contents of `tokenizer.json` (string or parsed object) and optionally
   * `tokenizer_config.json`. Throws {@link TokenizerError}: `InvalidJson`, `InvalidField` (with the
   * field path), `MergeOutOfVocabulary`, `UnsupportedComponent`.
   */
  static fromJSON(json: string | TokenizerJson, config?: string | TokenizerConfigJson | null, options: LoadOptions = {}): Tokenizer {
    const j = typeof json === 'string' ? parseJson(json, options.file) : json;
    if (j === null || typeof j !== 'object' || Array.isArray(j)) {
      throw new TokenizerError('InvalidField', 'tokenizer.json must be a JSON object', options.file !== undefined ? { file: options.file } : {});
    }
    if (!('model' in j)) {
      throw new TokenizerError('InvalidField', 'missing field', { field: 'model', ...(options.file !== undefined ? { file: options.file } : {}) });
    }
    const c = config === undefined || config === null ? {} : typeof config === 'string' ? parseJson(config, options.configFile) : config;
    if (c === null || typeof c !== 'object' || Array.isArray(c)) {
      throw new TokenizerError('InvalidField', 'tokenizer_config.json must be a JSON object', options.configFile !== undefined ? { file: options.configFile } : {});
    }
    return new Tokenizer(j as TokenizerJson, c as TokenizerConfigJson, options);
  }

  /** Size of the id space: highest id (model or added token) + 1. */
  get vocabSize(): number {
    return this.idToTokenTable.length;
  }

  /** Id of a token string (added tokens first, then the model vocab). */
  tokenToId(token: string): number | undefined {
    return this.addedTokens.byContent.get(token) ?? this.model.tokenToId(token);
  }

  /** Token string of an id, or undefined when the id is not assigned. */
  idToToken(id: number): string | undefined {
    return Number.isInteger(id) && id >= 0 ? this.idToTokenTable[id] : undefined;
  }

  /** Ids of all added tokens marked special. */
  get specialTokenIds(): ReadonlySet<number> {
    return this.addedTokens.specialIds;
  }

  /** The `tokenizer.json` document this tokenizer was built from. */
  toJSON(): TokenizerJson {
    return this.json;
  }

  /**
   * Encode `text` into ids, token strings and offsets. With `addSpecialTokens` (default) the
   * post-processor template is applied (Apertus: `<s>` first).
   */
  encode(text: string, options: EncodeOptions = {}): Encoding {
    const raw = this.run(text, options, true);
    const offsets: [number, number][] = new Array<[number, number]>(raw.ids.length);
    for (let i = 0; i < raw.ids.length; i++) offsets[i] = [raw.offsets![2 * i]!, raw.offsets![2 * i + 1]!];
    return { ids: raw.ids, tokens: raw.tokens!, offsets, specialTokensMask: raw.special! };
  }

  /** Encode `text` into ids only (the fast path). */
  encodeIds(text: string, options: EncodeOptions = {}): number[] {
    return this.run(text, options, false).ids;
  }

  /** {@link encode} for each text. */
  encodeBatch(texts: readonly string[], options: EncodeOptions = {}): Encoding[] {
    return texts.map((t) => this.encode(t, options));
  }

  /** {@link encodeIds} for each text. */
  encodeBatchIds(texts: readonly string[], options: EncodeOptions = {}): number[][] {
    return texts.map((t) => this.encodeIds(t, options));
  }

  /** Number of tokens `encodeIds(text, options)` returns (special tokens included when added). */
  countTokens(text: string, options: EncodeOptions = {}): number {
    return this.run(text, options, false).ids.length;
  }

  private run(input: string, options: EncodeOptions, detailed: boolean): RawEncoding {
    const text = wellFormed(input);
    const ids: number[] = [];
    const offsets: number[] | null = detailed ? [] : null;
    const lens: number[] | null = detailed ? [] : null;
    const splitSpecial = options.splitSpecialTokens ?? true;
    const segs = this.segs;
    segs.length = 0;
    if (this.normalizer === null) this.addedTokens.split(text, segs, splitSpecial);
    else this.addedTokens.splitRaw(text, segs, splitSpecial);
    for (let k = 0; k < segs.length; k += 3) {
      const segStart = segs[k]!;
      const segEnd = segs[k + 1]!;
      const added = segs[k + 2]!;
      if (added >= 0) {
        ids.push(added);
        if (offsets !== null) offsets.push(segStart, segEnd);
      } else if (this.normalizer === null) {
        this.encodeSpan(text, segStart, segEnd, ids, offsets, lens);
      } else {
        // Normalize the piece, match the normalized added tokens in it, encode the rest; offsets
        // in the normalized piece are mapped back to the original text.
        const norm = this.normalizer.normalize(text, segStart, segEnd);
        const inner: number[] = [];
        this.addedTokens.splitNormalized(norm.text, inner, splitSpecial);
        const first = offsets === null ? 0 : offsets.length;
        for (let m = 0; m < inner.length; m += 3) {
          if (inner[m + 2]! >= 0) {
            ids.push(inner[m + 2]!);
            if (offsets !== null) offsets.push(inner[m]!, inner[m + 1]!);
          } else {
            this.encodeSpan(norm.text, inner[m]!, inner[m + 1]!, ids, offsets, lens);
          }
        }
        if (offsets !== null) {
          for (let o = first; o < offsets.length; o += 2) {
            const s = offsets[o]!;
            const e = offsets[o + 1]!;
            offsets[o] = s < norm.start.length ? norm.start[s]! : segEnd;
            offsets[o + 1] = e > s ? norm.end[e - 1]! : offsets[o]!;
          }
        }
      }
    }
    const raw: RawEncoding = {
      text,
      ids,
      tokens: detailed ? ids.map((id) => this.idToTokenTable[id] ?? '') : null,
      offsets,
      special: detailed ? new Array<number>(ids.length).fill(0) : null,
    };
    return this.postProcessor.process(raw, options.addSpecialTokens ?? true);
  }

  /** Pre-tokenize `text[segStart, segEnd)` and BPE-encode each piece, appending ids (and offsets into `text`). */
  private encodeSpan(text: string, segStart: number, segEnd: number, ids: number[], offsets: number[] | null, lens: number[] | null): void {
    const model = this.model;
    const pieces = this.pieces;
    pieces.length = 0;
    this.preTokenizer.run(text, segStart, segEnd, pieces);
    for (let p = 0; p < pieces.length; p += 3) {
      const start = pieces[p]!;
      const end = pieces[p + 1]!;
      const prefixed = pieces[p + 2]!;
      const need = 3 * (end - start) + 1;
      if (need > this.bytes.length) {
        let cap = this.bytes.length;
        while (cap < need) cap *= 2;
        this.bytes = new Uint8Array(cap);
        this.charOf = new Int32Array(cap);
      }
      const bytes = this.bytes;
      const firstToken = ids.length;
      if (offsets === null && model.encodeCached(text, start, end, prefixed, ids)) continue;
      let n = 0;
      if (prefixed === 1) {
        bytes[0] = 0x20;
        n = 1;
      }
      const charOf = this.charOf;
      n += utf8Encode(text, start, end, prefixed === 1 ? bytes.subarray(1) : bytes, offsets !== null ? (prefixed === 1 ? charOf.subarray(1) : charOf) : null);
      if (prefixed === 1) charOf[0] = 0;
      if (lens !== null) lens.length = 0;
      model.encodeWord(text, start, end, prefixed, bytes, n, ids, lens);
      if (offsets !== null) {
        // Map each token's byte span back to the characters it touches.
        let b = 0;
        for (let t = firstToken; t < ids.length; t++) {
          const len = lens![t - firstToken]!;
          const s = start + charOf[b]!;
          const lastByte = b + len - 1;
          const c = start + charOf[lastByte]!;
          const hi = text.charCodeAt(c);
          const lo = text.charCodeAt(c + 1);
          const e = c + (hi >= 0xd800 && hi <= 0xdbff && lo >= 0xdc00 && lo <= 0xdfff ? 2 : 1);
          offsets.push(s, len > 0 ? e : s);
          b += len;
        }
      }
    }
  }

  /**
   * Decode ids to text. Throws {@link TokenizerError} (`IdOutOfRange`, field `ids[i]`) for an id
   * that is not in the vocabulary.
   */
  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    const skip = options.skipSpecialTokens ?? false;
    const special = this.addedTokens.specialIds;
    const parts: Uint8Array[] = [];
    let total = 0;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      const b = this.tokenBytes.get(id, i);
      if (skip && special.has(id)) continue;
      parts.push(b);
      total += b.length;
    }
    const all = new Uint8Array(total);
    let o = 0;
    for (const p of parts) {
      all.set(p, o);
      o += p.length;
    }
    const text = new TextDecoder('utf-8', { ignoreBOM: true }).decode(all);
    return (options.cleanUpTokenizationSpaces ?? this.cleanUp) ? cleanUpTokenizationSpaces(text) : text;
  }

  /** {@link decode} for each id list. */
  decodeBatch(batch: readonly (readonly number[])[], options: DecodeOptions = {}): string[] {
    return batch.map((ids) => this.decode(ids, options));
  }

  /**
   * A streaming decoder (for generation): `step(id)` returns only complete characters. Space
   * clean-up is not applied in streams.
   */
  decodeStream(options: { skipSpecialTokens?: boolean } = {}): DecodeStream {
    return new DecodeStream(this.tokenBytes, this.addedTokens.specialIds, options.skipSpecialTokens ?? false);
  }
}
