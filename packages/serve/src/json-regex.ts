// JSON Schema `pattern` for constrained decoding: an ECMAScript regular expression compiled to a
// Thompson NFA over code points, run as a set of states while a string is written. A pattern
// matches anywhere in the string (JSON Schema semantics), so the NFA starts and ends in a loop over
// any character unless `^` / `$` pin it. The decoder also needs the fewest bytes that complete a
// string from a state set, within the string's minLength/maxLength: a table over (state, length)
// filled backwards (see `Pattern.cost`).
//
// Supported: literals and escapes (`\d \D \w \W \s \S \n \r \t \f \v \0 \xHH \uHHHH \u{…}` and
// escaped punctuation), `.`, classes `[a-z\d_]` and `[^…]`, groups `(…)` `(?:…)` `(?<name>…)`,
// `|`, `* + ? {n} {n,} {n,m}` (lazy forms match the same strings), `^` and `$`. Look-arounds,
// back-references and `\b` are a SchemaError.

/** A set of code points as sorted, disjoint, inclusive ranges [lo0, hi0, lo1, hi1, …]. */
export type CharSet = readonly number[];

const MAX_CP = 0x10ffff;
/** Most NFA states a pattern may compile to (bounded repetition copies its operand). */
export const MAX_PATTERN_STATES = 4096;
/** Largest (states × lengths) table a pattern with length bounds may need. */
export const MAX_PATTERN_TABLE = 200_000;

/** A pattern that cannot be used for constrained decoding. */
export class PatternError extends Error {}

function normalize(ranges: [number, number][]): CharSet {
  ranges.sort((a, b) => a[0] - b[0]);
  const out: number[] = [];
  for (const [lo, hi] of ranges) {
    if (lo > hi) continue;
    if (out.length > 0 && lo <= out[out.length - 1]! + 1) out[out.length - 1] = Math.max(out[out.length - 1]!, hi);
    else out.push(lo, hi);
  }
  return out;
}

function negate(set: CharSet): CharSet {
  const out: [number, number][] = [];
  let next = 0;
  for (let i = 0; i < set.length; i += 2) {
    if (set[i]! > next) out.push([next, set[i]! - 1]);
    next = set[i + 1]! + 1;
  }
  if (next <= MAX_CP) out.push([next, MAX_CP]);
  return normalize(out);
}

function intersects(a: CharSet, b: CharSet): boolean {
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i + 1]! < b[j]!) i += 2;
    else if (b[j + 1]! < a[i]!) j += 2;
    else return true;
  }
  return false;
}

function contains(set: CharSet, cp: number): boolean {
  for (let i = 0; i < set.length; i += 2) {
    if (cp < set[i]!) return false;
    if (cp <= set[i + 1]!) return true;
  }
  return false;
}

const DIGIT: CharSet = [0x30, 0x39];
const WORD: CharSet = normalize([[0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]]);
const SPACE: CharSet = normalize([[0x09, 0x0d], [0x20, 0x20], [0xa0, 0xa0], [0x1680, 0x1680], [0x2000, 0x200a], [0x2028, 0x2029], [0x202f, 0x202f], [0x205f, 0x205f], [0x3000, 0x3000], [0xfeff, 0xfeff]]);
const DOT: CharSet = negate(normalize([[0x0a, 0x0a], [0x0d, 0x0d], [0x2028, 0x2029]]));
const ANY: CharSet = [0, MAX_CP];

/**
 * Fewest bytes a character of `set` takes inside a JSON string as the decoder writes it: printable
 * ASCII 1 (`"` and `\` 2, escaped), `\b \f \n \r \t` 2, other control characters and lone
 * surrogates never (no `\u` escapes in constrained strings), else its UTF-8 length.
 */
export function charBytes(set: CharSet): number {
  let best = Infinity;
  for (let i = 0; i < set.length && best > 1; i += 2) {
    const lo = set[i]!, hi = set[i + 1]!;
    const has = (a: number, b: number) => lo <= b && hi >= a;
    if (has(0x20, 0x21) || has(0x23, 0x5b) || has(0x5d, 0x7f)) best = Math.min(best, 1);
    else if (has(0x22, 0x22) || has(0x5c, 0x5c) || has(0x08, 0x0a) || has(0x0c, 0x0d)) best = Math.min(best, 2);
    else if (has(0x80, 0x7ff)) best = Math.min(best, 2);
    else if (has(0x800, 0xd7ff) || has(0xe000, 0xffff)) best = Math.min(best, 3);
    else if (has(0x10000, MAX_CP)) best = Math.min(best, 4);
  }
  return best;
}

// ---- parsing ---------------------------------------------------------------------------------

