// Normalizers (`tokenizer.json` `normalizer`): what HF tokenizers applies to each piece of text
// between added tokens before pre-tokenization.
//
//   NFC, NFD, NFKC, NFKD   Unicode normalization forms (String.prototype.normalize)
//   Lowercase              per code point, as Rust's char::to_lowercase (no final-sigma context)
//   Strip                  leading and/or trailing White_Space
//   Replace                every match of a string or an Oniguruma regex by a content string
//                          (Apertus 1.5 rewrites `<think>` and older reasoning markers this way)
//   Sequence               the above in order (an empty Sequence changes nothing)
//
// Each output UTF-16 unit remembers the range of the original text it came from (HF
// NormalizedString alignments), so offsets still point into the text the caller passed. The
// normalization forms work per chunk (a code point and the combining marks after it): a code
// point from a decomposition points at its source, a composed one at the starter it was built on.
// When the chunks do not normalize independently (a rare composition across chunks) the whole
// piece is normalized at once and every unit of it points at the whole original range.
//
// String.prototype.normalize follows the engine's Unicode version (Node 20.20: 17.0); the
// reference normalizes with Unicode 9.0 tables, where every later character is unassigned: a
// starter with no decomposition that nothing composes with, left as it is. So the forms keep the
// code points of reference-unicode-table.ts as they are and normalize the text between them,
// which is what the reference does with them (and what every engine from Unicode 9.0 on agrees
// with). Text without them (ASCII, and all text of Unicode 9.0) costs one bit test per code point.

import { TokenizerError } from './errors.js';
import { NEWER, UNASSIGNED } from './reference-unicode-table.js';
import { compileOniguruma } from './regex.js';

/** `tokenizer.json` `normalizer` objects this package implements. */
export type NormalizerConfig =
  | { type: 'NFC' | 'NFD' | 'NFKC' | 'NFKD' | 'Lowercase' }
  | { type: 'Strip'; strip_left?: boolean; strip_right?: boolean }
  | { type: 'Replace'; pattern: { String: string } | { Regex: string }; content: string }
  | { type: 'Sequence'; normalizers: NormalizerConfig[] };

/** Normalized text; unit `i` came from the original range `[start[i], end[i])`. */
export interface NormalizedText {
  text: string;
  start: number[];
  end: number[];
}

type Step = (s: NormalizedText) => NormalizedText;

const WHITESPACE = /\p{White_Space}/u;
/** Decompositions that may combine with what precedes them: marks, Hangul medial vowels and final consonants. */
const CONTINUATION = /^[\p{M}\u1160-\u11ff]/u;

let keepBits: Uint8Array | null = null;
/** Whether the reference leaves code point `c` untouched where the engine might not: one bit per code point, built on first use. */
function kept(c: number): boolean {
  if (keepBits === null) {
    keepBits = new Uint8Array(0x110000 >> 3);
    for (const ranges of [NEWER, UNASSIGNED]) {
      for (let i = 0; i < ranges.length; i += 2) {
        const last = ranges[i + 1]!;
        for (let k = ranges[i]!; k <= last; ) {
          if ((k & 7) === 0 && k + 7 <= last) {
            keepBits.fill(0xff, k >> 3, (last + 1) >> 3); // whole bytes at once
            k = ((last + 1) >> 3) << 3;
          } else {
            keepBits[k >> 3]! |= 1 << (k & 7);
            k++;
          }
        }
      }
    }
  }
  return (keepBits[c >> 3]! & (1 << (c & 7))) !== 0;
}

function codePointEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  return c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? i + 2 : i + 1;
}

/** Append `out`, the image of the chunk `s.text[i, j)`: unchanged, its units keep their alignments; changed, they all get the chunk's range. */
function appendChunk(acc: NormalizedText, s: NormalizedText, i: number, j: number, out: string): void {
  const same = out === s.text.slice(i, j);
  acc.text += out;
  for (let k = 0; k < out.length; k++) {
    acc.start.push(same ? s.start[i + k]! : s.start[i]!);
    acc.end.push(same ? s.end[i + k]! : s.end[j - 1]!);
  }
}

/** Rebuild `s` chunk by chunk: chunk [i, j) becomes f(chunk). */
function mapChunks(s: NormalizedText, chunkEnd: (text: string, i: number) => number, f: (chunk: string) => string): NormalizedText {
  const acc: NormalizedText = { text: '', start: [], end: [] };
  for (let i = 0; i < s.text.length; ) {
    const j = chunkEnd(s.text, i);
    appendChunk(acc, s, i, j, f(s.text.slice(i, j)));
    i = j;
  }
  return acc;
}

