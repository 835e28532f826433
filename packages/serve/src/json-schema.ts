// JSON Schema → the automaton's nodes (json-grammar.ts), for constrained decoding.
//
// Supported: `type` (one or a list), `enum` and `const` (values of any type, written as their
// compact JSON), `anyOf`, `oneOf` (options that no value can match twice: different types, or
// objects told apart by a required property with distinct `const`/`enum` values; others are
// refused), `allOf` of one schema, `$ref` to `#`, `#/$defs/…`, `#/definitions/…` or any local JSON
// pointer (recursive schemas included); strings: `minLength`, `maxLength` (code points),
// `pattern` (json-regex.ts); numbers: `minimum`, `maximum`, `exclusiveMinimum`,
// `exclusiveMaximum` (draft-4 booleans or numbers), and every `integer` stays within ±(2^53 − 1);
// arrays: `items`, `minItems`, `maxItems`; objects: `properties`, `required`,
// `additionalProperties` (false, true, or a schema for the values of an object without
// `properties`), `minProperties`, `maxProperties`; annotations (`title`, `description`,
// `default`, `examples`, `$schema`, `$id`, `$comment`, `deprecated`, `readOnly`, `writeOnly`).
// Objects with `properties` are written with those keys only. Anything else is a SchemaError
// naming the keyword's path. A schema is walked without recursion first and refused beyond
// MAX_SCHEMA_DEPTH levels (json-depth.ts), so compilation below never runs out of stack.

import { MAX_SCHEMA_DEPTH, tooDeep } from './json-depth';
import { decimalOf, numberCost, type NumberBounds } from './json-number';
import { Pattern, PatternError } from './json-regex';

/** A schema the automaton cannot follow; `path` is the JSON pointer-like path of the keyword. */
export class SchemaError extends Error {
  constructor(readonly path: string, message: string) {
    super(`${path}: ${message}`);
    this.name = 'SchemaError';
  }
}

/** An object: declared `props` (written alone), or free keys whose values follow `values`. */
export interface ObjectNode {
  kind: 'object';
  props: Map<string, SchemaNode> | null;
  keys: Map<string, Uint8Array>;
  required: ReadonlySet<string>;
  minProps: number;
  maxProps: number;
  /** Values of free keys (objects without `props`). */
  values: SchemaNode;
  /** `additionalProperties: false` (for the oneOf disjointness check). */
  closed: boolean;
}

/** An array of `items`. */
export interface ArrayNode {
  kind: 'array';
  items: SchemaNode;
  minItems: number;
  maxItems: number;
}

/** A string; lengths in code points; `pattern` matched anywhere unless anchored. */
export interface StringNode {
  kind: 'string';
  minLength: number;
  maxLength: number;
  pattern: Pattern | null;
}

/** A compiled schema node. */
export type SchemaNode =
  | ObjectNode
  | ArrayNode
  | StringNode
  /** A free number (fraction and exponent allowed). */
  | { kind: 'number' }
  /** A number within bounds (every integer): json-number.ts. */
  | { kind: 'bounded'; bounds: NumberBounds }
  /** One of these JSON texts. */
  | { kind: 'literals'; values: Uint8Array[] }
  | { kind: 'union'; options: SchemaNode[] };

const enc = new TextEncoder();
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$schema', '$id', '$comment', 'deprecated', 'readOnly', 'writeOnly', '$defs', 'definitions']);
const KEYWORDS = new Set([
  'type', 'enum', 'const', 'nullable', 'anyOf', 'oneOf', 'allOf', '$ref',
  'minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
  'items', 'minItems', 'maxItems', 'properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties',
]);
const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'];

/** Largest integer the decoder writes for an unbounded `integer` (2^53 − 1: exact in every JSON reader). */
const SAFE = decimalOf(Number.MAX_SAFE_INTEGER);

function literals(values: unknown[]): SchemaNode {
  return { kind: 'literals', values: values.map((v) => enc.encode(JSON.stringify(v))) };
}

const FREE_STRING: StringNode = { kind: 'string', minLength: 0, maxLength: Infinity, pattern: null };

