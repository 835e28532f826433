// The vocabulary mask: at every step of random constrained generations, `allowed()` (trie walk
// with whole plain-text subtrees taken at once) equals a brute-force check of every token's bytes
// against the automaton and the budget; forced prefix/suffix tokens come in order.

import { byteLevelToBytes, type Tokenizer } from '@apertus/tokenizer';
import { beforeAll, describe, expect, test } from 'vitest';
import { canEnd, compileSchema, cost, startState, step, type JsonState } from './json-grammar';
import { TokenConstraint } from './token-constraint';
import { testTokenizer } from './testing';

let tok: Tokenizer;
const STOP = [68];

beforeAll(() => {
  tok = testTokenizer();
});

/** Every plain token whose bytes continue `s` and leave at most `budget` bytes to finish. */
function bruteForce(s: JsonState, budget: number): number[] {
  const added = new Set(tok.addedTokens.tokens.map((t) => t.id));
  const out: number[] = [];
  for (let id = 0; id < tok.vocabSize; id++) {
    if (added.has(id)) continue;
    const bytes = byteLevelToBytes(tok.idToToken(id)!);
    if (!bytes || bytes.length === 0) continue;
    let x: JsonState | null = s;
    for (const b of bytes) x = x && step(x, b);
    if (x && cost(x) <= budget) out.push(id);
  }
  if (canEnd(s)) out.push(...STOP);
  return out.sort((a, b) => a - b);
}

describe('TokenConstraint', () => {
  test.each([
    ['object', { type: 'object', properties: { name: { type: 'string' }, n: { type: 'integer' }, ok: { type: 'boolean' }, tags: { type: 'array', items: { type: 'string' } } }, required: ['name', 'n'] }],
    ['array', { type: 'array', items: { enum: ['Bern', 'Zurich', 42, null] }, minItems: 1, maxItems: 3 }],
    ['any object', { type: 'object' }],
  ])('allowed() equals the brute-force mask along random generations (%s)', (_name, schema) => {
    const node = compileSchema(schema);
    let seed = 1;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    for (let run = 0; run < 6; run++) {
      const maxTokens = cost(startState(node)) + 1 + Math.floor(rand() * 30);
      const c = new TokenConstraint(tok, tok.vocabSize, { prefix: [], schema: node, suffix: [] }, STOP);
      let s = startState(node);
      const text: number[] = [];
      for (let k = 0; k < maxTokens; k++) {
        const left = maxTokens - k;
        const allowed = [...c.allowed(left)].sort((a, b) => a - b);
        expect(allowed).toEqual(bruteForce(s, left - 2));
        expect(allowed.length).toBeGreaterThan(0);
        const id = allowed[Math.floor(rand() * allowed.length)]!;
        c.accept(id);
        if (STOP.includes(id)) break;
        for (const b of byteLevelToBytes(tok.idToToken(id)!)!) {
          s = step(s, b)!;
          text.push(b);
        }
      }
      expect(canEnd(s)).toBe(true);
      JSON.parse(Buffer.from(text).toString('utf8'));
    }
  });

  test('prefix and suffix tokens are forced in order, then only stop tokens', () => {
    const node = compileSchema({ type: 'array', items: { type: 'integer' }, maxItems: 1 });
    const c = new TokenConstraint(tok, tok.vocabSize, { prefix: [71], schema: node, suffix: [72] }, STOP);
    expect(c.needed()).toBe(1 + 2 + 1 + 1);
    expect(c.allowed(10)).toEqual([71]);
    c.accept(71);
    for (const ch of '[]') c.accept(tok.tokenToId(tok.encode(ch, { addSpecialTokens: false }).tokens[0]!)!);
    expect(c.allowed(10)).toEqual([72]);
    c.accept(72);
    expect(c.allowed(10)).toEqual(STOP);
  });
});