/**
 * Where each output code point of `chunk.normalize(form)` comes from: the index (into the code
 * points of `chunk`) of the code point whose decomposition supplied it, or of the starter a
 * composed character was built on (as HF's alignments do). Null if the pieces cannot be matched.
 */
function formOrigins(chunk: string, form: 'NFC' | 'NFD' | 'NFKC' | 'NFKD'): { out: string[]; origin: number[] } | null {
  const decomposition = form === 'NFC' || form === 'NFD' ? 'NFD' : 'NFKD';
  // Each code point decomposed on its own, in order; canonical reordering then permutes the marks
  // but the alignments stay where they were (positional, as in HF).
  const sources: number[] = [];
  Array.from(chunk).forEach((cp, q) => {
    for (const _ of cp.normalize(decomposition)) sources.push(q);
  });
  const decomposed = Array.from(chunk.normalize(decomposition), (c, k) => ({ c, q: sources[k]!, used: false }));
  if (decomposed.length !== sources.length) return null;
  const take = (c: string): { q: number } | null => {
    const hit = decomposed.find((x) => !x.used && x.c === c) ?? null;
    if (hit) hit.used = true;
    return hit;
  };
  if (form === decomposition) return { out: decomposed.map((d) => d.c), origin: decomposed.map((d) => d.q) };
  // Composition: a composed character comes from its first canonical component.
  const out: string[] = [];
  const origin: number[] = [];
  for (const o of chunk.normalize(form)) {
    const parts = Array.from(o.normalize('NFD'));
    const first = take(parts[0]!);
    if (!first) return null;
    for (const p of parts.slice(1)) if (!take(p)) return null;
    out.push(o);
    origin.push(first.q);
  }
  return { out, origin };
}

function unicodeForm(form: 'NFC' | 'NFD' | 'NFKC' | 'NFKD'): Step {
  const chunkEnd = (text: string, i: number): number => {
    let j = codePointEnd(text, i);
    while (j < text.length) {
      const k = codePointEnd(text, j);
      if (!CONTINUATION.test(text.slice(j, k).normalize('NFKD'))) break;
      j = k;
    }
    return j;
  };
  return (s) => {
    const whole = s.text.normalize(form);
    const acc: NormalizedText = { text: '', start: [], end: [] };
    for (let i = 0; i < s.text.length; ) {
      const j = chunkEnd(s.text, i);
      const chunk = s.text.slice(i, j);
      const out = chunk.normalize(form);
      const mapped = out === chunk ? null : formOrigins(chunk, form);
      if (mapped === null) {
        appendChunk(acc, s, i, j, out);
      } else {
        const unitOf: number[] = []; // code point index → its first unit in the chunk
        for (let u = 0; u < chunk.length; u = codePointEnd(chunk, u)) unitOf.push(u);
        unitOf.push(chunk.length);
        mapped.out.forEach((o, n) => {
          const q = mapped.origin[n]!;
          acc.text += o;
          for (let k = 0; k < o.length; k++) {
            acc.start.push(s.start[i + unitOf[q]!]!);
            acc.end.push(s.end[i + unitOf[q + 1]! - 1]!);
          }
        });
      }
      i = j;
    }
    if (acc.text === whole) return acc;
    return mapChunks(s, (t) => t.length, () => whole);
  };
}

function slice(s: NormalizedText, i: number, j: number): NormalizedText {
  return { text: s.text.slice(i, j), start: s.start.slice(i, j), end: s.end.slice(i, j) };
}

function append(acc: NormalizedText, s: NormalizedText): void {
  acc.text += s.text;
  for (let k = 0; k < s.text.length; k++) {
    acc.start.push(s.start[k]!);
    acc.end.push(s.end[k]!);
  }
}

/** `form` applied as the reference does: the kept code points stay, the text between them is normalized on its own. */
function referenceForm(form: 'NFC' | 'NFD' | 'NFKC' | 'NFKD'): Step {
  const step = unicodeForm(form);
  return (s) => {
    let acc: NormalizedText | null = null;
    let from = 0;
    for (let i = 0; i < s.text.length; ) {
      const c = s.text.codePointAt(i)!;
      const j = i + (c > 0xffff ? 2 : 1);
      if (kept(c)) {
        acc ??= { text: '', start: [], end: [] };
        append(acc, step(slice(s, from, i)));
        append(acc, slice(s, i, j));
        from = j;
      }
      i = j;
    }
    if (acc === null) return step(s);
    append(acc, step(slice(s, from, s.text.length)));
    return acc;
  };
}

