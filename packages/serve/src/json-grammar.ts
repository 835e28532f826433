// A byte-level JSON automaton for a subset of JSON Schema, with the exact number of bytes still
// needed to finish. Constrained decoding (token-constraint.ts) runs every vocabulary token through
// it, so the output of any model always parses as JSON and validates against the schema.
//
// Supported: type (string, number, integer, boolean, null, object, array, or a list of them),
// properties, required, additionalProperties, items, minItems, maxItems, enum, const, and the
// annotations title, description, default, examples, $schema. Objects with `properties` are
// written with those keys only (each at most once, required ones before `}`); objects without
// are free. Output is compact: no whitespace between tokens of the JSON text. Unions (type lists)
// must be decidable by their first byte. Anything else is a SchemaError naming the keyword.
//
// State: an immutable stack of frames (a value to start, a string, a number, literals such as
// `true` or enum values, an object, an array). `step(state, byte)` returns the next state or
// null; numbers and literal sets end lazily (a byte they cannot take is handed to the parent).
// `cost(state)` is the fewest bytes that complete the value, exact, so a decoder that keeps
// `cost ≤ tokens left` never runs out of room (every byte is a token of a byte-level vocabulary).

/** A schema the automaton cannot follow; `path` is the JSON pointer-like path of the keyword. */
export class SchemaError extends Error {
  constructor(readonly path: string, message: string) {
    super(`${path}: ${message}`);
    this.name = 'SchemaError';
  }
}

/** A compiled schema node. */
export type SchemaNode =
  | { kind: 'object'; props: Map<string, SchemaNode> | null; keys: Map<string, Uint8Array>; required: ReadonlySet<string>; minProps: number; maxProps: number }
  | { kind: 'array'; items: SchemaNode; minItems: number; maxItems: number }
  | { kind: 'string' }
  | { kind: 'number'; integer: boolean }
  | { kind: 'literals'; values: Uint8Array[] }
  | { kind: 'union'; options: SchemaNode[] };

const enc = new TextEncoder();
const Q = 0x22; // "

const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$schema', '$comment']);
const KEYWORDS = new Set(['type', 'properties', 'required', 'additionalProperties', 'items', 'minItems', 'maxItems', 'enum', 'const', 'nullable']);

function literals(values: unknown[]): SchemaNode {
  return { kind: 'literals', values: values.map((v) => enc.encode(JSON.stringify(v))) };
}

/** Any JSON value (`{}` or `true` as a schema; `response_format: json_object` asks for an object of it). */
export const ANY: SchemaNode = (() => {
  const any: { kind: 'union'; options: SchemaNode[] } = { kind: 'union', options: [] };
  any.options.push(
    { kind: 'object', props: null, keys: new Map(), required: new Set(), minProps: 0, maxProps: Infinity },
    { kind: 'array', items: any, minItems: 0, maxItems: Infinity },
    { kind: 'string' },
    { kind: 'number', integer: false },
    literals([true, false, null]),
  );
  return any;
})();

/** Any JSON object. */
export const ANY_OBJECT: SchemaNode = ANY.kind === 'union' ? ANY.options[0]! : ANY;

/** An object with exactly one of the given keys (a tool call `{"name": arguments}`). */
export function oneKeyObject(props: Map<string, SchemaNode>): SchemaNode {
  return { kind: 'object', props, keys: keyBytes(props), required: new Set(), minProps: 1, maxProps: 1 };
}

/** An array node (used for tool-call lists). */
export function arrayOf(items: SchemaNode, minItems: number, maxItems: number): SchemaNode {
  return { kind: 'array', items, minItems, maxItems };
}

