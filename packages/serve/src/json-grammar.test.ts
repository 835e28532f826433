// The JSON automaton: every path it allows ends in JSON that validates (ajv, an independent
// validator), its completion cost is exact (the Bellman equation over all 256 bytes holds at
// every state visited), and it accepts the compact JSON of valid values and refuses invalid text.

import Ajv from 'ajv';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { ANY_OBJECT, canEnd, compileSchema, cost, SchemaError, startState, step, type JsonState, type SchemaNode } from './json-grammar';

const SCHEMAS: Record<string, unknown> = {
  person: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      age: { type: 'integer' },
      height: { type: 'number' },
      member: { type: 'boolean' },
      role: { enum: ['admin', 'user', 'guest'] },
      tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
      nick: { type: ['string', 'null'] },
      address: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'integer' } }, required: ['city'], additionalProperties: false },
    },
    required: ['name', 'age', 'role', 'address'],
    additionalProperties: false,
  },
  list: { type: 'array', items: { type: 'object', properties: { id: { type: 'integer' }, ok: { type: 'boolean' } }, required: ['id', 'ok'] }, minItems: 2, maxItems: 4 },
  numbers: { type: 'array', items: { enum: [1, 12, 123, -4.5, 'x', null, true] } },
  scalar: { type: 'number' },
  free: { type: 'object' },
  nested: { type: 'object', properties: { a: { type: 'array', items: { type: 'array', items: { type: 'integer' } }, minItems: 1 } }, required: ['a'] },
  bounded: {
    type: 'object',
    properties: {
      age: { type: 'integer', minimum: 18, maximum: 120 },
      ratio: { type: 'number', exclusiveMinimum: 0, maximum: 1.5 },
      below: { type: 'number', minimum: -5.25, exclusiveMaximum: -0.5 },
      tiny: { type: 'number', exclusiveMinimum: 0.25, exclusiveMaximum: 0.26 },
      big: { type: 'integer', minimum: 1000 },
      any: { type: 'integer' },
    },
    required: ['age', 'ratio', 'below', 'tiny', 'big', 'any'],
  },
  strings: {
    type: 'object',
    properties: {
      code: { type: 'string', pattern: '^[A-Z]{2}-\\d{3}$' },
      mail: { type: 'string', pattern: '^[a-z]+@[a-z]+\\.(com|ch)$' },
      word: { type: 'string', minLength: 2, maxLength: 4 },
      greek: { type: 'string', pattern: '^[α-ω]+$', maxLength: 3 },
      has: { type: 'string', pattern: 'ab+c' },
      line: { type: 'string', pattern: '^.{1,3}$' },
    },
    required: ['code', 'mail', 'word', 'greek', 'has', 'line'],
  },
  unions: {
    type: 'array',
    items: {
      anyOf: [
        { type: 'object', properties: { a: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['a'] },
        { type: 'object', properties: { a: { type: 'string', maxLength: 2 }, b: { const: [1, { x: null }] } }, required: ['b'] },
        { enum: [{ k: 'v' }, [true], 'str', 1.5] },
      ],
    },
    minItems: 2,
    maxItems: 3,
  },
  tagged: {
    oneOf: [
      { type: 'object', properties: { kind: { const: 'circle' }, r: { type: 'number', minimum: 0 } }, required: ['kind', 'r'], additionalProperties: false },
      { type: 'object', properties: { kind: { const: 'square' }, side: { type: 'integer', maximum: 10, minimum: 1 } }, required: ['kind', 'side'], additionalProperties: false },
      { type: 'string', minLength: 1, maxLength: 2 },
    ],
  },
  tree: {
    $defs: { node: { type: 'object', properties: { v: { type: 'integer', minimum: -2, maximum: 2 }, kids: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 } }, required: ['v'] } },
    $ref: '#/$defs/node',
  },
  map: { type: 'object', additionalProperties: { type: 'boolean' }, minProperties: 1, maxProperties: 2 },
};

const ajv = new Ajv({ strict: false, allowUnionTypes: true });
const dec = new TextDecoder('utf-8', { fatal: true });

function feed(s: JsonState, text: string): JsonState | null {
  let x: JsonState | null = s;
  for (const b of new TextEncoder().encode(text)) {
    if (x === null) return null;
    x = step(x, b);
  }
  return x;
}

