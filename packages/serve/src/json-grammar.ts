// A byte-level JSON automaton for the schema nodes of json-schema.ts, with the exact number of
// bytes still needed to finish. Constrained decoding (token-constraint.ts) runs every vocabulary
// token through it, so the output of any model always parses as JSON and validates against the
// schema. Output is compact: no whitespace between tokens of the JSON text.
//
// A state is a set of stacks of frames (a value to start, a string, a number, literals such as
// `true` or enum values, an object, an array): one stack per alternative of an `anyOf` still
// alive. `step(state, byte)` returns the next state or null; numbers and literal sets end lazily
// (a byte they cannot take is handed to the parent). `cost(state)` is the fewest bytes that
// complete the value, exact, so a decoder that keeps `cost ≤ tokens left` never runs out of room
// (every byte is a token of a byte-level vocabulary), and every state with a finite cost has a
// byte that continues it.
//
// Strings with a length or a pattern track their characters (code points: UTF-8 sequences and the
// escapes \" \\ \/ \b \f \n \r \t; no \u escapes, so each character is known when written);
// other strings only their syntax. Bounded numbers keep their text (json-number.ts).

import { numberComplete, numberCost } from './json-number';
import { closeArray, closeObject, membersNeeded, minLength, unseen, type ArrayNode, type ObjectNode, type SchemaNode, type StringNode } from './json-schema';

export { ANY, ANY_OBJECT, arrayOf, compileSchema, minLength, oneKeyObject, SchemaError, type SchemaNode } from './json-schema';

const Q = 0x22; // "
/** Most alternatives a state keeps (further ones of a very ambiguous `anyOf` are dropped: the output stays valid). */
const MAX_STACKS = 64;

type Frame =
  | { t: 'value'; n: SchemaNode }
  /**
   * A string. esc: 0 none, 1 after `\`, 2–5 inside `\uXXXX` with esc − 2 hex digits read (free
   * strings only); cont: UTF-8 continuation bytes due, the next one in [lo, hi] (strict UTF-8: no
   * overlongs, no surrogates). Constrained strings (`n` set) also hold the code point so far `cp`
   * with its possible range [cmin, cmax], the characters written `len`, and the pattern's states `re`.
   */
  | { t: 'string'; n: StringNode | null; esc: number; cont: number; lo: number; hi: number; cp: number; cmin: number; cmax: number; len: number; re: readonly number[] | null }
  /** ph: 0 after '-', 1 '0', 2 integer digits, 3 after '.', 4 fraction digits, 5 after 'e', 6 after exponent sign, 7 exponent digits. */
  | { t: 'number'; ph: number }
  | { t: 'bounded'; n: Extract<SchemaNode, { kind: 'bounded' }>; text: string }
  | { t: 'literal'; values: Uint8Array[]; pos: number }
  /** Objects: ph 'first' after `{`, 'comma' after `,`, 'key' inside a known key (cands alive, kpos bytes read), 'colon' after the key, 'after' after a value. */
  | { t: 'object'; n: ObjectNode; ph: 'first' | 'comma' | 'key' | 'colon' | 'after'; seen: readonly string[]; key: string | null; cands: readonly string[]; kpos: number }
  | { t: 'array'; n: ArrayNode; ph: 'first' | 'comma' | 'after'; count: number };

/** The stack after a complete value. */
const END = Object.freeze({ end: true as const });

type Stack = { f: Frame; up: Stack; end?: undefined } | typeof END;

/** An automaton state: the stacks of the alternatives still alive (never empty). */
export interface JsonState {
  readonly stacks: readonly Stack[];
}

/** The state before the first byte of a value of `node`. */
export function startState(node: SchemaNode): JsonState {
  return { stacks: [{ f: { t: 'value', n: node }, up: END }] };
}

const push = (f: Frame, up: Stack): Stack => ({ f, up });
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
const isHex = (b: number) => isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);
const SHORT_ESCAPES: Record<number, number> = { 0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 0x08, 0x66: 0x0c, 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09 };

