// Open-addressing hash table from token strings to ids, with lookups by substring.
//
// Loading a 131k-entry vocabulary with ~300k merges means ~1M lookups of tokens that appear as
// parts of merge strings ("a b" -> a, b, ab). Looking them up by range avoids creating a
// substring (and V8 hashing it) for every lookup.

import { BYTE_TO_CHAR } from './byte-level.js';

/** FNV-1a over UTF-16 code units, continued from `h`. */
function fnv(h: number, s: string, start: number, end: number): number {
  for (let i = start; i < end; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}

function finish(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  return h ^ (h >>> 13);
}

const SEED = 0x811c9dc5 | 0;

/** UTF-16 code of each byte's byte-level character. */
const BYTE_CODES = Uint16Array.from(BYTE_TO_CHAR, (c) => c.charCodeAt(0));

/** String -> non-negative integer map (first insertion of a key wins). */
export class StringTable {
  /** Keys in insertion order. */
  readonly keys: string[] = [];
  /** Value of each key, parallel to `keys`. */
  readonly values: number[] = [];
  private slots: Int32Array;
  private mask: number;

  constructor(expected = 16) {
    let cap = 16;
    while (cap < expected * 2) cap *= 2;
    this.slots = new Int32Array(cap).fill(-1);
    this.mask = cap - 1;
  }

  /** Number of keys. */
  get size(): number {
    return this.keys.length;
  }

  /** Insert `key -> value`; returns false (and changes nothing) if the key exists. */
  add(key: string, value: number): boolean {
    if (this.keys.length * 2 >= this.slots.length) this.rehash();
    let i = finish(fnv(SEED, key, 0, key.length)) & this.mask;
    for (;;) {
      const k = this.slots[i]!;
      if (k < 0) break;
      if (this.keys[k] === key) return false;
      i = (i + 1) & this.mask;
    }
    this.slots[i] = this.keys.length;
    this.keys.push(key);
    this.values.push(value);
    return true;
  }

  /** Value of `key`, or -1. */
  get(key: string): number {
    return this.getRange(key, 0, key.length);
  }

  /** Value of the key `s.slice(start, end)`, or -1 (no substring is created). */
  getRange(s: string, start: number, end: number): number {
    return this.lookup(finish(fnv(SEED, s, start, end)), s, start, end, end, end);
  }

  /** Value of the key `s.slice(s1, e1) + s.slice(s2, e2)`, or -1. */
  getConcat(s: string, s1: number, e1: number, s2: number, e2: number): number {
    return this.lookup(finish(fnv(fnv(SEED, s, s1, e1), s, s2, e2)), s, s1, e1, s2, e2);
  }

  /** Value of the byte-level string of `bytes[0, n)` (each byte as its table character), or -1. */
  getByteLevel(bytes: Uint8Array, n: number): number {
    const chars = BYTE_CODES;
    let h = SEED;
    for (let i = 0; i < n; i++) h = Math.imul(h ^ chars[bytes[i]!]!, 0x01000193);
    const keys = this.keys;
    let i = finish(h) & this.mask;
    for (;;) {
      const k = this.slots[i]!;
      if (k < 0) return -1;
      const key = keys[k]!;
      if (key.length === n) {
        let j = 0;
        while (j < n && key.charCodeAt(j) === chars[bytes[j]!]) j++;
        if (j === n) return this.values[k]!;
      }
      i = (i + 1) & this.mask;
    }
  }

  private lookup(hash: number, s: string, s1: number, e1: number, s2: number, e2: number): number {
    const len = e1 - s1 + (e2 - s2);
    const keys = this.keys;
    let i = hash & this.mask;
    for (;;) {
      const k = this.slots[i]!;
      if (k < 0) return -1;
      const key = keys[k]!;
      if (key.length === len) {
        let j = 0;
        let p = s1;
        for (; p < e1; p++, j++) if (key.charCodeAt(j) !== s.charCodeAt(p)) break;
        if (p === e1) {
          p = s2;
          for (; p < e2; p++, j++) if (key.charCodeAt(j) !== s.charCodeAt(p)) break;
          if (p === e2) return this.values[k]!;
        }
      }
      i = (i + 1) & this.mask;
    }
  }

  private rehash(): void {
    const cap = this.slots.length * 2;
    this.slots = new Int32Array(cap).fill(-1);
    this.mask = cap - 1;
    const keys = this.keys;
    for (let k = 0; k < keys.length; k++) {
      let i = finish(fnv(SEED, keys[k]!, 0, keys[k]!.length)) & this.mask;
      while (this.slots[i]! >= 0) i = (i + 1) & this.mask;
      this.slots[i] = k;
    }
  }
}
