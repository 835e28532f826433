// Post-processors: what `encode(text, { addSpecialTokens })` wraps around the encoded text.
//
//   TemplateProcessing  `single` template: SpecialToken pieces insert their ids (offsets [0, 0]),
//                       the Sequence piece "A" is the text (e.g. Apertus: `<s>` + text).
//   ByteLevel           no tokens; with `trim_offsets` the offsets of tokens are trimmed of the
//                       spaces they start or end with (HF `process_offsets`).
//   Sequence            the above in order.

import { BYTE_TO_CHAR } from './byte-level.js';
import { TokenizerError } from './errors.js';

/** One piece of a TemplateProcessing template. */
export type TemplatePiece = { SpecialToken: { id: string; type_id?: number } } | { Sequence: { id: 'A' | 'B'; type_id?: number } };

/** `tokenizer.json` `post_processor` object this package implements. */
export type PostProcessorConfig =
  | {
      type: 'TemplateProcessing';
      single: TemplatePiece[];
      pair?: TemplatePiece[];
      special_tokens: Record<string, { id: string; ids: number[]; tokens: string[] }>;
    }
  | { type: 'ByteLevel'; add_prefix_space?: boolean; trim_offsets?: boolean; use_regex?: boolean }
  | { type: 'Sequence'; processors: PostProcessorConfig[] };

/** Mutable encoding passed through post-processing. */
export interface RawEncoding {
  /** The (well-formed) input text. */
  text: string;
  ids: number[];
  /** Token strings, or null when not requested. */
  tokens: string[] | null;
  /** Flat `[start, end, start, end, ...]` offsets, or null when not requested. */
  offsets: number[] | null;
  /** 1 for tokens inserted by the post-processor. */
  special: number[] | null;
}

interface Processor {
  process(enc: RawEncoding, addSpecialTokens: boolean): RawEncoding;
}

const SPACE_CHAR = BYTE_TO_CHAR[0x20]!;
const WHITESPACE = /\p{White_Space}/u;

function isSpaceLike(c: string): boolean {
  return c === SPACE_CHAR || WHITESPACE.test(c);
}

/** `i`, moved back one unit if it points at the low half of a surrogate pair. */
function snapToChar(text: string, i: number): number {
  if (i <= 0 || i >= text.length) return i;
  const lo = text.charCodeAt(i);
  const hi = text.charCodeAt(i - 1);
  return lo >= 0xdc00 && lo <= 0xdfff && hi >= 0xd800 && hi <= 0xdbff ? i - 1 : i;
}

class ByteLevelProcessor implements Processor {
  constructor(
    private readonly trimOffsets: boolean,
    private readonly addPrefixSpace: boolean,
  ) {}

  process(enc: RawEncoding): RawEncoding {
    if (!this.trimOffsets || enc.offsets === null || enc.tokens === null) return enc;
    const { offsets, tokens } = enc;
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i]!;
      const chars = Array.from(token);
      let leading = 0;
      while (leading < chars.length && isSpaceLike(chars[leading]!)) leading++;
      let trailing = 0;
      while (trailing < chars.length && isSpaceLike(chars[chars.length - 1 - trailing]!)) trailing++;
      if (leading === 0 && trailing === 0) continue;
      let start = offsets[2 * i]!;
      let end = offsets[2 * i + 1]!;
      if (leading > 0) {
        const isFirst = i === 0 || start === 0;
        if (isFirst && this.addPrefixSpace && leading === 1) leading = 0;
        start = Math.min(start + leading, end);
      }
      if (trailing > 0 && end >= trailing) end = Math.max(end - trailing, start);
      // The reference trims in UTF-8 byte offsets and reports the character containing the
      // resulting byte; in UTF-16 that means never stopping between the halves of a surrogate pair.
      offsets[2 * i] = snapToChar(enc.text, start);
      offsets[2 * i + 1] = snapToChar(enc.text, end);
    }
    return enc;
  }
}

/** `dst.push(...src)` without spreading: a long text has more tokens than a call can take arguments. */
function append<T>(dst: T[], src: readonly T[]): void {
  for (let i = 0; i < src.length; i++) dst.push(src[i]!);
}

/** A template piece: the text ('A') or special tokens to insert. */
type CompiledPiece = { ids: number[]; tokens: string[] } | 'A';

class TemplateProcessor implements Processor {
  constructor(private readonly pieces: readonly CompiledPiece[]) {}

  process(enc: RawEncoding, addSpecialTokens: boolean): RawEncoding {
    if (!addSpecialTokens) return enc;
    const out: RawEncoding = {
      text: enc.text,
      ids: [],
      tokens: enc.tokens === null ? null : [],
      offsets: enc.offsets === null ? null : [],
      special: enc.special === null ? null : [],
    };
    for (const piece of this.pieces) {
      if (piece === 'A') {
        append(out.ids, enc.ids);
        if (out.tokens !== null) append(out.tokens, enc.tokens!);
        if (out.offsets !== null) append(out.offsets, enc.offsets!);
        if (out.special !== null) append(out.special, enc.special!);
      } else {
        for (let k = 0; k < piece.ids.length; k++) {
          out.ids.push(piece.ids[k]!);
          if (out.tokens !== null) out.tokens.push(piece.tokens[k] ?? '');
          if (out.offsets !== null) out.offsets.push(0, 0);
          if (out.special !== null) out.special.push(1);
        }
      }
    }
    return out;
  }
}