function freshString(n: StringNode | null): Frame {
  const c = n && (n.minLength > 0 || n.maxLength < Infinity || n.pattern) ? n : null;
  return { t: 'string', n: c, esc: 0, cont: 0, lo: 0x80, hi: 0xbf, cp: 0, cmin: 0, cmax: 0, len: 0, re: c?.pattern ? c.pattern.start : null };
}

/** Whether a frame may end here (numbers and literal sets end when the next byte is not theirs). */
function complete(f: Frame): boolean {
  if (f.t === 'number') return f.ph === 1 || f.ph === 2 || f.ph === 4 || f.ph === 7;
  if (f.t === 'bounded') return numberComplete(f.text, f.n.bounds);
  if (f.t === 'literal') return f.values.some((v) => v.length === f.pos);
  return false;
}

/** True for bytes that leave a free string state unchanged (printable ASCII other than `"` and `\`). */
export function isPlainStringByte(b: number): boolean {
  return b >= 0x20 && b < 0x80 && b !== Q && b !== 0x5c;
}

/** True when every alternative is inside a free string with no escape or multi-byte character open: plain bytes keep it as it is. */
export function inPlainString(s: JsonState): boolean {
  return s.stacks.every((x) => x.end !== true && x.f.t === 'string' && x.f.n === null && x.f.esc === 0 && x.f.cont === 0);
}

/** True when the value may end now (complete, or a complete number/literal at the top level). */
export function canEnd(s: JsonState): boolean {
  return s.stacks.some((x) => x.end === true || (x.up === END && complete(x.f)));
}

/** The state after byte `b`, or null when `b` cannot come next. */
export function step(s: JsonState, b: number): JsonState | null {
  const out: Stack[] = [];
  for (const x of s.stacks) {
    for (const y of stepStack(x, b)) {
      if (out.length < MAX_STACKS && !out.includes(y)) out.push(y);
    }
  }
  return out.length > 0 ? { stacks: out } : null;
}

const NONE: Stack[] = [];
const one = (x: Stack | null): Stack[] => (x === null ? NONE : [x]);

function stepStack(s: Stack, b: number): Stack[] {
  if (s.end === true) return NONE;
  const f = s.f;
  const up = s.up;
  switch (f.t) {
    case 'value':
      return startValue(f.n, up, b);
    case 'string':
      return one(f.n ? constrainedStep(f, up, b) : freeStep(f, up, b));
    case 'number': {
      const ph = numberStep(f.ph, b);
      if (ph >= 0) return [push({ t: 'number', ph }, up)];
      return complete(f) ? stepStack(up, b) : NONE;
    }
    case 'bounded': {
      const text = f.text + String.fromCharCode(b);
      if ((isDigit(b) || b === 0x2d || b === 0x2e) && numberCost(text, f.n.bounds) < Infinity) return [push({ t: 'bounded', n: f.n, text }, up)];
      return complete(f) ? stepStack(up, b) : NONE;
    }
    case 'literal': {
      const alive = f.values.filter((v) => v.length > f.pos && v[f.pos] === b);
      if (alive.length > 0) {
        // A JSON string literal is never a prefix of another: done as soon as one is matched.
        return [alive.length === 1 && alive[0]!.length === f.pos + 1 && alive[0]![f.pos] === Q ? up : push({ t: 'literal', values: alive, pos: f.pos + 1 }, up)];
      }
      return complete(f) ? stepStack(up, b) : NONE;
    }
    case 'object':
      return one(objectStep(f, up, b));
    case 'array':
      return arrayStep(f, up, b);
  }
}

type StringFrame = Extract<Frame, { t: 'string' }>;