type Ast =
  | { t: 'set'; set: CharSet }
  | { t: 'seq'; items: Ast[] }
  | { t: 'alt'; options: Ast[] }
  | { t: 'rep'; item: Ast; min: number; max: number }
  | { t: 'bol' }
  | { t: 'eol' };

class Parser {
  private i = 0;
  constructor(private readonly src: string) {}

  parse(): Ast {
    const ast = this.alt();
    if (this.i < this.src.length) throw new PatternError(`unexpected '${this.src[this.i]}' at ${this.i}`);
    return ast;
  }

  private peek(): string | undefined {
    return this.src[this.i];
  }

  private alt(): Ast {
    const options = [this.seq()];
    while (this.peek() === '|') {
      this.i++;
      options.push(this.seq());
    }
    return options.length === 1 ? options[0]! : { t: 'alt', options };
  }

  private seq(): Ast {
    const items: Ast[] = [];
    while (this.i < this.src.length && this.peek() !== '|' && this.peek() !== ')') {
      let atom = this.atom();
      for (;;) {
        const q = this.quantifier();
        if (!q) break;
        if (atom.t === 'bol' || atom.t === 'eol') throw new PatternError('a quantifier after an anchor');
        atom = { t: 'rep', item: atom, ...q };
      }
      items.push(atom);
    }
    return items.length === 1 ? items[0]! : { t: 'seq', items };
  }

  private quantifier(): { min: number; max: number } | null {
    const c = this.peek();
    let q: { min: number; max: number } | null = null;
    if (c === '*') q = { min: 0, max: Infinity };
    else if (c === '+') q = { min: 1, max: Infinity };
    else if (c === '?') q = { min: 0, max: 1 };
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
      if (!m) return null; // a literal '{', as JavaScript reads it outside unicode mode
      const min = Number(m[1]), max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      if (max < min) throw new PatternError(`{${min},${max}}: the maximum is below the minimum`);
      if (min > 1000 || (max !== Infinity && max > 1000)) throw new PatternError(`{${m[1]}${m[2] ?? ''}}: repetition counts above 1000 are not supported`);
      this.i += m[0].length - 1;
      q = { min, max };
    }
    if (!q) return null;
    this.i++;
    if (this.peek() === '?') this.i++;
    return q;
  }

  private atom(): Ast {
    const c = this.src[this.i++]!;
    switch (c) {
      case '(': {
        if (this.src.startsWith('?:', this.i)) this.i += 2;
        else if (this.src.startsWith('?<', this.i) && !/^\?<[=!]/.test(this.src.slice(this.i))) {
          const end = this.src.indexOf('>', this.i);
          if (end < 0) throw new PatternError('unterminated group name');
          this.i = end + 1;
        } else if (this.peek() === '?') throw new PatternError('look-around groups are not supported');
        const inner = this.alt();
        if (this.src[this.i++] !== ')') throw new PatternError('unbalanced parenthesis');
        return inner;
      }
      case ')': throw new PatternError('unbalanced parenthesis');
      case '[': return { t: 'set', set: this.cls() };
      case '.': return { t: 'set', set: DOT };
      case '^': return { t: 'bol' };
      case '$': return { t: 'eol' };
      case '\\': return { t: 'set', set: this.escape(false) };
      case '*': case '+': case '?': throw new PatternError(`nothing to repeat before '${c}'`);
      default: {
        const cp = this.src.codePointAt(this.i - 1)!;
        if (cp > 0xffff) this.i++;
        return { t: 'set', set: [cp, cp] };
      }
    }
  }

  private cls(): CharSet {
    let neg = false;
    if (this.peek() === '^') {
      neg = true;
      this.i++;
    }
    const ranges: [number, number][] = [];
    while (this.i < this.src.length && this.peek() !== ']') {
      const lo = this.classAtom();
      if (this.peek() === '-' && this.src[this.i + 1] !== ']' && this.i + 1 < this.src.length && lo.length === 2 && lo[0] === lo[1]) {
        this.i++;
        const hi = this.classAtom();
        if (hi.length !== 2 || hi[0] !== hi[1]) throw new PatternError('a class range must end in a character');
        if (hi[0]! < lo[0]!) throw new PatternError('a class range out of order');
        ranges.push([lo[0]!, hi[0]!]);
      } else for (let k = 0; k < lo.length; k += 2) ranges.push([lo[k]!, lo[k + 1]!]);
    }
    if (this.src[this.i++] !== ']') throw new PatternError('unterminated character class');
    const set = normalize(ranges);
    return neg ? negate(set) : set;
  }

  private classAtom(): CharSet {
    const c = this.src[this.i++]!;
    if (c === '\\') return this.escape(true);
    const cp = this.src.codePointAt(this.i - 1)!;
    if (cp > 0xffff) this.i++;
    return [cp, cp];
  }

  private escape(inClass: boolean): CharSet {
    const c = this.src[this.i++];
    if (c === undefined) throw new PatternError('a pattern may not end in \\');
    const one = (cp: number): CharSet => [cp, cp];
    switch (c) {
      case 'd': return DIGIT;
      case 'D': return negate(DIGIT);
      case 'w': return WORD;
      case 'W': return negate(WORD);
      case 's': return SPACE;
      case 'S': return negate(SPACE);
      case 'n': return one(0x0a);
      case 'r': return one(0x0d);
      case 't': return one(0x09);
      case 'f': return one(0x0c);
      case 'v': return one(0x0b);
      case '0': return one(0);
      case 'b':
        if (inClass) return one(0x08);
        throw new PatternError('word boundaries (\\b) are not supported');
      case 'B': throw new PatternError('\\B is not supported');
      case 'x': {
        const m = /^[0-9a-fA-F]{2}/.exec(this.src.slice(this.i));
        if (!m) throw new PatternError('\\x needs two hex digits');
        this.i += 2;
        return one(parseInt(m[0], 16));
      }
      case 'u': {
        const braced = /^\{([0-9a-fA-F]{1,6})\}/.exec(this.src.slice(this.i));
        if (braced) {
          this.i += braced[0].length;
          return one(parseInt(braced[1]!, 16));
        }
        const m = /^[0-9a-fA-F]{4}/.exec(this.src.slice(this.i));
        if (!m) throw new PatternError('\\u needs four hex digits');
        this.i += 4;
        return one(parseInt(m[0], 16));
      }
      default:
        if (/[1-9]/.test(c)) throw new PatternError('back-references are not supported');
        if (/[a-zA-Z]/.test(c)) throw new PatternError(`unknown escape \\${c}`);
        return one(c.codePointAt(0)!);
    }
  }
}