const lowercase: Step = (s) => mapChunks(s, codePointEnd, (c) => c.toLowerCase());

function strip(left: boolean, right: boolean): Step {
  return (s) => {
    let a = 0;
    let b = s.text.length;
    if (left) while (a < b && WHITESPACE.test(s.text[a]!)) a++;
    if (right) while (b > a && WHITESPACE.test(s.text[b - 1]!)) b--;
    return slice(s, a, b);
  };
}

/**
 * Every non-empty match of `pattern` (leftmost first, not overlapping) replaced by `content`. As in
 * HF (the match removed, the content inserted after it), every unit of the content points where
 * the match's last character came from.
 */
function replace(pattern: string | RegExp, content: string): Step {
  const matches = (text: string): [number, number][] => {
    const out: [number, number][] = [];
    if (typeof pattern === 'string') {
      for (let i = text.indexOf(pattern); i >= 0; i = text.indexOf(pattern, i + pattern.length)) out.push([i, i + pattern.length]);
      return out;
    }
    pattern.lastIndex = 0;
    for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
      if (m[0].length === 0) pattern.lastIndex = codePointEnd(text, m.index);
      else out.push([m.index, m.index + m[0].length]);
    }
    return out;
  };
  return (s) => {
    const found = matches(s.text);
    if (found.length === 0) return s;
    const acc: NormalizedText = { text: '', start: [], end: [] };
    let last = 0;
    for (const [a, b] of found) {
      append(acc, slice(s, last, a));
      acc.text += content;
      for (let k = 0; k < content.length; k++) {
        acc.start.push(s.start[b - 1]!);
        acc.end.push(s.end[b - 1]!);
      }
      last = b;
    }
    append(acc, slice(s, last, s.text.length));
    return acc;
  };
}

function compile(config: unknown, field: string): Step[] {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) throw new TokenizerError('InvalidField', 'expected a normalizer object', { field });
  const c = config as Record<string, unknown>;
  switch (c.type) {
    case 'NFC':
    case 'NFD':
    case 'NFKC':
    case 'NFKD':
      return [referenceForm(c.type)];
    case 'Lowercase':
      return [lowercase];
    case 'Strip': {
      const flag = (name: string): boolean => {
        const v = c[name] ?? true;
        if (typeof v !== 'boolean') throw new TokenizerError('InvalidField', 'expected a boolean', { field: `${field}.${name}` });
        return v;
      };
      return [strip(flag('strip_left'), flag('strip_right'))];
    }
    case 'Replace': {
      const p = c.pattern as Record<string, unknown> | null | undefined;
      if (typeof c.content !== 'string') throw new TokenizerError('InvalidField', 'expected a string', { field: `${field}.content` });
      if (p !== null && typeof p === 'object' && typeof p.String === 'string' && p.String.length > 0) return [replace(p.String, c.content)];
      if (p !== null && typeof p === 'object' && typeof p.Regex === 'string') {
        let re: RegExp;
        try {
          re = compileOniguruma(p.Regex);
        } catch (e) {
          throw e instanceof TokenizerError ? new TokenizerError(e.code, e.detail, { field: `${field}.pattern.Regex`, cause: e }) : e;
        }
        return [replace(re, c.content)];
      }
      throw new TokenizerError('InvalidField', 'expected {"String": non-empty string} or {"Regex": string}', { field: `${field}.pattern` });
    }
    case 'Sequence':
      if (!Array.isArray(c.normalizers)) throw new TokenizerError('InvalidField', 'expected an array', { field: `${field}.normalizers` });
      return c.normalizers.flatMap((n: unknown, i) => compile(n, `${field}.normalizers[${i}]`));
    default:
      throw new TokenizerError('UnsupportedComponent', `normalizer type ${JSON.stringify(c.type)} is not supported (NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Sequence)`, {
        field: `${field}.type`,
      });
  }
}

/** A compiled normalizer. */
export class Normalizer {
  private constructor(private readonly steps: readonly Step[]) {}

  /** Validate and compile the `normalizer` field of tokenizer.json; null when there is none. */
  static fromConfig(config: unknown, field = 'normalizer'): Normalizer | null {
    if (config === undefined || config === null) return null;
    return new Normalizer(compile(config, field));
  }

  /** Normalize `text[start, end)`; alignments are offsets into `text`. */
  normalize(text: string, start: number, end: number): NormalizedText {
    const s: NormalizedText = { text: text.slice(start, end), start: [], end: [] };
    for (let i = start; i < end; i++) {
      s.start.push(i);
      s.end.push(i + 1);
    }
    return this.steps.reduce((acc, step) => step(acc), s);
  }
}