function keyBytes(props: Map<string, SchemaNode>): Map<string, Uint8Array> {
  return new Map([...props.keys()].map((k) => [k, enc.encode(JSON.stringify(k))]));
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function matchesType(v: unknown, t: string): boolean {
  switch (t) {
    case 'string': return typeof v === 'string';
    case 'number': return typeof v === 'number';
    case 'integer': return typeof v === 'number' && Number.isInteger(v);
    case 'boolean': return typeof v === 'boolean';
    case 'null': return v === null;
    case 'object': return isObj(v);
    case 'array': return Array.isArray(v);
    default: return false;
  }
}

/** Compile a JSON Schema (the supported subset, see the file header); throws SchemaError. */
export function compileSchema(schema: unknown, path = 'schema'): SchemaNode {
  if (schema === true) return ANY;
  if (!isObj(schema)) throw new SchemaError(path, 'a schema must be an object (or true)');
  for (const k of Object.keys(schema)) {
    if (!KEYWORDS.has(k) && !ANNOTATIONS.has(k)) throw new SchemaError(`${path}.${k}`, `the keyword '${k}' is not supported by constrained decoding (supported: ${[...KEYWORDS].join(', ')})`);
  }
  let types: string[];
  const t = schema.type;
  if (t === undefined) types = schema.properties !== undefined ? ['object'] : schema.items !== undefined ? ['array'] : [];
  else if (typeof t === 'string') types = [t];
  else if (Array.isArray(t) && t.length > 0 && t.every((x) => typeof x === 'string')) types = t as string[];
  else throw new SchemaError(`${path}.type`, 'must be a type name or a non-empty list of them');
  if (schema.nullable === true && types.length > 0 && !types.includes('null')) types = [...types, 'null'];
  for (const x of types) if (!['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'].includes(x)) throw new SchemaError(`${path}.type`, `unknown type '${x}'`);
  if (schema.const !== undefined || schema.enum !== undefined) {
    const values = schema.const !== undefined ? [schema.const] : schema.enum;
    if (!Array.isArray(values) || values.length === 0) throw new SchemaError(`${path}.enum`, 'must be a non-empty list');
    const ok = values.filter((v) => types.length === 0 || types.some((x) => matchesType(v, x)));
    if (ok.length === 0) throw new SchemaError(`${path}.enum`, 'no value has the schema\'s type');
    return literals(ok);
  }
  if (types.length === 0) return ANY;
  if (types.includes('integer') && types.includes('number')) types = types.filter((x) => x !== 'integer');
  const options = types.map((x) => compileType(schema, x, path));
  if (options.length === 1) return options[0]!;
  const bool = options.filter((o) => o.kind === 'literals');
  const rest = options.filter((o) => o.kind !== 'literals');
  const merged = bool.length > 1 ? [...rest, { kind: 'literals', values: bool.flatMap((o) => (o.kind === 'literals' ? o.values : [])) } as SchemaNode] : options;
  return { kind: 'union', options: merged };
}

function count(v: unknown, path: string, d: number): number {
  if (v === undefined) return d;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new SchemaError(path, 'must be a non-negative integer');
  return v;
}

function compileType(schema: Record<string, unknown>, t: string, path: string): SchemaNode {
  switch (t) {
    case 'string': return { kind: 'string' };
    case 'number': return { kind: 'number', integer: false };
    case 'integer': return { kind: 'number', integer: true };
    case 'boolean': return literals([true, false]);
    case 'null': return literals([null]);
    case 'array': {
      const minItems = count(schema.minItems, `${path}.minItems`, 0);
      const maxItems = count(schema.maxItems, `${path}.maxItems`, Infinity);
      if (maxItems < minItems) throw new SchemaError(`${path}.maxItems`, 'is below minItems');
      return { kind: 'array', items: schema.items === undefined ? ANY : compileSchema(schema.items, `${path}.items`), minItems, maxItems };
    }
    default: {
      const p = schema.properties;
      const req = schema.required ?? [];
      if (!Array.isArray(req) || !req.every((r) => typeof r === 'string')) throw new SchemaError(`${path}.required`, 'must be a list of property names');
      if (p === undefined) {
        if (req.length > 0) throw new SchemaError(`${path}.required`, 'required properties need their schemas in properties');
        if (schema.additionalProperties !== undefined && schema.additionalProperties !== true && !(isObj(schema.additionalProperties) && Object.keys(schema.additionalProperties).length === 0)) {
          throw new SchemaError(`${path}.additionalProperties`, 'a schema for additional properties is not supported');
        }
        return ANY_OBJECT;
      }
      if (!isObj(p)) throw new SchemaError(`${path}.properties`, 'must be an object');
      const props = new Map(Object.entries(p).map(([k, s]) => [k, compileSchema(s, `${path}.properties.${k}`)]));
      for (const r of req) if (!props.has(r)) throw new SchemaError(`${path}.required`, `'${r}' is required but not in properties`);
      const ap = schema.additionalProperties;
      if (ap !== undefined && typeof ap !== 'boolean' && !(isObj(ap) && Object.keys(ap).length === 0)) throw new SchemaError(`${path}.additionalProperties`, 'a schema for additional properties is not supported');
      return { kind: 'object', props, keys: keyBytes(props), required: new Set(req as string[]), minProps: 0, maxProps: Infinity };
    }
  }
}

// ---- the automaton --------------------------------------------------------------------------

type ObjectNode = Extract<SchemaNode, { kind: 'object' }>;
type ArrayNode = Extract<SchemaNode, { kind: 'array' }>;

type Frame =
  | { t: 'value'; n: SchemaNode }
  /**
   * esc: 0 none, 1 after `\`, 2–5 inside `\uXXXX` with esc − 2 hex digits read; cont: UTF-8
   * continuation bytes due, the next one in [lo, hi] (strict UTF-8: no overlongs, no surrogates).
   */
  | { t: 'string'; esc: number; cont: number; lo?: number; hi?: number }
  /** ph: 0 after '-', 1 '0', 2 integer digits, 3 after '.', 4 fraction digits, 5 after 'e', 6 after exponent sign, 7 exponent digits. */
  | { t: 'number'; ph: number; integer: boolean }
  | { t: 'literal'; values: Uint8Array[]; pos: number }
  /** Objects: ph 'first' after `{`, 'comma' after `,`, 'key' inside a known key (cands alive, kpos bytes read), 'colon' after the key, 'after' after a value. */
  | { t: 'object'; n: ObjectNode; ph: 'first' | 'comma' | 'key' | 'colon' | 'after'; seen: readonly string[]; key: string | null; cands: readonly string[]; kpos: number }
  | { t: 'array'; n: ArrayNode; ph: 'first' | 'comma' | 'after'; count: number };

/** The state after a complete value. */
export const END = Object.freeze({ end: true as const });

/** An automaton state: a stack of frames; `END` once the value is complete. */
export type JsonState = { f: Frame; up: JsonState; end?: undefined } | typeof END;

/** The state before the first byte of a value of `node`. */
export function startState(node: SchemaNode): JsonState {
  return { f: { t: 'value', n: node }, up: END };
}

const push = (f: Frame, up: JsonState): JsonState => ({ f, up });
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
const isHex = (b: number) => isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);

