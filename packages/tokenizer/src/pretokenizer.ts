// Pre-tokenizers: cut text into the pieces ("pre-tokens", "words") that BPE then encodes one by one.
//
// Supported, with Hugging Face `tokenizers` semantics:
//   Split      { pattern: {Regex}|{String}, behavior, invert }   (Oniguruma regex, see regex.ts)
//   ByteLevel  { add_prefix_space, use_regex, trim_offsets }     (the byte mapping itself happens in
//                                                                 the BPE step; here: prefix space and
//                                                                 the optional GPT-2 split)
//   Sequence   { pretokenizers: [...] }
// Pieces are kept as offsets into the original string, never copied: `[start, end, prefixed]`
// triples, where `prefixed = 1` means a virtual ' ' precedes text[start] (ByteLevel add_prefix_space);
// a prefixed piece may be empty (just the virtual space).

import { TokenizerError } from './errors.js';
import { compileOniguruma } from './regex.js';

/** The Apertus pre-tokenizer regex (spec §5.1), Oniguruma syntax as stored in tokenizer.json. */
export const APERTUS_PRETOKENIZER_PATTERN =
  '[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';

/** The GPT-2 split used by `ByteLevel` when `use_regex` is true. */
export const GPT2_PRETOKENIZER_PATTERN =
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/** How a `Split` pre-tokenizer treats the matches of its pattern (HF `SplitDelimiterBehavior`). */
export type SplitBehavior = 'Removed' | 'Isolated' | 'MergedWithPrevious' | 'MergedWithNext' | 'Contiguous';

/** `tokenizer.json` form of a pre-tokenizer this package implements. */
export type PreTokenizerConfig =
  | {
      type: 'Split';
      pattern: { Regex: string } | { String: string };
      behavior: SplitBehavior;
      invert?: boolean;
    }
  | { type: 'ByteLevel'; add_prefix_space?: boolean; use_regex?: boolean; trim_offsets?: boolean }
  | { type: 'Sequence'; pretokenizers: PreTokenizerConfig[] };

/** Flat list of pieces: `[start0, end0, prefixed0, start1, end1, prefixed1, ...]`. */
export type Pieces = number[];

interface Step {
  /** Replace each piece of `input` by its sub-pieces, appended to `output`. */
  apply(text: string, input: Pieces, output: Pieces): void;
}

/** Code units of the code point at `i` (1 or 2). */
function charWidth(s: string, i: number): number {
  const c = s.charCodeAt(i);
  return c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
}