/** Any JSON value (`{}` or `true` as a schema; `response_format: json_object` asks for an object of it). */
export const ANY: SchemaNode = (() => {
  const any: { kind: 'union'; options: SchemaNode[] } = { kind: 'union', options: [] };
  any.options.push(
    { kind: 'object', props: null, keys: new Map(), required: new Set(), minProps: 0, maxProps: Infinity, values: any, closed: false },
    { kind: 'array', items: any, minItems: 0, maxItems: Infinity },
    FREE_STRING,
    { kind: 'number' },
    literals([true, false, null]),
  );
  return any;
})();

/** Any JSON object. */
export const ANY_OBJECT: SchemaNode = (ANY as { options: SchemaNode[] }).options[0]!;

function keyBytes(props: Map<string, SchemaNode>): Map<string, Uint8Array> {
  return new Map([...props.keys()].map((k) => [k, enc.encode(JSON.stringify(k))]));
}

/** An object with exactly one of the given keys (a tool call `{"name": arguments}`). */
export function oneKeyObject(props: Map<string, SchemaNode>): SchemaNode {
  return { kind: 'object', props, keys: keyBytes(props), required: new Set(), minProps: 1, maxProps: 1, values: ANY, closed: true };
}

/** An array node (used for tool-call lists). */
export function arrayOf(items: SchemaNode, minItems: number, maxItems: number): SchemaNode {
  return { kind: 'array', items, minItems, maxItems };
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

function count(v: unknown, path: string, d: number): number {
  if (v === undefined) return d;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new SchemaError(path, 'must be a non-negative integer');
  return v;
}

/** Compile a JSON Schema (see the file header); throws SchemaError. */
export function compileSchema(schema: unknown, path = 'schema'): SchemaNode {
  const deep = tooDeep(schema, MAX_SCHEMA_DEPTH, path);
  if (deep !== null) throw new SchemaError(deep, `the schema nests more than ${MAX_SCHEMA_DEPTH} levels deep`);
  const node = new Compiler(schema, path).node(schema, path);
  if (minLength(node) === Infinity) throw new SchemaError(path, 'no finite JSON value satisfies this schema');
  return node;
}

class Compiler {
  /** Nodes by schema object, so `$ref` cycles end in the node being built. */
  private readonly done = new Map<object, SchemaNode>();

  constructor(private readonly root: unknown, private readonly rootPath: string) {}

  node(schema: unknown, path: string): SchemaNode {
    if (schema === true) return ANY;
    if (schema === false) throw new SchemaError(path, 'the schema false admits no value');
    if (!isObj(schema)) throw new SchemaError(path, 'a schema must be an object (or true)');
    const known = this.done.get(schema);
    if (known) return known;
    // A placeholder first: a $ref back to this schema finds it, and it is filled in below.
    const self: { kind: 'union'; options: SchemaNode[] } = { kind: 'union', options: [] };
    this.done.set(schema, self);
    const n = this.compile(schema, path);
    self.options.push(n);
    if (this.referenced.has(self)) return self;
    this.done.set(schema, n);
    return n;
  }

  /** Placeholders a `$ref` returned before their schema was compiled (they stay in the graph). */
  private readonly referenced = new Set<SchemaNode>();

  private compile(schema: Record<string, unknown>, path: string): SchemaNode {
    for (const k of Object.keys(schema)) {
      if (!KEYWORDS.has(k) && !ANNOTATIONS.has(k)) throw new SchemaError(`${path}.${k}`, `the keyword '${k}' is not supported by constrained decoding (supported: ${[...KEYWORDS].join(', ')})`);
    }
    if (schema.$ref !== undefined) {
      const others = Object.keys(schema).filter((k) => k !== '$ref' && !ANNOTATIONS.has(k));
      if (others.length > 0) throw new SchemaError(`${path}.${others[0]}`, 'keywords next to $ref are not supported');
      const target = this.resolve(schema.$ref, `${path}.$ref`);
      const n = this.node(target, `${path}.$ref`);
      this.referenced.add(n);
      return n;
    }
    if (schema.allOf !== undefined) {
      if (!Array.isArray(schema.allOf) || schema.allOf.length !== 1) throw new SchemaError(`${path}.allOf`, 'only an allOf of one schema is supported');
      const others = Object.keys(schema).filter((k) => k !== 'allOf' && !ANNOTATIONS.has(k));
      if (others.length > 0) throw new SchemaError(`${path}.${others[0]}`, 'keywords next to allOf are not supported');
      return this.node(schema.allOf[0], `${path}.allOf[0]`);
    }
    for (const key of ['anyOf', 'oneOf'] as const) {
      const list = schema[key];
      if (list === undefined) continue;
      if (!Array.isArray(list) || list.length === 0) throw new SchemaError(`${path}.${key}`, 'must be a non-empty list of schemas');
      const others = Object.keys(schema).filter((k) => k !== key && !ANNOTATIONS.has(k));
      if (others.length > 0) throw new SchemaError(`${path}.${others[0]}`, `keywords next to ${key} are not supported (move them into each option)`);
      const options = list.map((s, i) => this.node(s, `${path}.${key}[${i}]`));
      if (key === 'oneOf') {
        for (let i = 0; i < options.length; i++) for (let j = i + 1; j < options.length; j++) {
          if (!disjoint(options[i]!, options[j]!)) throw new SchemaError(`${path}.oneOf[${j}]`, `options ${i} and ${j} may both match one value; constrained decoding supports oneOf only for options of different types or objects with distinct const values of a required property (use anyOf otherwise)`);
        }
      }
      return options.length === 1 ? options[0]! : { kind: 'union', options };
    }
    let types: string[];
    const t = schema.type;
    if (t === undefined) types = schema.properties !== undefined ? ['object'] : schema.items !== undefined ? ['array'] : [];
    else if (typeof t === 'string') types = [t];
    else if (Array.isArray(t) && t.length > 0 && t.every((x) => typeof x === 'string')) types = t as string[];
    else throw new SchemaError(`${path}.type`, 'must be a type name or a non-empty list of them');
    if (schema.nullable === true && types.length > 0 && !types.includes('null')) types = [...types, 'null'];
    for (const x of types) if (!TYPES.includes(x)) throw new SchemaError(`${path}.type`, `unknown type '${x}'`);
    if (schema.const !== undefined || schema.enum !== undefined) {
      const values = schema.const !== undefined ? [schema.const] : schema.enum;
      if (!Array.isArray(values) || values.length === 0) throw new SchemaError(`${path}.enum`, 'must be a non-empty list');
      const ok = values.filter((v) => types.length === 0 || types.some((x) => matchesType(v, x)));
      if (ok.length === 0) throw new SchemaError(`${path}.enum`, "no value has the schema's type");
      return literals(ok);
    }
    if (types.length === 0) {
      const implied = ['minLength', 'maxLength', 'pattern'].some((k) => schema[k] !== undefined) ? 'string'
        : ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].some((k) => schema[k] !== undefined) ? 'number' : null;
      if (implied === null) return ANY;
      types = [implied];
    }
    if (types.includes('integer') && types.includes('number')) types = types.filter((x) => x !== 'integer');
    const options = types.map((x) => this.type(schema, x, path));
    if (options.length === 1) return options[0]!;
    const lits = options.filter((o) => o.kind === 'literals');
    const rest = options.filter((o) => o.kind !== 'literals');
    return { kind: 'union', options: lits.length > 1 ? [...rest, { kind: 'literals', values: lits.flatMap((o) => (o.kind === 'literals' ? o.values : [])) }] : options };
  }

  /** The schema a local `$ref` points to. */
  private resolve(ref: unknown, path: string): unknown {
    if (typeof ref !== 'string' || !ref.startsWith('#')) throw new SchemaError(path, `only local references ('#', '#/$defs/name') are supported, got ${JSON.stringify(ref)}`);
    let at: unknown = this.root;
    const pointer = ref.slice(1);
    if (pointer !== '' && !pointer.startsWith('/')) throw new SchemaError(path, `'${ref}' is not a JSON pointer`);
    for (const raw of pointer === '' ? [] : pointer.slice(1).split('/')) {
      let part: string;
      try {
        part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      } catch {
        throw new SchemaError(path, `'${ref}' is not a JSON pointer`);
      }
      if (Array.isArray(at) && /^\d+$/.test(part)) at = at[Number(part)];
      else if (isObj(at) && Object.hasOwn(at, part)) at = at[part];
      else throw new SchemaError(path, `'${ref}' points to nothing in ${this.rootPath}`);
    }
    return at;
  }

  private type(schema: Record<string, unknown>, t: string, path: string): SchemaNode {
    switch (t) {
      case 'string': {
        const minLength = count(schema.minLength, `${path}.minLength`, 0);
        const maxLength = count(schema.maxLength, `${path}.maxLength`, Infinity);
        if (maxLength < minLength) throw new SchemaError(`${path}.maxLength`, 'is below minLength');
        let pattern: Pattern | null = null;
        if (schema.pattern !== undefined) {
          if (typeof schema.pattern !== 'string') throw new SchemaError(`${path}.pattern`, 'must be a string');
          try {
            pattern = new Pattern(schema.pattern);
            if (pattern.cost(pattern.start, 0, minLength, maxLength) === Infinity) throw new SchemaError(`${path}.pattern`, 'no string of the allowed lengths matches it (characters that need \\u escapes are never written)');
          } catch (e) {
            if (e instanceof PatternError) throw new SchemaError(`${path}.pattern`, e.message);
            throw e;
          }
        }
        return minLength === 0 && maxLength === Infinity && pattern === null ? FREE_STRING : { kind: 'string', minLength, maxLength, pattern };
      }
      case 'number':
      case 'integer':
        return this.number(schema, t === 'integer', path);
      case 'boolean': return literals([true, false]);
      case 'null': return literals([null]);
      case 'array': {
        const minItems = count(schema.minItems, `${path}.minItems`, 0);
        const maxItems = count(schema.maxItems, `${path}.maxItems`, Infinity);
        if (maxItems < minItems) throw new SchemaError(`${path}.maxItems`, 'is below minItems');
        return { kind: 'array', items: schema.items === undefined ? ANY : this.node(schema.items, `${path}.items`), minItems, maxItems };
      }
      default:
        return this.object(schema, path);
    }
  }

  private number(schema: Record<string, unknown>, integer: boolean, path: string): SchemaNode {
    const bound = (k: string): number | undefined => {
      const v = schema[k];
      if (v === undefined || typeof v === 'boolean') return undefined;
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new SchemaError(`${path}.${k}`, 'must be a finite number');
      return v;
    };
    // Draft 4: `exclusiveMinimum: true` makes `minimum` exclusive; later drafts give the bound itself.
    let lo = bound('minimum'), loOpen = schema.exclusiveMinimum === true;
    let hi = bound('maximum'), hiOpen = schema.exclusiveMaximum === true;
    const xlo = bound('exclusiveMinimum'), xhi = bound('exclusiveMaximum');
    if (xlo !== undefined && (lo === undefined || xlo >= lo)) [lo, loOpen] = [xlo, true];
    if (xhi !== undefined && (hi === undefined || xhi <= hi)) [hi, hiOpen] = [xhi, true];
    if (!integer && lo === undefined && hi === undefined) return { kind: 'number' };
    const bounds: NumberBounds = {
      integer,
      lo: lo !== undefined ? decimalOf(lo) : integer ? { m: -SAFE.m, e: SAFE.e } : null, loOpen: lo !== undefined && loOpen,
      hi: hi !== undefined ? decimalOf(hi) : integer ? SAFE : null, hiOpen: hi !== undefined && hiOpen,
    };
    if (numberCost('', bounds) === Infinity) throw new SchemaError(`${path}.${hi !== undefined ? 'maximum' : 'minimum'}`, `no ${integer ? 'integer' : 'number'} lies within the bounds`);
    return { kind: 'bounded', bounds };
  }

  private object(schema: Record<string, unknown>, path: string): SchemaNode {
    const p = schema.properties;
    const req = schema.required ?? [];
    if (!Array.isArray(req) || !req.every((r) => typeof r === 'string')) throw new SchemaError(`${path}.required`, 'must be a list of property names');
    const minProps = count(schema.minProperties, `${path}.minProperties`, 0);
    const maxProps = count(schema.maxProperties, `${path}.maxProperties`, Infinity);
    if (maxProps < minProps) throw new SchemaError(`${path}.maxProperties`, 'is below minProperties');
    const ap = schema.additionalProperties;
    if (ap !== undefined && typeof ap !== 'boolean' && !isObj(ap)) throw new SchemaError(`${path}.additionalProperties`, 'must be a boolean or a schema');
    if (p === undefined) {
      if (req.length > 0) throw new SchemaError(`${path}.required`, 'required properties need their schemas in properties');
      if (ap === false) {
        if (minProps > 0) throw new SchemaError(`${path}.minProperties`, 'an object without properties that allows none cannot have any');
        return literals([{}]);
      }
      const values = ap === undefined || ap === true ? ANY : this.node(ap, `${path}.additionalProperties`);
      return { kind: 'object', props: null, keys: new Map(), required: new Set(), minProps, maxProps, values, closed: false };
    }
    if (!isObj(p)) throw new SchemaError(`${path}.properties`, 'must be an object');
    if (isObj(ap) && Object.keys(ap).length > 0) throw new SchemaError(`${path}.additionalProperties`, 'a schema for additional properties next to properties is not supported');
    const props = new Map(Object.entries(p).map(([k, s]) => [k, this.node(s, `${path}.properties.${k}`)]));
    for (const r of req) if (!props.has(r)) throw new SchemaError(`${path}.required`, `'${r}' is required but not in properties`);
    if (req.length > maxProps) throw new SchemaError(`${path}.maxProperties`, `is below the ${req.length} required properties`);
    if (props.size < minProps) throw new SchemaError(`${path}.minProperties`, `asks for more properties than the ${props.size} declared`);
    return { kind: 'object', props, keys: keyBytes(props), required: new Set(req as string[]), minProps, maxProps, values: ANY, closed: ap === false };
  }
}