/** Whether a frame may end here (numbers and literal sets end when the next byte is not theirs). */
function complete(f: Frame): boolean {
  if (f.t === 'number') return f.ph === 1 || f.ph === 2 || f.ph === 4 || f.ph === 7;
  if (f.t === 'literal') return f.values.some((v) => v.length === f.pos);
  return false;
}

/** True for bytes that leave a string state unchanged (printable ASCII other than `"` and `\`). */
export function isPlainStringByte(b: number): boolean {
  return b >= 0x20 && b < 0x80 && b !== Q && b !== 0x5c;
}

/** True when `s` is inside a string with no escape or multi-byte character open: plain bytes keep it as it is. */
export function inPlainString(s: JsonState): boolean {
  return s.end !== true && s.f.t === 'string' && s.f.esc === 0 && s.f.cont === 0;
}

/** True when the value may end now (complete, or a complete number/literal at the top level). */
export function canEnd(s: JsonState): boolean {
  return s.end === true || (s.up === END && complete(s.f));
}

/** The state after byte `b`, or null when `b` cannot come next. */
export function step(s: JsonState, b: number): JsonState | null {
  if (s.end === true) return null;
  const f = s.f;
  const up = s.up;
  switch (f.t) {
    case 'value':
      return startValue(f.n, up, b);
    case 'string':
      if (f.esc === 1) {
        if (b === 0x75) return push({ t: 'string', esc: 2, cont: 0 }, up);
        return '"\\/bfnrt'.includes(String.fromCharCode(b)) ? push({ t: 'string', esc: 0, cont: 0 }, up) : null;
      }
      if (f.esc >= 2) return isHex(b) ? push({ t: 'string', esc: f.esc === 5 ? 0 : f.esc + 1, cont: 0 }, up) : null;
      if (f.cont > 0) return b >= (f.lo ?? 0x80) && b <= (f.hi ?? 0xbf) ? push({ t: 'string', esc: 0, cont: f.cont - 1 }, up) : null;
      if (b === Q) return up;
      if (b === 0x5c) return push({ t: 'string', esc: 1, cont: 0 }, up);
      if (b < 0x20) return null;
      if (b < 0x80) return s;
      if (b >= 0xc2 && b <= 0xdf) return push({ t: 'string', esc: 0, cont: 1 }, up);
      if (b >= 0xe0 && b <= 0xef) return push({ t: 'string', esc: 0, cont: 2, lo: b === 0xe0 ? 0xa0 : 0x80, hi: b === 0xed ? 0x9f : 0xbf }, up);
      if (b >= 0xf0 && b <= 0xf4) return push({ t: 'string', esc: 0, cont: 3, lo: b === 0xf0 ? 0x90 : 0x80, hi: b === 0xf4 ? 0x8f : 0xbf }, up);
      return null;
    case 'number': {
      const ph = numberStep(f.ph, b, f.integer);
      if (ph >= 0) return push({ t: 'number', ph, integer: f.integer }, up);
      return complete(f) ? step(up, b) : null;
    }
    case 'literal': {
      const alive = f.values.filter((v) => v.length > f.pos && v[f.pos] === b);
      if (alive.length > 0) {
        const next: Frame = { t: 'literal', values: alive, pos: f.pos + 1 };
        // A JSON string literal is never a prefix of another: done as soon as one is matched.
        return alive.length === 1 && alive[0]!.length === f.pos + 1 && alive[0]![f.pos] === Q ? up : push(next, up);
      }
      return complete(f) ? step(up, b) : null;
    }
    case 'object':
      return objectStep(f, up, b);
    case 'array':
      return arrayStep(f, up, b);
  }
}

