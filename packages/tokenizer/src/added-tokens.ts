// Added tokens: strings matched in the raw text before pre-tokenization and emitted as one id.
//
// As in HF `tokenizers` (AddedVocabulary): two passes, each a leftmost-longest match over a trie.
// Pass 1 finds the tokens with `normalized: false` in the whole text; pass 2 finds the tokens with
// `normalized: true` inside the text between pass-1 matches, after the tokenizer's normalizer (when
// there is one) has been applied to that text. `single_word` drops matches glued
// to word characters; `lstrip` / `rstrip` widen a match over adjacent whitespace.

import { TokenizerError } from './errors.js';

/** `tokenizer.json` `added_tokens[]` entry. */
export interface AddedTokenConfig {
  /** Token id. */
  id: number;
  /** The token text. */
  content: string;
  /** Match only when not glued to word characters on either side. */
  single_word?: boolean;
  /** Absorb whitespace on the left of a match. */
  lstrip?: boolean;
  /** Absorb whitespace on the right of a match. */
  rstrip?: boolean;
  /** Matched in normalized text (pass 2) rather than raw text (pass 1). */
  normalized?: boolean;
  /** Special tokens are dropped by `decode(..., { skipSpecialTokens: true })`. */
  special?: boolean;
}

interface TrieNode {
  next: Map<number, TrieNode> | null;
  /** Index into `tokens` of the token ending here, or -1. */
  token: number;
}

const WHITESPACE = /\p{White_Space}/u;
const WORD_CHAR = /[\p{Alphabetic}\p{N}_]/u;

function newNode(): TrieNode {
  return { next: null, token: -1 };
}

/** Leftmost-longest matcher over a fixed set of strings (UTF-16 code units). */
class Trie {
  private readonly root = newNode();
  private readonly first = new Uint8Array(65536);
  readonly size: number;

  constructor(contents: readonly string[]) {
    contents.forEach((s, index) => {
      if (s.length === 0) return;
      let node = this.root;
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        node.next ??= new Map();
        let child = node.next.get(c);
        if (child === undefined) {
          child = newNode();
          node.next.set(c, child);
        }
        node = child;
      }
      if (node.token < 0) node.token = index;
      this.first[s.charCodeAt(0)] = 1;
    });
    this.size = contents.length;
  }

  /**
   * Leftmost-longest non-overlapping matches in `text[start, end)`, appended to `out` as
   * `[matchStart, matchEnd, tokenIndex]` triples.
   */
  find(text: string, start: number, end: number, out: number[]): void {
    const first = this.first;
    let i = start;
    while (i < end) {
      if (first[text.charCodeAt(i)] === 0) {
        i++;
        continue;
      }
      let node: TrieNode | undefined = this.root;
      let best = -1;
      let bestEnd = -1;
      for (let j = i; j < end && node !== undefined && node.next !== null; j++) {
        node = node.next.get(text.charCodeAt(j));
        if (node !== undefined && node.token >= 0) {
          best = node.token;
          bestEnd = j + 1;
        }
      }
      if (best >= 0) {
        out.push(i, bestEnd, best);
        i = bestEnd;
      } else {
        i++;
      }
    }
  }
}

function charBefore(text: string, i: number): string {
  const c = text.charCodeAt(i - 1);
  if (c >= 0xdc00 && c <= 0xdfff && i >= 2) {
    const h = text.charCodeAt(i - 2);
    if (h >= 0xd800 && h <= 0xdbff) return text.slice(i - 2, i);
  }
  return text[i - 1]!;
}

function charAt(text: string, i: number): string {
  return String.fromCodePoint(text.codePointAt(i)!);
}

/** The added tokens of a tokenizer and the two-pass splitter over them. */
export class AddedVocabulary {
  /** All added tokens, in tokenizer.json order. */
  readonly tokens: readonly Required<AddedTokenConfig>[];
  /** Content -> id. */
  readonly byContent: ReadonlyMap<string, number>;
  /** Ids of the added tokens marked special. */
  readonly specialIds: ReadonlySet<number>;
  private readonly raw: Trie;
  private readonly rawTokens: Required<AddedTokenConfig>[];
  private readonly normalized: Trie;
  private readonly normalizedTokens: Required<AddedTokenConfig>[];
  private readonly scratch: number[] = [];

  private constructor(tokens: Required<AddedTokenConfig>[], normalize: ((s: string) => string) | null) {
    this.tokens = tokens;
    const byContent = new Map<string, number>();
    const specialIds = new Set<number>();
    for (const t of tokens) {
      byContent.set(t.content, t.id);
      if (t.special) specialIds.add(t.id);
    }
    this.byContent = byContent;
    this.specialIds = specialIds;
    this.rawTokens = tokens.filter((t) => !t.normalized);
    this.normalizedTokens = tokens.filter((t) => t.normalized);
    this.raw = new Trie(this.rawTokens.map((t) => t.content));
    // HF matches a normalized token by its normalized content (in the normalized text).
    this.normalized = new Trie(this.normalizedTokens.map((t) => (normalize ? normalize(t.content) : t.content)));
  }

