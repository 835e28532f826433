// UTF-8 helpers and the byte table, checked against TextEncoder / TextDecoder.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BYTE_TO_CHAR, byteLevelToBytes, bytesToByteLevel, charToByte, utf8Encode } from './byte-level.js';
import { StringTable } from './string-table.js';

describe('utf8Encode', () => {
  it('equals TextEncoder (lone surrogates -> U+FFFD) and maps each byte to its character', () => {
    const encoder = new TextEncoder();
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 50 }), (s) => {
        const out = new Uint8Array(3 * s.length);
        const charOf = new Int32Array(3 * s.length);
        const n = utf8Encode(s, 0, s.length, out, charOf);
        expect(out.subarray(0, n)).toEqual(encoder.encode(s));
        // Bytes of one character point at that character, in order.
        for (let k = 0; k < n; k++) {
          const i = charOf[k]!;
          const c = s.codePointAt(i)!;
          const well = c <= 0xffff ? (c >= 0xd800 && c <= 0xdfff ? '\ufffd' : s[i]!) : String.fromCodePoint(c);
          expect(encoder.encode(well)).toContain(out[k]);
        }
      }),
      { numRuns: 200, seed: 1 },
    );
  });
});

describe('byte table', () => {
  it('is a bijection between bytes and 256 printable characters', () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, b) => b);
    const s = bytesToByteLevel(bytes);
    expect(s).toHaveLength(256);
    expect(byteLevelToBytes(s)).toEqual(bytes);
    for (let b = 0; b < 256; b++) expect(charToByte(BYTE_TO_CHAR[b]!.charCodeAt(0))).toBe(b);
    expect(byteLevelToBytes('a b')).toBeNull(); // a real space is not in the table
    expect(charToByte(0x20)).toBe(-1);
  });
});

describe('StringTable', () => {
  it('finds keys by string, range and concatenation like a Map', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ maxLength: 6 }), { maxLength: 200 }), fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), (keys, x, y) => {
        const t = new StringTable(4);
        const m = new Map<string, number>();
        keys.forEach((k, i) => {
          expect(t.add(k, i)).toBe(true);
          m.set(k, i);
        });
        if (keys.length > 0) expect(t.add(keys[0]!, 99)).toBe(false);
        expect(t.get(x)).toBe(m.get(x) ?? -1);
        const s = `${x} ${y}`;
        expect(t.getRange(s, 0, x.length)).toBe(m.get(x) ?? -1);
        expect(t.getConcat(s, 0, x.length, x.length + 1, s.length)).toBe(m.get(x + y) ?? -1);
        expect(t.size).toBe(keys.length);
      }),
      { numRuns: 300, seed: 6 },
    );
  });
});
