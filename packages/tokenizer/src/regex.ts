// Oniguruma (the regex engine behind Hugging Face `tokenizers`) -> JavaScript `RegExp` (`u` flag).
//
// Pre-tokenizer patterns in tokenizer.json are written for Oniguruma. Most of the syntax carries
// over, but a few semantics differ and are rewritten here:
//   \s, \S   Oniguruma: the Unicode White_Space property (includes U+0085, excludes U+FEFF).
//            JS `\s` is a different set, so use \p{White_Space} / \P{White_Space}.
//   \d, \D   Oniguruma: Unicode decimal digits (\p{Nd}); JS \d is ASCII only.
//   \w, \W   Oniguruma: Alphabetic, marks, decimal digits, connector punctuation, plus the
//            Latin-1 digits ²³¹ and fractions ¼½¾; JS \w is ASCII only.
//   (?i:..)  Case-insensitive group; Node 20 has no inline modifiers, so every ASCII letter inside
//            becomes a two-letter class ('s -> '[sS]). HF `tokenizers` folds ASCII only here
//            (it does not match U+017F 'ſ' for 's'), and so does this translation.
//   .        Oniguruma's '.' excludes only '\n'.
//   ^, $     Line anchors that know only '\n'.
//   \x{HH}   Code point escape -> \u{HH}.
//   {,n}     Oniguruma's "0 to n" -> {0,n}; a '{' that is not a quantifier is a literal.
// Constructs with no faithful JS equivalent (possessive quantifiers, atomic groups, \G, \K, POSIX
// brackets, class intersections, other inline flags, backreferences) raise a TokenizerError naming
// the construct instead of silently matching something else.

import { TokenizerError } from './errors.js';

const WORD_CLASS_BODY = '\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\u00B2\\u00B3\\u00B9\\u00BC-\\u00BE';

/** Escapes whose translation is the same inside and outside a class. */
const SET_ESCAPES: Record<string, string> = {
  s: '\\p{White_Space}',
  S: '\\P{White_Space}',
  d: '\\p{Nd}',
  D: '\\P{Nd}',
  h: '0-9A-Fa-f',
};

const SIMPLE_ESCAPES: Record<string, string> = {
  n: '\\n',
  r: '\\r',
  t: '\\t',
  f: '\\f',
  v: '\\v',
  a: '\\x07',
  e: '\\x1B',
  '0': '\\0',
};

const JS_SYNTAX = '^$\\.*+?()[]{}|/';

const propertyCache = new Map<string, string>();

function translateProperty(name: string, pattern: string): string {
  let cached = propertyCache.get(name);
  if (cached !== undefined) return cached;
  const candidates = [name, `Script=${name}`, `General_Category=${name}`];
  for (const candidate of candidates) {
    try {
      new RegExp(`\\p{${candidate}}`, 'u');
      cached = candidate;
      break;
    } catch {
      // try the next spelling
    }
  }
  if (cached === undefined) {
    throw new TokenizerError('UnsupportedComponent', `regex ${JSON.stringify(pattern)}: unknown Unicode property \\p{${name}}`);
  }
  propertyCache.set(name, cached);
  return cached;
}

function unsupported(pattern: string, what: string): TokenizerError {
  return new TokenizerError(
    'UnsupportedComponent',
    `regex ${JSON.stringify(pattern)}: ${what} is not supported (no exact JavaScript equivalent)`,
  );
}