function freeStep(f: StringFrame, up: Stack, b: number): Stack | null {
  const at = (patch: Partial<StringFrame>): Stack => push({ ...f, ...patch }, up);
  if (f.esc === 1) {
    if (b === 0x75) return at({ esc: 2 });
    return SHORT_ESCAPES[b] !== undefined ? at({ esc: 0 }) : null;
  }
  if (f.esc >= 2) return isHex(b) ? at({ esc: f.esc === 5 ? 0 : f.esc + 1 }) : null;
  if (f.cont > 0) return b >= f.lo && b <= f.hi ? at({ cont: f.cont - 1, lo: 0x80, hi: 0xbf }) : null;
  if (b === Q) return up;
  if (b === 0x5c) return at({ esc: 1 });
  if (b < 0x20) return null;
  if (b < 0x80) return { f, up };
  const lead = utf8Lead(b);
  return lead ? at({ cont: lead.cont, lo: lead.lo, hi: lead.hi }) : null;
}

/** A UTF-8 lead byte: continuation bytes due, the range of the next one, and the code points it can start. */
function utf8Lead(b: number): { cont: number; lo: number; hi: number; cp: number; cmin: number; cmax: number } | null {
  if (b >= 0xc2 && b <= 0xdf) return { cont: 1, lo: 0x80, hi: 0xbf, cp: b & 0x1f, cmin: (b & 0x1f) << 6, cmax: ((b & 0x1f) << 6) | 0x3f };
  if (b >= 0xe0 && b <= 0xef) {
    const base = (b & 0x0f) << 12;
    return { cont: 2, lo: b === 0xe0 ? 0xa0 : 0x80, hi: b === 0xed ? 0x9f : 0xbf, cp: b & 0x0f, cmin: b === 0xe0 ? 0x800 : base, cmax: b === 0xed ? 0xd7ff : base | 0xfff };
  }
  if (b >= 0xf0 && b <= 0xf4) {
    const base = (b & 0x07) << 18;
    return { cont: 3, lo: b === 0xf0 ? 0x90 : 0x80, hi: b === 0xf4 ? 0x8f : 0xbf, cp: b & 0x07, cmin: b === 0xf0 ? 0x10000 : base, cmax: b === 0xf4 ? 0x10ffff : base | 0x3ffff };
  }
  return null;
}

/** Bytes that finish a constrained string's characters after `len` of them in pattern states `re` (the closing quote not counted). */
function charsCost(n: StringNode, re: readonly number[] | null, len: number): number {
  if (len > n.maxLength) return Infinity;
  return n.pattern ? n.pattern.cost(re!, len, n.minLength, n.maxLength) : Math.max(0, n.minLength - len);
}

/** The frame after character `cp` was written, or null when the string cannot go on from it. */
function afterChar(f: StringFrame, cp: number): StringFrame | null {
  const n = f.n!;
  if (f.len + 1 > n.maxLength) return null;
  const re = n.pattern ? n.pattern.step(f.re!, cp) : null;
  if (re !== null && re.length === 0) return null;
  const next: StringFrame = { ...f, esc: 0, cont: 0, lo: 0x80, hi: 0xbf, cp: 0, cmin: 0, cmax: 0, len: f.len + 1, re };
  return charsCost(n, re, next.len) < Infinity ? next : null;
}

/** Fewest bytes after the current (unfinished) character of `f` whose code point lies in [cmin, cmax]. */
function openCharCost(f: StringFrame, cmin: number, cmax: number): number {
  const n = f.n!;
  if (f.len + 1 > n.maxLength) return Infinity;
  if (!n.pattern) return Math.max(0, n.minLength - f.len - 1);
  return n.pattern.costThrough(f.re!, f.len, [cmin, cmax], n.minLength, n.maxLength);
}

