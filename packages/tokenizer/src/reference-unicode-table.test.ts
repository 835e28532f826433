// The normalization forms against the reference (the Rust crate through its Node bindings) on
// every code point: the table of code points it leaves untouched is complete (our forms agree
// everywhere) and exact (each listed code point assigned in this engine is one where the plain
// String.prototype.normalize disagrees).

import rustTokenizers from 'tokenizers';
import { describe, expect, it } from 'vitest';
import { codePointsOf } from './fixtures.test-helper.js';
import { Normalizer } from './normalizer.js';
import { NEWER, REFERENCE_UNICODE_VERSION, TABLE_UNICODE_VERSION, UNASSIGNED } from './reference-unicode-table.js';

const FORMS = ['NFC', 'NFD', 'NFKC', 'NFKD'] as const;
const reference = {
  NFC: rustTokenizers.nfcNormalizer(),
  NFD: rustTokenizers.nfdNormalizer(),
  NFKC: rustTokenizers.nfkcNormalizer(),
  NFKD: rustTokenizers.nfkdNormalizer(),
};

const chr = (c: number): string => String.fromCodePoint(c);
/** Every code point this engine assigns (but "\n"); the unassigned ones it leaves alone like the reference. */
const assigned: number[] = [];
const unassigned: number[] = [];
for (let c = 0; c <= 0x10ffff; c++) if ((c < 0xd800 || c > 0xdfff) && c !== 0x0a) (/\p{Cn}/u.test(chr(c)) ? unassigned : assigned).push(c);

/** Per code point: between U+0345 (ccc 240) and U+0334 (ccc 1), so any non-zero combining class reorders; and its canonical decomposition, to compose. */
const probes = (cps: readonly number[]): string[] => cps.flatMap((c) => [`\u0345${chr(c)}\u0334`, chr(c).normalize('NFD')]);

/** The probes whose images differ between `normalize` and the reference; probes are joined by "\n", which no mapping produces and nothing combines with. */
function mismatches(inputs: readonly string[], form: (typeof FORMS)[number], normalize: (text: string) => string): string[] {
  const out: string[] = [];
  for (let k = 0; k < inputs.length; k += 1 << 16) {
    const part = inputs.slice(k, k + (1 << 16));
    const ours = normalize(part.join('\n')).split('\n');
    const theirs = reference[form].normalizeString(part.join('\n')).split('\n');
    expect(ours.length).toBe(part.length);
    part.forEach((p, i) => ours[i] !== theirs[i] && out.push(p));
  }
  return out;
}

const hex = (s: string): string => Array.from(s, (c) => c.codePointAt(0)!.toString(16)).join(' ');

describe(`normalization forms as the reference's Unicode ${REFERENCE_UNICODE_VERSION} tables (table from Unicode ${TABLE_UNICODE_VERSION})`, () => {
  const everyProbe = probes(assigned);
  it.each(FORMS)('%s: every assigned code point, its combining class and its composition equal the reference', (form) => {
    const normalizer = Normalizer.fromConfig({ type: form })!;
    const bad = mismatches(everyProbe, form, (t) => normalizer.normalize(t, 0, t.length).text);
    expect(bad.slice(0, 10).map(hex)).toEqual([]);
  }, 300_000);

  it('every listed newer code point this engine knows is one where String.prototype.normalize disagrees', () => {
    const known = codePointsOf(NEWER).filter((c) => !/\p{Cn}/u.test(chr(c)));
    expect(known.length).toBeGreaterThan(300); // Node 20.20 knows all 360 (Unicode 17)
    const differs = new Set<string>();
    for (const form of FORMS) for (const p of mismatches(probes(known), form, (t) => t.normalize(form))) differs.add(p);
    // Through its own probes, or (a new composition's first) through the decomposition of a composite.
    const undetected = known.filter((c) => ![...differs].some((p) => p.includes(chr(c))));
    expect(undetected.map((c) => c.toString(16))).toEqual([]);
  }, 300_000);

  it('lists every code point this engine leaves unassigned (newer engines may assign some: they stay as they are)', () => {
    const listed = new Set(codePointsOf(UNASSIGNED));
    expect(unassigned.filter((c) => !listed.has(c)).map((c) => c.toString(16))).toEqual([]);
  });

  it.each(FORMS)('%s: U+1CCD6 OUTLINED LATIN CAPITAL LETTER A (Unicode 16) stays as it is, as in the reference', (form) => {
    const text = 'x\u{1CCD6}\u0301 \u{1CCD6}';
    const normalizer = Normalizer.fromConfig({ type: form })!;
    const ours = normalizer.normalize(text, 0, text.length);
    expect(reference[form].normalizeString(text)).toBe(text);
    expect(ours).toEqual({ text, start: [0, 1, 2, 3, 4, 5, 6], end: [1, 2, 3, 4, 5, 6, 7] });
    if (form.startsWith('NFK')) expect(text.normalize(form)).not.toBe(text); // the engine (Unicode 16 or later) maps it to "A"
  });
});