/** A compiled post-processor (or the identity when tokenizer.json has none). */
export class PostProcessor {
  private readonly steps: readonly Processor[];
  /** Ids inserted by `encode(text, { addSpecialTokens: true })` before the text. */
  readonly prefixIds: readonly number[];
  /** Ids inserted after the text. */
  readonly suffixIds: readonly number[];

  private constructor(steps: Processor[], prefixIds: number[], suffixIds: number[]) {
    this.steps = steps;
    this.prefixIds = prefixIds;
    this.suffixIds = suffixIds;
  }

  /** Build from the `post_processor` field of tokenizer.json. */
  static fromConfig(config: unknown, field = 'post_processor'): PostProcessor {
    const steps: Processor[] = [];
    const prefix: number[] = [];
    const suffix: number[] = [];
    const visit = (c: unknown, path: string): void => {
      if (c === null || typeof c !== 'object' || Array.isArray(c)) {
        throw new TokenizerError('InvalidField', 'expected a post-processor object', { field: path });
      }
      const o = c as Record<string, unknown>;
      switch (o.type) {
        case 'Sequence':
          if (!Array.isArray(o.processors)) throw new TokenizerError('InvalidField', 'expected an array', { field: `${path}.processors` });
          o.processors.forEach((p, i) => visit(p, `${path}.processors[${i}]`));
          return;
        case 'ByteLevel': {
          const trim = o.trim_offsets ?? true;
          const aps = o.add_prefix_space ?? true;
          if (typeof trim !== 'boolean') throw new TokenizerError('InvalidField', 'expected a boolean', { field: `${path}.trim_offsets` });
          if (typeof aps !== 'boolean') throw new TokenizerError('InvalidField', 'expected a boolean', { field: `${path}.add_prefix_space` });
          steps.push(new ByteLevelProcessor(trim, aps));
          return;
        }
        case 'TemplateProcessing': {
          const specials = o.special_tokens;
          if (specials === null || typeof specials !== 'object' || Array.isArray(specials)) {
            throw new TokenizerError('InvalidField', 'expected an object', { field: `${path}.special_tokens` });
          }
          if (!Array.isArray(o.single)) throw new TokenizerError('InvalidField', 'expected an array', { field: `${path}.single` });
          const pieces: CompiledPiece[] = [];
          let seenA = false;
          o.single.forEach((p: unknown, i: number) => {
            const pp = `${path}.single[${i}]`;
            const piece = p as Record<string, Record<string, unknown> | undefined> | null;
            if (piece !== null && typeof piece === 'object' && piece.Sequence !== undefined) {
              if (piece.Sequence?.id !== 'A') {
                throw new TokenizerError('InvalidField', 'the single-sequence template may only use sequence "A"', { field: `${pp}.Sequence.id` });
              }
              pieces.push('A');
              seenA = true;
            } else if (piece !== null && typeof piece === 'object' && piece.SpecialToken !== undefined) {
              const name = piece.SpecialToken?.id;
              const entry = typeof name === 'string' ? (specials as Record<string, unknown>)[name] : undefined;
              const e = entry as { ids?: unknown; tokens?: unknown } | undefined;
              if (e === undefined || !Array.isArray(e.ids) || !e.ids.every((x) => Number.isInteger(x) && (x as number) >= 0)) {
                throw new TokenizerError('InvalidField', `special token ${JSON.stringify(name)} has no valid entry in special_tokens`, {
                  field: `${pp}.SpecialToken.id`,
                });
              }
              const tokens = Array.isArray(e.tokens) ? (e.tokens as string[]) : [];
              pieces.push({ ids: e.ids as number[], tokens });
              (seenA ? suffix : prefix).push(...(e.ids as number[]));
            } else {
              throw new TokenizerError('InvalidField', 'expected {"SpecialToken": ...} or {"Sequence": ...}', { field: pp });
            }
          });
          if (!seenA) throw new TokenizerError('InvalidField', 'the single template has no Sequence "A"', { field: `${path}.single` });
          steps.push(new TemplateProcessor(pieces));
          return;
        }
        default:
          throw new TokenizerError(
            'UnsupportedComponent',
            `post-processor type ${JSON.stringify(o.type)} is not supported (supported: TemplateProcessing, ByteLevel, Sequence)`,
            { field: `${path}.type` },
          );
      }
    };
    if (config !== null && config !== undefined) visit(config, field);
    return new PostProcessor(steps, prefix, suffix);
  }

  /** Apply all steps to `enc`. */
  process(enc: RawEncoding, addSpecialTokens: boolean): RawEncoding {
    let e = enc;
    for (const s of this.steps) e = s.process(e, addSpecialTokens);
    return e;
  }

  /** Number of ids `process` adds when `addSpecialTokens` is true. */
  get addedCount(): number {
    return this.prefixIds.length + this.suffixIds.length;
  }
}
