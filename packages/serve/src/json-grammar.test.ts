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
};

const ajv = new Ajv({ strict: false });
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
      [{ type: 'string', pattern: '^a' }, 'schema.pattern'],
      [{ type: 'object', properties: { a: { type: 'string', format: 'email' } } }, 'schema.properties.a.format'],
      [{ anyOf: [{ type: 'string' }, { type: 'number' }] }, 'schema.anyOf'],
      [{ $ref: '#/$defs/x' }, 'schema.$ref'],
      [{ type: 'object', properties: {}, required: ['a'] }, 'schema.required'],
      [{ type: 'object', additionalProperties: { type: 'string' } }, 'schema.additionalProperties'],
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
      expect(e).toBeInstanceOf(SchemaError);
      expect([path, (e as SchemaError).path]).toEqual([path, path]);
    }
  });
});
