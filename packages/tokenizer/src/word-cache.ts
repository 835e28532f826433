// Cache of BPE results per pre-token, looked up by a range of the input text.
//
// Looking up by range means a cache hit costs one hash over the characters and one comparison:
// no substring is created. Keys are stored as strings (with a leading ' ' when the pre-token
// carries the ByteLevel prefix space); the token ids live in one growable Int32Array pool.
// When the table is full, new words are simply not cached (the reference does the same).

const SEED = 0x811c9dc5 | 0;
const SPACE_HASH = Math.imul(SEED ^ 0x20, 0x01000193);

/** Open-addressing map from pre-token text to its token ids. */
export class WordCache {
  private keys: (string | undefined)[];
  private starts: Int32Array;
  private lengths: Int32Array;
  private mask: number;
  private pool: Int32Array;
  private used = 0;
  private count = 0;
  /** Maximum number of cached words. */
  readonly capacity: number;

  constructor(capacity: number) {
    this.capacity = Math.max(0, capacity);
    let slots = 16;
    while (slots < this.capacity * 2) slots *= 2;
    this.keys = new Array<string | undefined>(slots);
    this.starts = new Int32Array(slots);
    this.lengths = new Int32Array(slots);
    this.mask = slots - 1;
    this.pool = new Int32Array(1 << 16);
  }

  /** Number of cached words. */
  get size(): number {
    return this.count;
  }

  /** Forget everything. */
  clear(): void {
    this.keys = new Array<string | undefined>(this.keys.length);
    this.used = 0;
    this.count = 0;
  }

  private static hash(text: string, start: number, end: number, prefixed: number): number {
    let h = prefixed === 1 ? SPACE_HASH : SEED;
    for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    return h ^ (h >>> 13);
  }

  /** Slot holding `(prefixed ? ' ' : '') + text[start, end)`, or the empty slot where it would go (as ~slot). */
  private find(text: string, start: number, end: number, prefixed: number): number {
    const keys = this.keys;
    const len = end - start + prefixed;
    let i = WordCache.hash(text, start, end, prefixed) & this.mask;
    for (;;) {
      const key = keys[i];
      if (key === undefined) return ~i;
      if (key.length === len && (prefixed === 0 || key.charCodeAt(0) === 0x20)) {
        let j = prefixed;
        let p = start;
        while (p < end && key.charCodeAt(j) === text.charCodeAt(p)) {
          p++;
          j++;
        }
        if (p === end) return i;
      }
      i = (i + 1) & this.mask;
    }
  }

  /** Append the cached ids of the pre-token to `out`; false when not cached. */
  get(text: string, start: number, end: number, prefixed: number, out: number[]): boolean {
    if (this.count === 0) return false;
    const slot = this.find(text, start, end, prefixed);
    if (slot < 0) return false;
    const s = this.starts[slot]!;
    const n = this.lengths[slot]!;
    const pool = this.pool;
    for (let k = s; k < s + n; k++) out.push(pool[k]!);
    return true;
  }

  /** Cache `ids[0, n)` for the pre-token (no-op when full or already cached). */
  set(text: string, start: number, end: number, prefixed: number, ids: ArrayLike<number>, n: number): void {
    if (this.count >= this.capacity) return;
    const slot = this.find(text, start, end, prefixed);
    if (slot >= 0) return;
    const i = ~slot;
    if (this.used + n > this.pool.length) {
      let cap = this.pool.length * 2;
      while (cap < this.used + n) cap *= 2;
      const pool = new Int32Array(cap);
      pool.set(this.pool.subarray(0, this.used));
      this.pool = pool;
    }
    for (let k = 0; k < n; k++) this.pool[this.used + k] = ids[k]!;
    this.keys[i] = prefixed === 1 ? ` ${text.slice(start, end)}` : text.slice(start, end);
    this.starts[i] = this.used;
    this.lengths[i] = n;
    this.used += n;
    this.count++;
  }
}