  /**
   * Validate and build from the `added_tokens` field of tokenizer.json; `normalize` is the
   * tokenizer's normalizer, which tokens with `normalized: true` are matched through.
   */
  static fromConfig(config: unknown, field = 'added_tokens', normalize: ((s: string) => string) | null = null): AddedVocabulary {
    if (config === undefined || config === null) return new AddedVocabulary([], normalize);
    if (!Array.isArray(config)) throw new TokenizerError('InvalidField', 'expected an array', { field });
    const tokens = config.map((t: unknown, i): Required<AddedTokenConfig> => {
      const path = `${field}[${i}]`;
      if (t === null || typeof t !== 'object') throw new TokenizerError('InvalidField', 'expected an object', { field: path });
      const o = t as Record<string, unknown>;
      if (typeof o.id !== 'number' || !Number.isInteger(o.id) || o.id < 0) {
        throw new TokenizerError('InvalidField', 'expected a non-negative integer', { field: `${path}.id` });
      }
      if (typeof o.content !== 'string' || o.content.length === 0) {
        throw new TokenizerError('InvalidField', 'expected a non-empty string', { field: `${path}.content` });
      }
      const flag = (name: string, dflt: boolean): boolean => {
        const v = o[name] ?? dflt;
        if (typeof v !== 'boolean') throw new TokenizerError('InvalidField', 'expected a boolean', { field: `${path}.${name}` });
        return v;
      };
      const special = flag('special', false);
      return {
        id: o.id,
        content: o.content,
        single_word: flag('single_word', false),
        lstrip: flag('lstrip', false),
        rstrip: flag('rstrip', false),
        normalized: flag('normalized', !special),
        special,
      };
    });
    return new AddedVocabulary(tokens, normalize);
  }

  /**
   * Split `text` into added-token matches and plain text. Appends `[start, end, id]` triples to
   * `out`, with `id = -1` for plain text spans (never empty). With `splitSpecial = false`, special
   * tokens are not matched (their text is tokenized like any other text).
   */
  split(text: string, out: number[], splitSpecial = true): void {
    if (this.tokens.length === 0) {
      if (text.length > 0) out.push(0, text.length, -1);
      return;
    }
    const first: number[] = [];
    this.pass(text, 0, text.length, this.raw, this.rawTokens, splitSpecial, first);
    for (let k = 0; k < first.length; k += 3) {
      if (first[k + 2] !== -1) out.push(first[k]!, first[k + 1]!, first[k + 2]!);
      else this.pass(text, first[k]!, first[k + 1]!, this.normalized, this.normalizedTokens, splitSpecial, out);
    }
  }

  /** Pass 1 alone: the tokens with `normalized: false`, matched in the raw text (see {@link split}). */
  splitRaw(text: string, out: number[], splitSpecial = true): void {
    this.pass(text, 0, text.length, this.raw, this.rawTokens, splitSpecial, out);
  }

  /** Pass 2 alone: the tokens with `normalized: true`, matched in a normalized piece (see {@link split}). */
  splitNormalized(text: string, out: number[], splitSpecial = true): void {
    this.pass(text, 0, text.length, this.normalized, this.normalizedTokens, splitSpecial, out);
  }

  /** One pass of HF `split_with_indices` over `text[start, end)`. */
  private pass(
    text: string,
    start: number,
    end: number,
    trie: Trie,
    tokens: Required<AddedTokenConfig>[],
    splitSpecial: boolean,
    out: number[],
  ): void {
    if (trie.size === 0) {
      if (end > start) out.push(start, end, -1);
      return;
    }
    const matches = this.scratch;
    matches.length = 0;
    trie.find(text, start, end, matches);
    let offset = start;
    for (let k = 0; k < matches.length; k += 3) {
      let s = matches[k]!;
      let e = matches[k + 1]!;
      const token = tokens[matches[k + 2]!]!;
      if (!splitSpecial && token.special) continue;
      if (token.single_word) {
        const startSpace = s === start || !WORD_CHAR.test(charBefore(text, s));
        const stopSpace = e === end || !WORD_CHAR.test(charAt(text, e));
        if (!startSpace || !stopSpace) continue;
      }
      if (token.lstrip) {
        let ns = s;
        while (ns > start) {
          const ch = charBefore(text, ns);
          if (!WHITESPACE.test(ch)) break;
          ns -= ch.length;
        }
        s = Math.max(ns, offset);
      }
      if (token.rstrip) {
        while (e < end) {
          const ch = charAt(text, e);
          if (!WHITESPACE.test(ch)) break;
          e += ch.length;
        }
      }
      if (offset < s) out.push(offset, s, -1);
      out.push(s, e, token.id);
      offset = e;
    }
    if (offset < end) out.push(offset, end, -1);
  }
}