const BEHAVIORS: readonly SplitBehavior[] = ['Removed', 'Isolated', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous'];

class SplitStep implements Step {
  private readonly re: RegExp;
  /** Same pattern with the sticky flag: tests for a match starting exactly at lastIndex, without allocating. */
  private readonly sticky: RegExp;
  private readonly behavior: SplitBehavior;
  private readonly invert: boolean;
  // Scratch: [start, end, isMatch] triples for one piece.
  private readonly spans: number[] = [];

  constructor(re: RegExp, behavior: SplitBehavior, invert: boolean) {
    this.re = re;
    this.sticky = new RegExp(re.source, 'uy');
    this.behavior = behavior;
    this.invert = invert;
  }

  apply(text: string, input: Pieces, output: Pieces): void {
    for (let k = 0; k < input.length; k += 3) {
      const start = input[k]!;
      const end = input[k + 1]!;
      const prefixed = input[k + 2]!;
      // The regex must see the piece as a whole string (its end is end-of-input for lookaheads).
      const str =
        prefixed === 1 ? ` ${text.slice(start, end)}` : start === 0 && end === text.length ? text : text.slice(start, end);
      this.findSpans(str);
      this.emit(start - prefixed, prefixed, output);
    }
  }

  /** Matches and the gaps between them, as HF `Pattern::find_matches` over Oniguruma's `find_iter`. */
  private findSpans(str: string): void {
    const spans = this.spans;
    spans.length = 0;
    const re = this.re;
    const len = str.length;
    let prev = 0;
    let lastEnd = 0;
    let lastMatchEnd = -1;
    const sticky = this.sticky;
    while (lastEnd <= len) {
      // Usual case: the next match starts right where the previous one ended.
      if (lastEnd < len) {
        sticky.lastIndex = lastEnd;
        if (sticky.test(str)) {
          const e = sticky.lastIndex;
          if (e !== lastEnd) {
            if (prev !== lastEnd) spans.push(prev, lastEnd, 0);
            spans.push(lastEnd, e, 1);
            prev = e;
            lastEnd = e;
            lastMatchEnd = e;
            continue;
          }
        }
      }
      re.lastIndex = lastEnd;
      const m = re.exec(str);
      if (m === null) break;
      const s = m.index;
      const e = s + m[0].length;
      if (e === s && lastMatchEnd === e) {
        // No empty match right after the previous match: step one character and search again.
        lastEnd += lastEnd < len ? charWidth(str, lastEnd) : 1;
        continue;
      }
      lastEnd = e;
      lastMatchEnd = e;
      if (prev !== s) spans.push(prev, s, 0);
      spans.push(s, e, 1);
      prev = e;
    }
    if (prev !== len) spans.push(prev, len, 0);
    if (len === 0) spans.push(0, 0, 0);
    if (this.invert) for (let i = 2; i < spans.length; i += 3) spans[i] = 1 - spans[i]!;
  }

  /** Apply the split behaviour to `this.spans` and append the non-empty pieces (shifted by `base`). */
  private emit(base: number, prefixed: number, output: Pieces): void {
    const spans = this.spans;
    const n = spans.length;
    if (this.behavior === 'Isolated' && prefixed === 0) {
      // Fast path (the usual pre-tokenizer): every span is a piece.
      for (let i = 0; i < n; i += 3) {
        const s = spans[i]!;
        const e = spans[i + 1]!;
        if (s !== e) output.push(base + s, base + e, 0);
      }
      return;
    }
    // Merge spans into `merged` as [start, end, keep] triples.
    const merged: number[] = [];
    switch (this.behavior) {
      case 'Isolated':
        for (let i = 0; i < n; i += 3) merged.push(spans[i]!, spans[i + 1]!, 1);
        break;
      case 'Removed':
        for (let i = 0; i < n; i += 3) merged.push(spans[i]!, spans[i + 1]!, 1 - spans[i + 2]!);
        break;
      case 'Contiguous': {
        let previous = 0;
        for (let i = 0; i < n; i += 3) {
          const isMatch = spans[i + 2]!;
          if (isMatch === previous && merged.length > 0) merged[merged.length - 2] = spans[i + 1]!;
          else merged.push(spans[i]!, spans[i + 1]!, 1);
          previous = isMatch;
        }
        break;
      }
      case 'MergedWithPrevious': {
        let previous = 0;
        for (let i = 0; i < n; i += 3) {
          const isMatch = spans[i + 2]!;
          if (isMatch === 1 && previous === 0 && merged.length > 0) merged[merged.length - 2] = spans[i + 1]!;
          else merged.push(spans[i]!, spans[i + 1]!, 1);
          previous = isMatch;
        }
        break;
      }
      case 'MergedWithNext': {
        let previous = 0;
        const rev: number[] = [];
        for (let i = n - 3; i >= 0; i -= 3) {
          const isMatch = spans[i + 2]!;
          if (isMatch === 1 && previous === 0 && rev.length > 0) rev[rev.length - 3] = spans[i]!;
          else rev.push(spans[i]!, spans[i + 1]!, 1);
          previous = isMatch;
        }
        for (let i = rev.length - 3; i >= 0; i -= 3) merged.push(rev[i]!, rev[i + 1]!, 1);
        break;
      }
    }
    for (let i = 0; i < merged.length; i += 3) {
      const s = merged[i]!;
      const e = merged[i + 1]!;
      if (merged[i + 2] === 0 || s === e) continue;
      if (prefixed === 1 && s === 0) {
        // Piece starts with the virtual space: it stays virtual. (A piece that is only the
        // virtual space becomes empty here; its token's offsets cover the next character, as
        // in the reference.)
        output.push(base + 1, base + e, 1);
      } else {
        output.push(base + s, base + e, 0);
      }
    }
  }
}

class ByteLevelStep implements Step {
  private readonly addPrefixSpace: boolean;
  private readonly gpt2: SplitStep | null;

  constructor(addPrefixSpace: boolean, useRegex: boolean) {
    this.addPrefixSpace = addPrefixSpace;
    this.gpt2 = useRegex ? new SplitStep(compileOniguruma(GPT2_PRETOKENIZER_PATTERN), 'Isolated', false) : null;
  }

  apply(text: string, input: Pieces, output: Pieces): void {
    let pieces = input;
    if (this.addPrefixSpace) {
      pieces = [];
      for (let k = 0; k < input.length; k += 3) {
        const start = input[k]!;
        const prefixed = input[k + 2]! === 1 || text.charCodeAt(start) === 0x20 ? input[k + 2]! : 1;
        pieces.push(start, input[k + 1]!, prefixed);
      }
    }
    if (this.gpt2 !== null) this.gpt2.apply(text, pieces, output);
    else for (let k = 0; k < pieces.length; k++) output.push(pieces[k]!);
  }
}

/**
 * A compiled pre-tokenizer pipeline. `run` cuts `text[start, end)` into pieces and appends them to
 * `out` as `[start, end, prefixed]` triples of offsets into `text`.
 */
export class PreTokenizer {
  private readonly steps: readonly Step[];
  /** True when the pipeline contains a ByteLevel step (required for byte-level BPE). */
  readonly byteLevel: boolean;
  private readonly scratchA: Pieces = [];
  private readonly scratchB: Pieces = [];

  private constructor(steps: Step[], byteLevel: boolean) {
    this.steps = steps;
    this.byteLevel = byteLevel;
  }

  /**
   * Build from the `pre_tokenizer` field of tokenizer.json. `field` names that field in errors.
   * Throws {@link TokenizerError} for unknown types (`UnsupportedComponent`) and bad fields.
   */
  static fromConfig(config: unknown, field = 'pre_tokenizer'): PreTokenizer {
    const steps: Step[] = [];
    let byteLevel = false;
    const visit = (c: unknown, path: string): void => {
      if (c === null || typeof c !== 'object' || Array.isArray(c)) {
        throw new TokenizerError('InvalidField', 'expected a pre-tokenizer object', { field: path });
      }
      const o = c as Record<string, unknown>;
      switch (o.type) {
        case 'Sequence': {
          if (!Array.isArray(o.pretokenizers)) {
            throw new TokenizerError('InvalidField', 'expected an array', { field: `${path}.pretokenizers` });
          }
          o.pretokenizers.forEach((p, i) => visit(p, `${path}.pretokenizers[${i}]`));
          return;
        }
        case 'Split': {
          const behavior = o.behavior;
          if (typeof behavior !== 'string' || !BEHAVIORS.includes(behavior as SplitBehavior)) {
            throw new TokenizerError('InvalidField', `unknown split behavior ${JSON.stringify(behavior)}`, {
              field: `${path}.behavior`,
            });
          }
          const invert = o.invert ?? false;
          if (typeof invert !== 'boolean') {
            throw new TokenizerError('InvalidField', 'expected a boolean', { field: `${path}.invert` });
          }
          const pattern = o.pattern as Record<string, unknown> | null | undefined;
          let re: RegExp;
          if (pattern !== null && typeof pattern === 'object' && typeof pattern.Regex === 'string') {
            try {
              re = compileOniguruma(pattern.Regex);
            } catch (err) {
              if (err instanceof TokenizerError) {
                throw new TokenizerError(err.code, err.message, { field: `${path}.pattern.Regex`, cause: err });
              }
              throw err;
            }
          } else if (pattern !== null && typeof pattern === 'object' && typeof pattern.String === 'string') {
            re = new RegExp(pattern.String.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&'), 'gu');
          } else {
            throw new TokenizerError('InvalidField', 'expected {"Regex": string} or {"String": string}', {
              field: `${path}.pattern`,
            });
          }
          steps.push(new SplitStep(re, behavior as SplitBehavior, invert));
          return;
        }
        case 'ByteLevel': {
          const aps = o.add_prefix_space ?? true;
          const useRegex = o.use_regex ?? true;
          if (typeof aps !== 'boolean') {
            throw new TokenizerError('InvalidField', 'expected a boolean', { field: `${path}.add_prefix_space` });
          }
          if (typeof useRegex !== 'boolean') {
            throw new TokenizerError('InvalidField', 'expected a boolean', { field: `${path}.use_regex` });
          }
          steps.push(new ByteLevelStep(aps, useRegex));
          byteLevel = true;
          return;
        }
        default:
          throw new TokenizerError(
            'UnsupportedComponent',
            `pre-tokenizer type ${JSON.stringify(o.type)} is not supported (supported: Sequence, Split, ByteLevel)`,
            { field: `${path}.type` },
          );
      }
    };
    if (config !== null && config !== undefined) visit(config, field);
    return new PreTokenizer(steps, byteLevel);
  }

  /** Append the pieces of `text[start, end)` to `out` (see {@link Pieces}). */
  run(text: string, start: number, end: number, out: Pieces): void {
    if (start === end) return;
    const steps = this.steps;
    if (steps.length === 0) {
      out.push(start, end, 0);
      return;
    }
    if (steps.length === 1) {
      steps[0]!.apply(text, [start, end, 0], out);
      return;
    }
    let cur = this.scratchA;
    let next = this.scratchB;
    cur.length = 0;
    cur.push(start, end, 0);
    for (let i = 0; i < steps.length; i++) {
      const target = i === steps.length - 1 ? out : next;
      if (target === next) next.length = 0;
      steps[i]!.apply(text, cur, target);
      const t = cur;
      cur = next;
      next = t;
    }
  }
}