/** The JSON types a node's values may have. */
function typesOf(n: SchemaNode, seen = new Set<SchemaNode>()): Set<string> {
  if (seen.has(n)) return new Set();
  seen.add(n);
  switch (n.kind) {
    case 'object': case 'array': case 'string': return new Set([n.kind]);
    case 'number': case 'bounded': return new Set(['number']);
    case 'literals': return new Set(n.values.map((v) => { const x = JSON.parse(new TextDecoder().decode(v)) as unknown; return x === null ? 'null' : Array.isArray(x) ? 'array' : typeof x; }));
    case 'union': return new Set(n.options.flatMap((o) => [...typesOf(o, seen)]));
  }
}

/** True when no value can match both `a` and `b` (a sufficient test; see the file header). */
function disjoint(a: SchemaNode, b: SchemaNode): boolean {
  const ta = typesOf(a), tb = typesOf(b);
  if (![...ta].some((t) => tb.has(t))) return true;
  if (a.kind === 'literals' && b.kind === 'literals') {
    const keys = new Set(a.values.map((v) => v.join(',')));
    return !b.values.some((v) => keys.has(v.join(',')));
  }
  if (a.kind === 'object' && b.kind === 'object' && a.props && b.props) {
    for (const k of a.required) {
      if (!b.required.has(k)) {
        if (b.closed && !b.props.has(k)) return true;
        continue;
      }
      const x = a.props.get(k)!, y = b.props.get(k)!;
      if (x.kind === 'literals' && y.kind === 'literals' && disjoint(x, y)) return true;
    }
  }
  return false;
}