// ---- the automaton ---------------------------------------------------------------------------

interface Edge {
  to: number;
  /** Characters that take it; null: an ε-edge (always), 'bol' / 'eol': only at the start / end of the string. */
  on: CharSet | null | 'bol' | 'eol';
}

/** A compiled pattern (see the file header). A state set is a sorted array of state ids. */
export class Pattern {
  private readonly edges: Edge[][] = [];
  private readonly accept: number;
  private readonly matched: number;
  /** The states before the first character (closed, at the start of the string). */
  readonly start: readonly number[];
  private readonly tables = new Map<string, Float64Array>();

  /** Compile `source`; throws PatternError. */
  constructor(readonly source: string) {
    const ast = new Parser(source).parse();
    const s0 = this.state();
    this.edge(s0, s0, ANY);
    const [a, b] = this.build(ast);
    this.edge(s0, a, null);
    this.accept = this.state();
    this.matched = this.state();
    this.edge(b, this.accept, null);
    this.edge(this.accept, this.matched, null);
    this.edge(this.matched, this.matched, ANY);
    this.start = this.close([s0], true, false);
  }

  private state(): number {
    if (this.edges.length >= MAX_PATTERN_STATES) throw new PatternError(`the pattern needs more than ${MAX_PATTERN_STATES} automaton states`);
    this.edges.push([]);
    return this.edges.length - 1;
  }

  private edge(from: number, to: number, on: Edge['on']): void {
    this.edges[from]!.push({ to, on });
  }

  /** A fragment for `ast`: [entry, exit]. */
  private build(ast: Ast): [number, number] {
    switch (ast.t) {
      case 'set': case 'bol': case 'eol': {
        const a = this.state(), b = this.state();
        this.edge(a, b, ast.t === 'set' ? ast.set : ast.t);
        return [a, b];
      }
      case 'seq': {
        const a = this.state();
        let end = a;
        for (const item of ast.items) {
          const [x, y] = this.build(item);
          this.edge(end, x, null);
          end = y;
        }
        return [a, end];
      }
      case 'alt': {
        const a = this.state(), b = this.state();
        for (const o of ast.options) {
          const [x, y] = this.build(o);
          this.edge(a, x, null);
          this.edge(y, b, null);
        }
        return [a, b];
      }
      case 'rep': {
        const a = this.state();
        let end = a;
        for (let k = 0; k < ast.min; k++) {
          const [x, y] = this.build(ast.item);
          this.edge(end, x, null);
          end = y;
        }
        const b = this.state();
        this.edge(end, b, null);
        if (ast.max === Infinity) {
          const [x, y] = this.build(ast.item);
          this.edge(end, x, null);
          this.edge(y, end, null);
        } else {
          for (let k = ast.min; k < ast.max; k++) {
            const [x, y] = this.build(ast.item);
            this.edge(end, x, null);
            this.edge(y, b, null);
            end = y;
          }
        }
        return [a, b];
      }
    }
  }