function isAsciiLetter(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/** One literal character as JS source (escaped when needed), with ASCII case folding when `fold`. */
function literal(c: string, fold: boolean, inClass: boolean): string {
  if (fold && isAsciiLetter(c)) {
    const both = c.toLowerCase() + c.toUpperCase();
    return inClass ? both : `[${both}]`;
  }
  if (JS_SYNTAX.includes(c) || (inClass && c === '-')) return `\\${c}`;
  if (c === '\n') return '\\n';
  if (c === '\r') return '\\r';
  if (c === '\t') return '\\t';
  return c;
}

interface Cursor {
  readonly src: string;
  i: number;
}

/** Parse `\p{...}` / `\P{...}` starting at the backslash; returns the JS escape. */
function readProperty(cur: Cursor): string {
  const { src } = cur;
  const kind = src[cur.i + 1]!;
  if (src[cur.i + 2] !== '{') {
    // One-letter form \pL.
    const name = src[cur.i + 2];
    if (name === undefined) throw unsupported(src, 'a trailing \\p');
    cur.i += 3;
    return `\\${kind}{${translateProperty(name, src)}}`;
  }
  const close = src.indexOf('}', cur.i + 3);
  if (close < 0) throw unsupported(src, 'an unterminated \\p{');
  let name = src.slice(cur.i + 3, close);
  let negate = kind === 'P';
  if (name.startsWith('^')) {
    negate = !negate;
    name = name.slice(1);
  }
  cur.i = close + 1;
  return `\\${negate ? 'P' : 'p'}{${translateProperty(name, src)}}`;
}

/** Parse a hex escape (\xHH, \x{H...}, \uHHHH) starting at the backslash; returns the code point. */
function readHex(cur: Cursor): number {
  const { src } = cur;
  const kind = src[cur.i + 1];
  let hex: string;
  if (kind === 'x' && src[cur.i + 2] === '{') {
    const close = src.indexOf('}', cur.i + 3);
    if (close < 0) throw unsupported(src, 'an unterminated \\x{');
    hex = src.slice(cur.i + 3, close);
    cur.i = close + 1;
  } else {
    const width = kind === 'x' ? 2 : 4;
    hex = src.slice(cur.i + 2, cur.i + 2 + width);
    cur.i += 2 + width;
  }
  if (!/^[0-9A-Fa-f]{1,8}$/.test(hex)) throw unsupported(src, `the hex escape "\\${kind}${hex}"`);
  const cp = Number.parseInt(hex, 16);
  if (cp > 0x10ffff) throw unsupported(src, `the code point escape "\\${kind}${hex}"`);
  return cp;
}

/** One code point as JS regex source: escaped if it is a control or syntax character. */
function codePointSource(cp: number, inClass: boolean): string {
  const c = String.fromCodePoint(cp);
  if (cp < 0x20 || cp === 0x7f || JS_SYNTAX.includes(c) || (inClass && c === '-')) return `\\u{${cp.toString(16)}}`;
  return c;
}

const SIMPLE_ESCAPE_CODES: Record<string, number> = { n: 10, r: 13, t: 9, f: 12, v: 11, a: 7, e: 27, '0': 0 };

/** Read one class character (literal or escaped) at the cursor; returns its code point, or null if it is a set escape. */
function readClassChar(cur: Cursor): number | null {
  const { src } = cur;
  if (src[cur.i] !== '\\') {
    const cp = src.codePointAt(cur.i)!;
    cur.i += cp > 0xffff ? 2 : 1;
    return cp;
  }
  const e = src[cur.i + 1];
  if (e === undefined) throw unsupported(src, 'a trailing backslash');
  if (e === 'x' || e === 'u') return readHex(cur);
  if (e in SIMPLE_ESCAPE_CODES) {
    cur.i += 2;
    return SIMPLE_ESCAPE_CODES[e]!;
  }
  if (/[A-Za-z0-9]/.test(e)) return null;
  const cp = src.codePointAt(cur.i + 1)!;
  cur.i += 1 + (cp > 0xffff ? 2 : 1);
  return cp;
}

/** Translate a character class starting at '['. With `fold`, ASCII letters in it match both cases. */
function readClass(cur: Cursor, fold: boolean): string {
  const { src } = cur;
  cur.i++; // '['
  let out = '[';
  if (src[cur.i] === '^') {
    out += '^';
    cur.i++;
  }
  // Letters whose other case must be added when folding.
  const covered: [number, number][] = [];
  let first = true;
  while (cur.i < src.length) {
    const c = src[cur.i]!;
    if (c === ']' && !first) {
      cur.i++;
      if (fold) {
        let extra = '';
        for (let cp = 0x41; cp <= 0x7a; cp++) {
          const ch = String.fromCharCode(cp);
          if (!isAsciiLetter(ch) || !covered.some(([lo, hi]) => cp >= lo && cp <= hi)) continue;
          const other = ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase();
          const o = other.charCodeAt(0);
          if (!covered.some(([lo, hi]) => o >= lo && o <= hi)) extra += other;
        }
        out += extra;
      }
      return `${out}]`;
    }
    first = false;
    if (c === '[') {
      if (src[cur.i + 1] === ':') throw unsupported(src, 'a POSIX bracket expression');
      throw unsupported(src, 'a nested character class');
    }
    if (c === '&' && src[cur.i + 1] === '&') throw unsupported(src, 'a character-class intersection (&&)');
    if (c === '\\') {
      const e = src[cur.i + 1];
      if (e === 'p' || e === 'P') {
        if (fold) throw unsupported(src, 'a Unicode property inside a case-insensitive group');
        out += readProperty(cur);
        continue;
      }
      if (e !== undefined && e in SET_ESCAPES) {
        if (fold && e === 'h') covered.push([0x41, 0x46], [0x61, 0x66]);
        out += SET_ESCAPES[e]!;
        cur.i += 2;
        continue;
      }
      if (e === 'w') {
        out += WORD_CLASS_BODY;
        cur.i += 2;
        continue;
      }
    }
    const lo = readClassChar(cur);
    if (lo === null) throw unsupported(src, `the escape ${src.slice(cur.i, cur.i + 2)} inside a character class`);
    let hi = lo;
    if (src[cur.i] === '-' && cur.i + 1 < src.length && src[cur.i + 1] !== ']') {
      cur.i++;
      const end = readClassChar(cur);
      if (end === null) throw unsupported(src, 'a range ending in a set escape');
      if (end < lo) throw unsupported(src, 'an out-of-order character range');
      hi = end;
    }
    out += codePointSource(lo, true);
    if (hi !== lo) out += `-${codePointSource(hi, true)}`;
    covered.push([lo, hi]);
  }
  throw unsupported(src, 'an unterminated character class');
}

/**
 * Translate an Oniguruma pattern (as found in `tokenizer.json` `Split.pattern.Regex`) into JS
 * regex source for use with the `u` flag. Throws {@link TokenizerError} (`UnsupportedComponent`)
 * for constructs without an exact JS equivalent.
 */
export function onigurumaToJs(pattern: string): string {
  const cur: Cursor = { src: pattern, i: 0 };
  let out = '';
  // One entry per open group: whether the group switched case folding on.
  const foldStack: boolean[] = [];
  let fold = false;
  while (cur.i < pattern.length) {
    const c = pattern[cur.i]!;
    switch (c) {
      case '\\': {
        const e = pattern[cur.i + 1];
        if (e === undefined) throw unsupported(pattern, 'a trailing backslash');
        if (e === 'p' || e === 'P') {
          if (fold) throw unsupported(pattern, 'a Unicode property inside a case-insensitive group');
          out += readProperty(cur);
        } else if (e in SET_ESCAPES) {
          out += e === 'h' ? '[0-9A-Fa-f]' : SET_ESCAPES[e]!;
          cur.i += 2;
        } else if (e === 'H') {
          out += '[^0-9A-Fa-f]';
          cur.i += 2;
        } else if (e === 'w') {
          out += `[${WORD_CLASS_BODY}]`;
          cur.i += 2;
        } else if (e === 'W') {
          out += `[^${WORD_CLASS_BODY}]`;
          cur.i += 2;
        } else if (e === 'x' || e === 'u') {
          const cp = readHex(cur);
          const ch = String.fromCodePoint(cp);
          out += fold && isAsciiLetter(ch) ? literal(ch, true, false) : codePointSource(cp, false);
        } else if (e in SIMPLE_ESCAPES) {
          out += SIMPLE_ESCAPES[e]!;
          cur.i += 2;
        } else if (/[A-Za-z0-9]/.test(e)) {
          throw unsupported(pattern, `the escape \\${e}`);
        } else {
          const cp = pattern.codePointAt(cur.i + 1)!;
          cur.i += 1 + (cp > 0xffff ? 2 : 1);
          out += literal(String.fromCodePoint(cp), fold, false);
        }
        break;
      }
      case '[':
        out += readClass(cur, fold);
        break;
      case '(': {
        const rest = pattern.slice(cur.i);
        let m: RegExpExecArray | null;
        if (rest.startsWith('(?i:')) {
          foldStack.push(fold);
          fold = true;
          out += '(?:';
          cur.i += 4;
        } else if ((m = /^\(\?(?::|=|!|<=|<!)/.exec(rest)) !== null) {
          foldStack.push(fold);
          out += m[0];
          cur.i += m[0].length;
        } else if ((m = /^\(\?<([A-Za-z_][A-Za-z0-9_]*)>/.exec(rest)) !== null) {
          foldStack.push(fold);
          out += '(';
          cur.i += m[0].length;
        } else if (rest.startsWith('(?>')) {
          throw unsupported(pattern, 'an atomic group (?>...)');
        } else if (rest.startsWith('(?')) {
          throw unsupported(pattern, `the group or inline flag "${rest.slice(0, 4)}..."`);
        } else {
          foldStack.push(fold);
          out += '(';
          cur.i++;
        }
        break;
      }
      case ')':
        if (foldStack.length === 0) throw unsupported(pattern, 'an unbalanced ")"');
        fold = foldStack.pop()!;
        out += ')';
        cur.i++;
        break;
      case '*':
      case '+':
      case '?':
      case '{': {
        let q: string = c;
        if (c === '{') {
          const m = /^\{(\d*)(,?)(\d*)\}/.exec(pattern.slice(cur.i));
          if (m === null || (m[1] === '' && m[3] === '')) {
            // Not a quantifier: Oniguruma reads the brace literally.
            out += '\\{';
            cur.i++;
            break;
          }
          q = m[1] === '' ? `{0,${m[3]}}` : m[0];
          cur.i += m[0].length;
        } else {
          cur.i++;
        }
        out += q;
        if (pattern[cur.i] === '?') {
          out += '?'; // lazy
          cur.i++;
        } else if (pattern[cur.i] === '+') {
          throw unsupported(pattern, 'a possessive quantifier');
        }
        break;
      }
      case '.':
        out += '[^\\n]';
        cur.i++;
        break;
      case '^':
        out += '(?:(?<![\\s\\S])|(?<=\\n))';
        cur.i++;
        break;
      case '$':
        out += '(?=\\n|(?![\\s\\S]))';
        cur.i++;
        break;
      case '|':
        out += '|';
        cur.i++;
        break;
      default: {
        const cp = pattern.codePointAt(cur.i)!;
        cur.i += cp > 0xffff ? 2 : 1;
        out += literal(String.fromCodePoint(cp), fold, false);
      }
    }
  }
  if (foldStack.length !== 0) throw unsupported(pattern, 'an unclosed group');
  return out;
}

/** Compile an Oniguruma pattern to a global, unicode-aware JS `RegExp` (see {@link onigurumaToJs}). */
export function compileOniguruma(pattern: string): RegExp {
  const source = onigurumaToJs(pattern);
  try {
    return new RegExp(source, 'gu');
  } catch (cause) {
    throw new TokenizerError('UnsupportedComponent', `regex ${JSON.stringify(pattern)}: cannot be compiled as JavaScript (${String(cause)})`, {
      cause,
    });
  }
}