// ---- the fewest bytes of a value -------------------------------------------------------------

const minLenMemo = new WeakMap<SchemaNode, number>();

function children(n: SchemaNode): SchemaNode[] {
  switch (n.kind) {
    case 'object': return [...(n.props?.values() ?? []), n.values];
    case 'array': return [n.items];
    case 'union': return n.options;
    default: return [];
  }
}

/** Bytes of one member `"key":value` at its cheapest (free keys: `"":value`). */
export function entryBytes(n: ObjectNode, key: string | null): number {
  if (key === null || !n.props) return 2 + 1 + minLength(n.values);
  return n.keys.get(key)!.length + 1 + minLength(n.props.get(key)!);
}

/** Members an object still needs before `}` (required ones and minProps). */
export function membersNeeded(n: ObjectNode, seen: readonly string[]): number {
  let missing = 0;
  for (const r of n.required) if (!seen.includes(r)) missing++;
  return Math.max(missing, n.minProps - seen.length);
}

/** Keys an object may still take. */
export function unseen(n: ObjectNode, seen: readonly string[]): string[] {
  return n.props ? [...n.props.keys()].filter((k) => !seen.includes(k)) : [];
}

/** Bytes that close an object from phase `ph` ('first', 'comma' or 'after') with `seen` keys. */
export function closeObject(n: ObjectNode, seen: readonly string[], ph: 'first' | 'comma' | 'after'): number {
  const missing = [...n.required].filter((r) => !seen.includes(r));
  const need = Math.max(membersNeeded(n, seen), ph === 'comma' ? 1 : 0);
  let members = 0;
  for (const k of missing) members += entryBytes(n, k);
  if (need > missing.length) {
    const extra = n.props ? unseen(n, seen).filter((k) => !n.required.has(k)).map((k) => entryBytes(n, k)).sort((x, y) => x - y) : new Array<number>(need).fill(entryBytes(n, null));
    if (extra.length < need - missing.length) return Infinity;
    for (let i = 0; i < need - missing.length; i++) members += extra[i]!;
  }
  const commas = ph === 'after' ? need : Math.max(0, need - 1);
  return members + commas + 1;
}