  /** ε-closure of `states` (`bol` edges at the start of the string, `eol` edges at its end). */
  private close(states: readonly number[], atStart: boolean, atEnd: boolean): number[] {
    const seen = new Set(states);
    const stack = [...states];
    while (stack.length > 0) {
      const s = stack.pop()!;
      for (const e of this.edges[s]!) {
        const pass = e.on === null || (e.on === 'bol' && atStart) || (e.on === 'eol' && atEnd);
        if (pass && !seen.has(e.to)) {
          seen.add(e.to);
          stack.push(e.to);
        }
      }
    }
    return [...seen].sort((x, y) => x - y);
  }

  /** The states after character `cp` (closed, past the start), empty when no state takes it. */
  step(states: readonly number[], cp: number): number[] {
    const next = new Set<number>();
    for (const s of states) for (const e of this.edges[s]!) if (Array.isArray(e.on) && contains(e.on, cp)) next.add(e.to);
    return next.size === 0 ? [] : this.close([...next], false, false);
  }

  /** True when the string may end in `states` (after `len` characters). */
  accepts(states: readonly number[], len: number): boolean {
    const closed = this.close(states, len === 0, true);
    return closed.includes(this.accept) || closed.includes(this.matched);
  }

  /**
   * Fewest bytes that finish the string's characters from `states` after `len` of them, with the
   * total length in [minLen, maxLen] (Infinity: impossible). The closing quote is not counted.
   */
  cost(states: readonly number[], len: number, minLen: number, maxLen: number): number {
    const cap = maxLen === Infinity ? minLen : maxLen;
    const table = this.table(minLen, maxLen);
    const l = Math.min(len, cap), n = this.edges.length;
    let best = Infinity;
    for (const s of states) best = Math.min(best, table[l * n + s]!);
    return best;
  }

  /**
   * Fewest bytes after a character of `set` is written from `states` after `len` characters (the
   * character's own bytes not counted), within [minLen, maxLen]: for a character still being written.
   */
  costThrough(states: readonly number[], len: number, set: CharSet, minLen: number, maxLen: number): number {
    const cap = maxLen === Infinity ? minLen : maxLen;
    if (len + 1 > maxLen) return Infinity;
    const table = this.table(minLen, maxLen);
    const l = Math.min(len + 1, cap), n = this.edges.length;
    let best = Infinity;
    for (const x of states) for (const e of this.edges[x]!) if (Array.isArray(e.on) && intersects(e.on, set)) best = Math.min(best, table[l * n + e.to]!);
    return best;
  }

  /**
   * cost[l][s]: fewest bytes from state s after l characters (l capped at maxLen, or at minLen when
   * there is no maximum: past it every length is as good). The last layer is a shortest-path
   * problem within itself when lengths are unbounded (Bellman-Ford over its edges); the others
   * follow from the layer above.
   */
  private table(minLen: number, maxLen: number): Float64Array {
    const key = `${minLen}:${maxLen}`;
    const cached = this.tables.get(key);
    if (cached) return cached;
    const n = this.edges.length;
    const cap = maxLen === Infinity ? minLen : maxLen;
    if ((cap + 1) * n > MAX_PATTERN_TABLE) throw new PatternError(`the pattern with lengths up to ${cap} is too large for constrained decoding`);
    const t = new Float64Array((cap + 1) * n).fill(Infinity);
    const closures = this.edges.map((_, s) => this.close([s], false, true));
    const endOk = closures.map((c) => c.includes(this.accept) || c.includes(this.matched));
    const charEdges = this.edges.map((_, s) => {
      const out: { to: number; bytes: number }[] = [];
      for (const x of this.close([s], false, false)) for (const e of this.edges[x]!) if (Array.isArray(e.on)) out.push({ to: e.to, bytes: charBytes(e.on) });
      return out;
    });
    // Last layer.
    const last = cap * n;
    for (let s = 0; s < n; s++) if (endOk[s] && cap >= minLen) t[last + s] = 0;
    if (maxLen === Infinity) {
      for (let changed = true, round = 0; changed && round <= n; round++) {
        changed = false;
        for (let s = 0; s < n; s++) {
          for (const e of charEdges[s]!) {
            const v = e.bytes + t[last + e.to]!;
            if (v < t[last + s]!) {
              t[last + s] = v;
              changed = true;
            }
          }
        }
      }
    }
    for (let l = cap - 1; l >= 0; l--) {
      for (let s = 0; s < n; s++) {
        let v = endOk[s] && l >= minLen ? 0 : Infinity;
        for (const e of charEdges[s]!) v = Math.min(v, e.bytes + t[(l + 1) * n + e.to]!);
        t[l * n + s] = v;
      }
    }
    this.tables.set(key, t);
    return t;
  }
}