function successors(s: JsonState): { b: number; s: JsonState }[] {
  const out: { b: number; s: JsonState }[] = [];
  for (let b = 0; b < 256; b++) {
    const n = step(s, b);
    if (n) out.push({ b, s: n });
  }
  return out;
}

/** A random walk within `budget` bytes; checks the cost equation at every state. */
function walk(node: SchemaNode, budget: number, rand: () => number): Uint8Array {
  let s: JsonState = startState(node);
  const bytes: number[] = [];
  for (;;) {
    const next = successors(s);
    const c = cost(s);
    if (canEnd(s)) expect(c).toBe(0);
    else expect(c).toBe(1 + Math.min(...next.map((n) => cost(n.s))));
    const left = budget - bytes.length;
    expect(c).toBeLessThanOrEqual(left);
    const ok = next.filter((n) => cost(n.s) <= left - 1);
    if (canEnd(s) && (ok.length === 0 || rand() < 0.2)) return Uint8Array.from(bytes);
    expect(ok.length).toBeGreaterThan(0);
    const pick = ok[Math.floor(rand() * ok.length)]!;
    bytes.push(pick.b);
    s = pick.s;
  }
}

describe('constrained JSON', () => {
  test.each(Object.keys(SCHEMAS))('random walks within the budget always give valid JSON for %s', (name) => {
    const schema = SCHEMAS[name];
    const node = compileSchema(schema);
    const validate = ajv.compile(schema as object);
    const min = cost(startState(node));
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 }), fc.integer(), (extra, seed) => {
        let x = seed >>> 0 || 1;
        const rand = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32);
        const bytes = walk(node, min + extra, rand);
        expect(bytes.length).toBeLessThanOrEqual(min + extra);
        const value: unknown = JSON.parse(dec.decode(bytes));
        expect(validate(value), `${dec.decode(bytes)} ${JSON.stringify(validate.errors)}`).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  test('the least budget is exactly the shortest valid text', () => {
    expect(cost(startState(compileSchema(SCHEMAS.person)))).toBe('{"name":"","age":0,"role":"user","address":{"city":""}}'.length);
    expect(cost(startState(compileSchema(SCHEMAS.list)))).toBe('[{"id":0,"ok":true},{"id":0,"ok":true}]'.length);
    expect(cost(startState(ANY_OBJECT))).toBe(2);
  });

  test('accepts the compact JSON of valid values and refuses invalid text', () => {
    const node = compileSchema(SCHEMAS.person);
    const good = { name: 'Anna \u00fc "q" \\ \n', age: -3, height: 1.5e3, member: false, role: 'guest', tags: ['a', 'b'], nick: null, address: { city: 'Bern', zip: 3000 } };
    const end = feed(startState(node), JSON.stringify(good));
    expect(end !== null && canEnd(end)).toBe(true);
    for (const bad of [
      '{"name":"a","age":1.5', // integer with a fraction
      '{"name":"a","name"', // repeated key
      '{"nam":', // unknown key
      '{"name":"a"}', // required keys missing at '}'
      '{"name":"a","age":1,"role":"root"', // not in the enum
      '{"name":"a",}', // trailing comma
      '{"tags":["a","b","c","d"]', // maxItems
      '{"name":"\u0001', // control character in a string
      '{"name":01', // leading zero
      ' {', // whitespace
    ]) expect([bad, feed(startState(node), bad)]).toEqual([bad, null]);
    expect(feed(startState(compileSchema(SCHEMAS.list)), '[{"id":1,"ok":true}]')).toBeNull();
  });

  test('unsupported keywords are SchemaErrors naming the path', () => {
    const cases: [unknown, string][] = [
      [{ type: 'string', pattern: '(?=a)b' }, 'schema.pattern'],
      [{ type: 'string', pattern: '\\1' }, 'schema.pattern'],
      [{ type: 'object', properties: { a: { type: 'string', format: 'email' } } }, 'schema.properties.a.format'],
      [{ type: 'number', multipleOf: 3 }, 'schema.multipleOf'],
      [{ oneOf: [{ type: 'string' }, { type: 'string', maxLength: 3 }] }, 'schema.oneOf[1]'],
      [{ oneOf: [{ type: 'object', properties: { k: { const: 1 } }, required: ['k'] }, { type: 'object', properties: { k: { const: 1 } }, required: ['k'] }] }, 'schema.oneOf[1]'],
      [{ allOf: [{ type: 'string' }, { maxLength: 2 }] }, 'schema.allOf'],
      [{ $ref: 'https://example.com/s.json' }, 'schema.$ref'],
      [{ $ref: '#/$defs/missing' }, 'schema.$ref'],
      [{ $ref: '#/$defs/x', type: 'string' }, 'schema.type'],
      [{ type: 'object', properties: {}, required: ['a'] }, 'schema.required'],
      [{ type: 'object', properties: { a: {} }, additionalProperties: { type: 'string' } }, 'schema.additionalProperties'],
      [{ type: 'integer', minimum: 5, maximum: 4 }, 'schema.maximum'],
      [{ type: 'integer', exclusiveMinimum: 4, exclusiveMaximum: 5 }, 'schema.maximum'],
      [{ type: 'string', pattern: '^[a-c]{5}$', maxLength: 4 }, 'schema.pattern'],
      [{ type: 'string', pattern: '^\\u0001$' }, 'schema.pattern'],
      [{ $defs: { a: { type: 'object', properties: { a: { $ref: '#/$defs/a' } }, required: ['a'] } }, $ref: '#/$defs/a' }, 'schema'],
      [{ type: 'date' }, 'schema.type'],
    ];
    for (const [schema, path] of cases) {
      const e = (() => {
        try {
          compileSchema(schema);
        } catch (x) {
          return x;
        }
        return null;
      })();
      expect(e, JSON.stringify(schema)).toBeInstanceOf(SchemaError);
      expect([path, (e as SchemaError).path]).toEqual([path, path]);
    }
  });

  test('schemas nested beyond the documented depth are refused without recursion, at any depth', () => {
    const nest = (d: number): unknown => {
      let s: unknown = { type: 'string' };
      for (let i = 0; i < d; i++) s = { type: 'array', items: s };
      return s;
    };
    // MAX_SCHEMA_DEPTH (64) levels of objects: the string schema inside 63 arrays.
    expect(() => compileSchema(nest(63))).not.toThrow();
    for (const d of [64, 1000, 100_000]) {
      const e = (() => { try { compileSchema(nest(d)); } catch (x) { return x; } return null; })() as SchemaError;
      expect(e).toBeInstanceOf(SchemaError);
      expect(e.message).toMatch(/nests more than 64 levels deep/);
      expect(e.path).toBe(`schema${'.items'.repeat(64)}`);
    }
  });

  test('values that round-trip: enum members of any type, unicode within maxLength, bounds at their edges', () => {
    const take = (schema: unknown, text: string) => {
      const end = feed(startState(compileSchema(schema)), text);
      return end !== null && canEnd(end);
    };
    expect(take({ enum: [{ a: [1, 'x'] }, [null], 2] }, '{"a":[1,"x"]}')).toBe(true);
    expect(take({ enum: [{ a: [1, 'x'] }, [null], 2] }, '{"a":[1]}')).toBe(false);
    expect(take({ type: 'string', maxLength: 2 }, '"ü😀"')).toBe(true);
    expect(take({ type: 'string', maxLength: 2 }, '"ü😀a"')).toBe(false);
    expect(take({ type: 'string', minLength: 1 }, '"\\u0041"')).toBe(false); // no \u escapes in constrained strings
    expect(take({ type: 'string' }, '"\\u0041"')).toBe(true);
    expect(take({ type: 'integer', minimum: 18, maximum: 120 }, '18')).toBe(true);
    expect(take({ type: 'integer', minimum: 18, maximum: 120 }, '121')).toBe(false);
    expect(feed(startState(compileSchema({ type: 'integer', minimum: 18, maximum: 120 })), '13')).toBeNull();
    expect(take({ type: 'integer' }, String(Number.MAX_SAFE_INTEGER))).toBe(true);
    expect(take({ type: 'integer' }, '9007199254740992')).toBe(false);
    expect(take({ type: 'number', exclusiveMinimum: 0.1 }, '0.1')).toBe(false);
    expect(take({ type: 'number', exclusiveMinimum: 0.1 }, '0.10000000000000001')).toBe(true);
    expect(cost(startState(compileSchema({ type: 'number', exclusiveMinimum: 0.25, exclusiveMaximum: 0.26 })))).toBe('0.251'.length);
    expect(cost(startState(compileSchema(SCHEMAS.tree)))).toBe('{"v":0}'.length);
  });
});
