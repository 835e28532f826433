// Patterns: the automaton accepts exactly the strings JavaScript's RegExp (with the `u` flag, as
// ajv compiles `pattern`) finds a match in, over random strings of the pattern's alphabet.

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Pattern, PatternError } from './json-regex';

const PATTERNS = [
  '^[A-Z]{2}-\\d{3}$', 'ab+c', '^a|b$', '^(ab|c)*$', '^x?y{2,3}z{0,}$', '\\s\\S', '^[^a-c]+$', '^.{2}$',
  '^(?:\\w+)@(?<host>\\w+)\\.ch$', '[-.]', '^\\x41\\u0042\\u{43}$', '^[α-ω]+ü?$', '^$', '', '^\\d+(\\.\\d+)?$', 'a{2}b',
];

function run(p: Pattern, s: string): boolean {
  let states: readonly number[] = p.start;
  let len = 0;
  for (const ch of s) {
    states = p.step(states, ch.codePointAt(0)!);
    len++;
    if (states.length === 0) return false;
  }
  return p.accepts(states, len);
}

describe('json-regex', () => {
  test.each(PATTERNS)('matches as RegExp does: %s', (source) => {
    const p = new Pattern(source);
    const re = new RegExp(source, 'u');
    const alphabet = [...new Set([...source.replace(/\\[dswDSWxu]/g, ''), 'a', 'b', 'c', 'x', 'y', 'z', 'A', 'Z', '1', '5', '-', '.', '@', ' ', '\n', 'α', 'ω', 'ü', 'B', 'C'])];
    fc.assert(fc.property(fc.array(fc.constantFrom(...alphabet), { maxLength: 8 }), (chars) => {
      const s = chars.join('');
      expect([s, run(p, s)]).toEqual([s, re.test(s)]);
    }), { numRuns: 300 });
  });

  test('unsupported syntax is a PatternError', () => {
    for (const bad of ['(?=a)', '(?!a)', '(?<=a)b', '(a)\\1', '\\bword', 'a{3,2}', '(a', 'a)', '[a', '*a', 'a{1001}']) expect(() => new Pattern(bad), bad).toThrow(PatternError);
  });
});