function startValue(n: SchemaNode, up: JsonState, b: number): JsonState | null {
  switch (n.kind) {
    case 'union':
      for (const o of n.options) {
        const r = startValue(o, up, b);
        if (r) return r;
      }
      return null;
    case 'object':
      return b === 0x7b ? push({ t: 'object', n, ph: 'first', seen: [], key: null, cands: [], kpos: 0 }, up) : null;
    case 'array':
      return b === 0x5b ? push({ t: 'array', n, ph: 'first', count: 0 }, up) : null;
    case 'string':
      return b === Q ? push({ t: 'string', esc: 0, cont: 0 }, up) : null;
    case 'number':
      if (b === 0x2d) return push({ t: 'number', ph: 0, integer: n.integer }, up);
      if (b === 0x30) return push({ t: 'number', ph: 1, integer: n.integer }, up);
      return b > 0x30 && b <= 0x39 ? push({ t: 'number', ph: 2, integer: n.integer }, up) : null;
    case 'literals':
      return step(push({ t: 'literal', values: n.values, pos: 0 }, up), b);
  }
}

function numberStep(ph: number, b: number, integer: boolean): number {
  const digit = isDigit(b);
  const dot = b === 0x2e && !integer;
  const exp = (b === 0x65 || b === 0x45) && !integer;
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

/** Keys an object may still take. */
function unseen(n: ObjectNode, seen: readonly string[]): string[] {
  return n.props ? [...n.props.keys()].filter((k) => !seen.includes(k)) : [];
}

function objectStep(f: Extract<Frame, { t: 'object' }>, up: JsonState, b: number): JsonState | null {
  const n = f.n;
  const with_ = (patch: Partial<Extract<Frame, { t: 'object' }>>): JsonState => push({ ...f, ...patch }, up);
  switch (f.ph) {
    case 'first':
    case 'comma':
      if (b === 0x7d && f.ph === 'first') return membersNeeded(n, f.seen) === 0 ? up : null;
      if (b !== Q) return null;
      if (!n.props) return push({ t: 'string', esc: 0, cont: 0 }, with_({ ph: 'colon', key: null }));
      {
        const cands = unseen(n, f.seen);
        return cands.length > 0 && f.seen.length < n.maxProps ? with_({ ph: 'key', cands, kpos: 1 }) : null;
      }
    case 'key': {
      const cands = f.cands.filter((k) => n.keys.get(k)![f.kpos] === b);
      if (cands.length === 0) return null;
      const done = cands.find((k) => n.keys.get(k)!.length === f.kpos + 1);
      return done !== undefined ? with_({ ph: 'colon', key: done, cands: [], kpos: 0 }) : with_({ cands, kpos: f.kpos + 1 });
    }
    case 'colon': {
      if (b !== 0x3a) return null;
      const value = f.key !== null && n.props ? n.props.get(f.key)! : ANY;
      const seen = f.key !== null ? [...f.seen, f.key] : [...f.seen, ''];
      return push({ t: 'value', n: value }, with_({ ph: 'after', seen, key: null }));
    }
    case 'after':
      if (b === 0x2c) return f.seen.length < n.maxProps && (!n.props || unseen(n, f.seen).length > 0) ? with_({ ph: 'comma' }) : null;
      if (b === 0x7d) return membersNeeded(n, f.seen) === 0 ? up : null;
      return null;
  }
}

function arrayStep(f: Extract<Frame, { t: 'array' }>, up: JsonState, b: number): JsonState | null {
  const n = f.n;
  switch (f.ph) {
    case 'first':
      if (b === 0x5d) return n.minItems === 0 ? up : null;
      if (n.maxItems < 1) return null;
      return startValue(n.items, push({ t: 'array', n, ph: 'after', count: 1 }, up), b);
    case 'comma':
      return startValue(n.items, push({ t: 'array', n, ph: 'after', count: f.count + 1 }, up), b);
    case 'after':
      if (b === 0x2c) return f.count < n.maxItems ? push({ t: 'array', n, ph: 'comma', count: f.count }, up) : null;
      if (b === 0x5d) return f.count >= n.minItems ? up : null;
      return null;
  }
}

// ---- exact completion cost ------------------------------------------------------------------

const minLenMemo = new WeakMap<SchemaNode, number>();

/** Fewest bytes of a value of `n`. */
export function minLength(n: SchemaNode): number {
  const m = minLenMemo.get(n);
  if (m !== undefined) return m;
  minLenMemo.set(n, Infinity); // a cycle (ANY) is never the cheapest option
  let v: number;
  switch (n.kind) {
    case 'string': v = 2; break;
    case 'number': v = 1; break;
    case 'literals': v = Math.min(...n.values.map((x) => x.length)); break;
    case 'union': v = Math.min(...n.options.map(minLength)); break;
    case 'array': v = 1 + closeArray(n, 0, 'first'); break;
    case 'object': v = 1 + closeObject(n, [], 'first'); break;
  }
  minLenMemo.set(n, v);
  return v;
}

/** Bytes of one member `"key":value` at its cheapest (keyless objects: `"":0`). */
function entry(n: ObjectNode, key: string | null): number {
  if (key === null || !n.props) return 2 + 1 + 1;
  return n.keys.get(key)!.length + 1 + minLength(n.props.get(key)!);
}

/** Members an object still needs before `}` (required ones and minProps). */
function membersNeeded(n: ObjectNode, seen: readonly string[]): number {
  const missing = [...n.required].filter((r) => !seen.includes(r)).length;
  return Math.max(missing, n.minProps - seen.length);
}

/** Bytes that close an object from phase `ph` ('first', 'comma' or 'after') with `seen` keys. */
function closeObject(n: ObjectNode, seen: readonly string[], ph: 'first' | 'comma' | 'after'): number {
  const missing = [...n.required].filter((r) => !seen.includes(r));
  const need = Math.max(membersNeeded(n, seen), ph === 'comma' ? 1 : 0);
  let members = missing.reduce((s, k) => s + entry(n, k), 0);
  if (need > missing.length) {
    const extra = n.props ? unseen(n, seen).filter((k) => !n.required.has(k)).map((k) => entry(n, k)).sort((a, b) => a - b) : new Array<number>(need).fill(entry(n, null));
    members += extra.slice(0, need - missing.length).reduce((s, x) => s + x, 0);
  }
  const commas = ph === 'after' ? need : Math.max(0, need - 1);
  return members + commas + 1;
}

function closeArray(n: ArrayNode, count: number, ph: 'first' | 'comma' | 'after'): number {
  const need = Math.max(n.minItems - count, ph === 'comma' ? 1 : 0);
  const commas = ph === 'after' ? need : Math.max(0, need - 1);
  return (need === 0 ? 0 : need * minLength(n.items)) + commas + 1;
}

function frameCost(f: Frame): number {
  switch (f.t) {
    case 'value': return minLength(f.n);
    case 'string': return 1 + f.cont + (f.esc === 1 ? 1 : f.esc >= 2 ? 6 - f.esc : 0);
    case 'number': return complete(f) ? 0 : 1;
    case 'literal': return Math.min(...f.values.map((v) => v.length - f.pos));
    case 'array': return closeArray(f.n, f.count, f.ph);
    case 'object':
      switch (f.ph) {
        case 'first':
        case 'comma':
        case 'after':
          return closeObject(f.n, f.seen, f.ph);
        case 'colon':
          // Keyless objects: the key string is the frame above; then `:`, a value, and `}`.
          return f.key === null ? 1 + 1 + 1 : 1 + minLength(f.n.props!.get(f.key)!) + closeObject(f.n, [...f.seen, f.key], 'after');
        case 'key':
          return Math.min(...f.cands.map((k) => f.n.keys.get(k)!.length - f.kpos + 1 + minLength(f.n.props!.get(k)!) + closeObject(f.n, [...f.seen, k], 'after')));
      }
  }
}

/** Fewest bytes that complete the value from `s` (0 when it may end). */
export function cost(s: JsonState): number {
  let c = 0;
  for (let x = s; x.end !== true; x = x.up) c += frameCost(x.f);
  return c;
}