function constrainedStep(f: StringFrame, up: Stack, b: number): Stack | null {
  const n = f.n!;
  if (f.esc === 1) {
    const cp = SHORT_ESCAPES[b];
    if (cp === undefined) return null;
    const next = afterChar(f, cp);
    return next ? push(next, up) : null;
  }
  if (f.cont > 0) {
    if (b < f.lo || b > f.hi) return null;
    const cp = (f.cp << 6) | (b & 0x3f), cont = f.cont - 1;
    if (cont === 0) {
      const next = afterChar(f, cp);
      return next ? push(next, up) : null;
    }
    const cmin = Math.max(f.cmin, cp << (6 * cont)), cmax = Math.min(f.cmax, (cp << (6 * cont)) | ((1 << (6 * cont)) - 1));
    if (openCharCost(f, cmin, cmax) === Infinity) return null;
    return push({ ...f, cont, lo: 0x80, hi: 0xbf, cp, cmin, cmax }, up);
  }
  if (b === Q) return f.len >= n.minLength && (!n.pattern || n.pattern.accepts(f.re!, f.len)) ? up : null;
  if (b === 0x5c) {
    const ok = Object.values(SHORT_ESCAPES).some((cp) => afterChar(f, cp) !== null);
    return ok ? push({ ...f, esc: 1 }, up) : null;
  }
  if (b < 0x20) return null;
  if (b < 0x80) {
    const next = afterChar(f, b);
    return next ? push(next, up) : null;
  }
  const lead = utf8Lead(b);
  if (!lead || openCharCost(f, lead.cmin, lead.cmax) === Infinity) return null;
  return push({ ...f, ...lead }, up);
}

function startValue(n: SchemaNode, up: Stack, b: number): Stack[] {
  switch (n.kind) {
    case 'union': {
      const out: Stack[] = [];
      for (const o of n.options) for (const x of startValue(o, up, b)) out.push(x);
      return out;
    }
    case 'object':
      return b === 0x7b ? [push({ t: 'object', n, ph: 'first', seen: [], key: null, cands: [], kpos: 0 }, up)] : NONE;
    case 'array':
      return b === 0x5b ? [push({ t: 'array', n, ph: 'first', count: 0 }, up)] : NONE;
    case 'string':
      return b === Q ? [push(freshString(n), up)] : NONE;
    case 'number':
      if (b === 0x2d) return [push({ t: 'number', ph: 0 }, up)];
      if (b === 0x30) return [push({ t: 'number', ph: 1 }, up)];
      return b > 0x30 && b <= 0x39 ? [push({ t: 'number', ph: 2 }, up)] : NONE;
    case 'bounded': {
      const text = String.fromCharCode(b);
      return (isDigit(b) || b === 0x2d) && numberCost(text, n.bounds) < Infinity ? [push({ t: 'bounded', n, text }, up)] : NONE;
    }
    case 'literals':
      return stepStack(push({ t: 'literal', values: n.values, pos: 0 }, up), b);
  }
}

function numberStep(ph: number, b: number): number {
  const digit = isDigit(b);
  const dot = b === 0x2e;
  const exp = b === 0x65 || b === 0x45;
  switch (ph) {
    case 0: return b === 0x30 ? 1 : digit ? 2 : -1;
    case 1: return dot ? 3 : exp ? 5 : -1;
    case 2: return digit ? 2 : dot ? 3 : exp ? 5 : -1;
    case 3: return digit ? 4 : -1;
    case 4: return digit ? 4 : exp ? 5 : -1;
    case 5: return b === 0x2b || b === 0x2d ? 6 : digit ? 7 : -1;
    case 6: return digit ? 7 : -1;
    case 7: return digit ? 7 : -1;
    default: return -1;
  }
}

function objectStep(f: Extract<Frame, { t: 'object' }>, up: Stack, b: number): Stack | null {
  const n = f.n;
  const with_ = (patch: Partial<Extract<Frame, { t: 'object' }>>): Stack => push({ ...f, ...patch }, up);
  switch (f.ph) {
    case 'first':
    case 'comma':
      if (b === 0x7d && f.ph === 'first') return membersNeeded(n, f.seen) === 0 ? up : null;
      if (b !== Q) return null;
      if (f.seen.length >= n.maxProps) return null;
      if (!n.props) return push(freshString(null), with_({ ph: 'colon', key: null }));
      {
        const cands = unseen(n, f.seen);
        return cands.length > 0 ? with_({ ph: 'key', cands, kpos: 1 }) : null;
      }
    case 'key': {
      const cands = f.cands.filter((k) => n.keys.get(k)![f.kpos] === b);
      if (cands.length === 0) return null;
      const done = cands.find((k) => n.keys.get(k)!.length === f.kpos + 1);
      return done !== undefined ? with_({ ph: 'colon', key: done, cands: [], kpos: 0 }) : with_({ cands, kpos: f.kpos + 1 });
    }
    case 'colon': {
      if (b !== 0x3a) return null;
      const value = f.key !== null && n.props ? n.props.get(f.key)! : n.values;
      const seen = f.key !== null ? [...f.seen, f.key] : [...f.seen, ''];
      return push({ t: 'value', n: value }, with_({ ph: 'after', seen, key: null }));
    }
    case 'after':
      if (b === 0x2c) return f.seen.length < n.maxProps && (!n.props || unseen(n, f.seen).length > 0) && closeObject(n, f.seen, 'comma') < Infinity ? with_({ ph: 'comma' }) : null;
      if (b === 0x7d) return membersNeeded(n, f.seen) === 0 ? up : null;
      return null;
  }
}

