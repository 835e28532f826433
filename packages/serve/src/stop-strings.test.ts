import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { StopMatcher } from './stop-strings';

/**
 * Reference semantics, written independently of the matcher: generation stops after the first
 * piece whose arrival makes the text contain a stop string; the output is that text cut at the
 * earliest occurrence of any stop string in it.
 */
function reference(pieces: string[], stops: string[]): { text: string; matched: boolean } {
  let text = '';
  for (const p of pieces) {
    text += p;
    let cut = -1;
    for (const s of stops) {
      const i = text.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) return { text: text.slice(0, cut), matched: true };
  }
  return { text, matched: false };
}

function run(pieces: string[], stops: string[]): { text: string; matched: boolean; early: boolean } {
  const m = new StopMatcher(stops);
  let out = '';
  let early = false;
  for (const p of pieces) {
    out += m.push(p);
    // Whatever was released must be final: it is a prefix of the reference output.
    if (!reference(pieces, stops).text.startsWith(out)) early = true;
  }
  out += m.flush();
  return { text: out, matched: m.matched !== null, early };
}

describe('StopMatcher', () => {
  test('cuts before a stop string split across pieces', () => {
    const m = new StopMatcher(['</end>']);
    expect(m.push('Hello </')).toBe('Hello ');
    expect(m.push('en')).toBe('');
    expect(m.push('d> tail')).toBe('');
    expect(m.matched).toBe('</end>');
    expect(m.flush()).toBe('');
  });

  test('releases held text once it cannot start a match', () => {
    const m = new StopMatcher(['abc']);
    expect(m.push('xab')).toBe('x');
    expect(m.push('x')).toBe('abx');
    expect(m.push('a')).toBe('');
    expect(m.flush()).toBe('a');
    expect(m.matched).toBeNull();
  });

  test('matches the reference for random texts, stop strings and piece boundaries', () => {
    const alphabet = fc.constantFrom('a', 'b', 'c', 'ü', '\n', ' ');
    const word = fc.array(alphabet, { minLength: 1, maxLength: 4 }).map((a) => a.join(''));
    fc.assert(
      fc.property(fc.array(fc.array(alphabet, { maxLength: 5 }).map((a) => a.join('')), { maxLength: 12 }), fc.array(word, { maxLength: 3 }), (pieces, stops) => {
        const got = run(pieces, stops);
        const want = reference(pieces, stops);
        expect(got.text).toBe(want.text);
        expect(got.matched).toBe(want.matched);
        expect(got.early).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });
});