/** Bytes that close an array with `count` items from phase `ph`. */
export function closeArray(n: ArrayNode, count: number, ph: 'first' | 'comma' | 'after'): number {
  const need = Math.max(n.minItems - count, ph === 'comma' ? 1 : 0);
  const commas = ph === 'after' ? need : Math.max(0, need - 1);
  return (need === 0 ? 0 : need * minLength(n.items)) + commas + 1;
}

function nodeBytes(n: SchemaNode): number {
  switch (n.kind) {
    case 'string': return 2 + (n.pattern ? n.pattern.cost(n.pattern.start, 0, n.minLength, n.maxLength) : n.minLength);
    case 'number': return 1;
    case 'bounded': return numberCost('', n.bounds);
    case 'literals': return n.values.reduce((m, x) => Math.min(m, x.length), Infinity);
    case 'union': return n.options.reduce((m, o) => Math.min(m, minLength(o)), Infinity);
    case 'array': return 1 + closeArray(n, 0, 'first');
    case 'object': return 1 + closeObject(n, [], 'first');
  }
}

/**
 * Fewest bytes of a value of `n`. Nodes form a graph with cycles (ANY, recursive `$ref`s), so
 * the values are the least fixpoint of `nodeBytes` over every node reachable from `n`: start at
 * Infinity and relax until nothing changes (each round settles at least one more node).
 */
export function minLength(n: SchemaNode): number {
  const m = minLenMemo.get(n);
  if (m !== undefined) return m;
  const nodes: SchemaNode[] = [];
  const stack = [n];
  const seen = new Set<SchemaNode>();
  while (stack.length > 0) {
    const x = stack.pop()!;
    if (seen.has(x) || minLenMemo.has(x)) continue;
    seen.add(x);
    nodes.push(x);
    stack.push(...children(x));
  }
  for (const x of nodes) minLenMemo.set(x, Infinity);
  for (let round = 0, changed = true; changed && round <= nodes.length; round++) {
    changed = false;
    for (const x of nodes) {
      const v = nodeBytes(x);
      if (v < minLenMemo.get(x)!) {
        minLenMemo.set(x, v);
        changed = true;
      }
    }
  }
  return minLenMemo.get(n)!;
}