function arrayStep(f: Extract<Frame, { t: 'array' }>, up: Stack, b: number): Stack[] {
  const n = f.n;
  switch (f.ph) {
    case 'first':
      if (b === 0x5d) return n.minItems === 0 ? [up] : NONE;
      if (n.maxItems < 1) return NONE;
      return startValue(n.items, push({ t: 'array', n, ph: 'after', count: 1 }, up), b);
    case 'comma':
      return startValue(n.items, push({ t: 'array', n, ph: 'after', count: f.count + 1 }, up), b);
    case 'after':
      if (b === 0x2c) return f.count < n.maxItems ? [push({ t: 'array', n, ph: 'comma', count: f.count }, up)] : NONE;
      if (b === 0x5d) return f.count >= n.minItems ? [up] : NONE;
      return NONE;
  }
}

// ---- exact completion cost ------------------------------------------------------------------

function stringCost(f: StringFrame): number {
  if (!f.n) return 1 + f.cont + (f.esc === 1 ? 1 : f.esc >= 2 ? 6 - f.esc : 0);
  if (f.esc === 1) {
    let best = Infinity;
    for (const cp of Object.values(SHORT_ESCAPES)) {
      const next = afterChar(f, cp);
      if (next) best = Math.min(best, 1 + charsCost(f.n, next.re, next.len));
    }
    return best + 1;
  }
  if (f.cont > 0) return f.cont + openCharCost(f, f.cmin, f.cmax) + 1;
  return charsCost(f.n, f.re, f.len) + 1;
}

function frameCost(f: Frame): number {
  switch (f.t) {
    case 'value': return minLength(f.n);
    case 'string': return stringCost(f);
    case 'number': return complete(f) ? 0 : 1;
    case 'bounded': return numberCost(f.text, f.n.bounds);
    case 'literal': return f.values.reduce((m, v) => Math.min(m, v.length - f.pos), Infinity);
    case 'array': return closeArray(f.n, f.count, f.ph);
    case 'object':
      switch (f.ph) {
        case 'first':
        case 'comma':
        case 'after':
          return closeObject(f.n, f.seen, f.ph);
        case 'colon':
          // Free keys: the key string is the frame above; then `:`, a value, and the rest of the object.
          return f.key === null ? 1 + minLength(f.n.values) + closeObject(f.n, [...f.seen, ''], 'after') : 1 + minLength(f.n.props!.get(f.key)!) + closeObject(f.n, [...f.seen, f.key], 'after');
        case 'key':
          return f.cands.reduce((m, k) => Math.min(m, f.n.keys.get(k)!.length - f.kpos + 1 + minLength(f.n.props!.get(k)!) + closeObject(f.n, [...f.seen, k], 'after')), Infinity);
      }
  }
}

function stackCost(s: Stack): number {
  let c = 0;
  for (let x = s; x.end !== true; x = x.up) c += frameCost(x.f);
  return c;
}

/** Fewest bytes that complete the value from `s` (0 when it may end). */
export function cost(s: JsonState): number {
  let best = Infinity;
  for (const x of s.stacks) best = Math.min(best, stackCost(x));
  return best;
}
