// Byte-level BPE model (HF `tokenizers` model type "BPE").
//
// A pre-token is UTF-8 encoded; each byte starts as its own symbol (the vocab entry of its
// byte-level character, see byte-level.ts); then, repeatedly, the adjacent pair with the lowest
// merge rank is merged (leftmost first on ties) until no pair has a merge. Same result as the
// reference's priority queue; here short words use a linear scan over a compact array and long
// words a binary heap. Merges are looked up in an open-addressing hash table keyed by the pair of
// integer ids (no strings in the merge loop). Results are cached per pre-token string.

import { BYTE_TO_CHAR } from './byte-level.js';
import { TokenizerError } from './errors.js';
import { StringTable } from './string-table.js';
import { WordCache } from './word-cache.js';

/** `tokenizer.json` `model` object of type BPE. */
export interface BpeModelConfig {
  /** Must be `"BPE"`. */
  type: 'BPE';
  /** Token string -> id. */
  vocab: Record<string, number>;
  /** Merge list in rank order: `"a b"` strings or `["a", "b"]` pairs. */
  merges: (string | [string, string])[];
  /** Unknown-token string used for bytes missing from the vocab (or null: drop them). */
  unk_token?: string | null;
  /** Fuse consecutive unknown tokens into one. */
  fuse_unk?: boolean;
  /** Use `<0xXX>` tokens for bytes missing from the vocab. */
  byte_fallback?: boolean;
  /** Emit a pre-token whole when it is itself a vocab entry, before any merge. */
  ignore_merges?: boolean;
  /** Must be null or 0 (BPE dropout is random; not supported). */
  dropout?: number | null;
  /** Must be null or "" (not used by byte-level BPE). */
  continuing_subword_prefix?: string | null;
  /** Must be null or "" (not used by byte-level BPE). */
  end_of_word_suffix?: string | null;
}

const EMPTY = -1;
/** Words up to this many bytes use the linear scan; longer ones the heap. */
const LINEAR_MAX = 48;

/** Hash of an id pair for the merge table. */
function pairHash(a: number, b: number): number {
  let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b ^ 0x7f4a7c15, 0x85ebca6b);
  h ^= h >>> 15;
  return Math.imul(h, 0x2c1b3c6d) ^ (h >>> 12);
}

/**
 * Open-addressing map (left id, right id) -> (rank, merged id). The four fields of a slot sit
 * next to each other in one Int32Array (`data[4 * slot + 0..3]`), so a probe touches one cache line.
 */
class PairTable {
  readonly data: Int32Array;
  readonly mask: number;

  constructor(count: number) {
    let cap = 16;
    while (cap < count * 2) cap *= 2;
    this.data = new Int32Array(cap * 4).fill(EMPTY);
    this.mask = cap - 1;
  }

  /** Insert or overwrite (a later duplicate merge wins, as in the reference's HashMap build). */
  set(a: number, b: number, rank: number, merged: number): void {
    const data = this.data;
    let i = pairHash(a, b) & this.mask;
    for (;;) {
      const l = data[4 * i]!;
      if (l === EMPTY || (l === a && data[4 * i + 1] === b)) break;
      i = (i + 1) & this.mask;
    }
    data[4 * i] = a;
    data[4 * i + 1] = b;
    data[4 * i + 2] = rank;
    data[4 * i + 3] = merged;
  }

  /** Data index (4 * slot) of pair (a, b), or -1. Rank at `+2`, merged id at `+3`. */
  find(a: number, b: number): number {
    const data = this.data;
    const mask = this.mask;
    let i = pairHash(a, b) & mask;
    for (;;) {
      const k = 4 * i;
      const l = data[k]!;
      if (l === a && data[k + 1] === b) return k;
      if (l === EMPTY) return -1;
      i = (i + 1) & mask;
    }
  }
}

function mergeError(missing: string | null, merged: string, field: string): TokenizerError {
  return missing !== null
    ? new TokenizerError('MergeOutOfVocabulary', `merge references unknown token ${JSON.stringify(missing)}`, { field })
    : new TokenizerError('MergeOutOfVocabulary', `merged token ${JSON.stringify(merged)} is not in the vocabulary`, { field });
}

/**
 * The BPE model of a byte-level tokenizer. Encodes one pre-token (as UTF-8 bytes) at a time.
 * Build it with {@link BpeModel.fromConfig}.
 */
export class BpeModel {
  /** Token string -> id (model vocab only, without added tokens). */
  readonly strings: StringTable;
  /** The merges as given in tokenizer.json (validated): `"a b"` strings or `["a", "b"]` pairs. */
  private readonly rawMerges: readonly (string | readonly [string, string])[];
  /** Emit a pre-token whole when it is itself a vocab entry. */
  readonly ignoreMerges: boolean;
  /** Id of the unknown token, or -1. */
  readonly unkId: number;
  /** Fuse consecutive unknown tokens. */
  readonly fuseUnk: boolean;
  /** Use `<0xXX>` tokens for bytes missing from the vocab. */
  readonly byteFallback: boolean;
  /** Unknown-token string (or null). */
  readonly unkToken: string | null;

  private readonly table: PairTable;
  /** Id of the single-byte token of each byte (-1 when missing). */
  private readonly byteIds: Int32Array;
  /** Id of the `<0xXX>` token of each byte (-1 when missing). */
  private readonly fallbackIds: Int32Array;
  private readonly cache: WordCache;

  // Scratch buffers for the merge loop (grown on demand).
  private ids = new Int32Array(256);
  private lens = new Int32Array(256);
  private slots = new Int32Array(256);
  private prev = new Int32Array(256);
  private next = new Int32Array(256);
  private heap = new Float64Array(1024);
  /** Set by initSymbols when a byte was not a plain byte token (fallback, unknown or dropped). */
  private lossy = false;

  private constructor(
    vocab: StringTable,
    merges: (string | [string, string])[],
    table: PairTable,
    options: { ignoreMerges: boolean; unkToken: string | null; fuseUnk: boolean; byteFallback: boolean; cacheCapacity: number },
  ) {
    this.strings = vocab;
    this.rawMerges = merges;
    this.table = table;
    this.ignoreMerges = options.ignoreMerges;
    this.unkToken = options.unkToken;
    this.unkId = options.unkToken !== null ? vocab.get(options.unkToken) : -1;
    this.fuseUnk = options.fuseUnk;
    this.byteFallback = options.byteFallback;
    this.cache = new WordCache(options.cacheCapacity);
    this.byteIds = new Int32Array(256);
    this.fallbackIds = new Int32Array(256);
    for (let b = 0; b < 256; b++) {
      this.byteIds[b] = vocab.get(BYTE_TO_CHAR[b]!);
      this.fallbackIds[b] = vocab.get(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    }
  }

  /**
   * Build from the `model` field of tokenizer.json. Validates every merge (both tokens and their
   * concatenation must be in the vocab) and throws {@link TokenizerError} naming the field.
   */
  static fromConfig(config: unknown, options: { field?: string; cacheCapacity?: number } = {}): BpeModel {
    const field = options.field ?? 'model';
    if (config === null || typeof config !== 'object' || Array.isArray(config)) {
      throw new TokenizerError('InvalidField', 'expected a model object', { field });
    }
    const c = config as Record<string, unknown>;
    if (c.type !== undefined && c.type !== 'BPE') {
      throw new TokenizerError('UnsupportedComponent', `model type ${JSON.stringify(c.type)} is not supported (supported: BPE)`, {
        field: `${field}.type`,
      });
    }
    if (c.vocab === null || typeof c.vocab !== 'object' || Array.isArray(c.vocab)) {
      throw new TokenizerError('InvalidField', 'expected an object mapping token -> id', { field: `${field}.vocab` });
    }
    const rawVocab = c.vocab as Record<string, unknown>;
    let count = 0;
    for (const token in rawVocab) if (Object.prototype.hasOwnProperty.call(rawVocab, token)) count++;
    const vocab = new StringTable(count);
    for (const token in rawVocab) {
      if (!Object.prototype.hasOwnProperty.call(rawVocab, token)) continue;
      const id = rawVocab[token];
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0x7fffffff) {
        throw new TokenizerError('InvalidField', `id of token ${JSON.stringify(token)} must be a non-negative integer, got ${JSON.stringify(id)}`, {
          field: `${field}.vocab`,
        });
      }
      vocab.add(token, id);
    }
    const bool = (name: string, dflt: boolean): boolean => {
      const v = c[name] ?? dflt;
      if (typeof v !== 'boolean') throw new TokenizerError('InvalidField', 'expected a boolean', { field: `${field}.${name}` });
      return v;
    };
    const dropout = c.dropout ?? null;
    if (dropout !== null && dropout !== 0) {
      throw new TokenizerError('UnsupportedComponent', 'BPE dropout is not supported (it makes encoding random)', {
        field: `${field}.dropout`,
      });
    }
    for (const name of ['continuing_subword_prefix', 'end_of_word_suffix']) {
      const v = c[name] ?? null;
      if (v !== null && v !== '') {
        throw new TokenizerError('UnsupportedComponent', `BPE ${name} ${JSON.stringify(v)} is not supported by this byte-level implementation`, {
          field: `${field}.${name}`,
        });
      }
    }
    const unk = c.unk_token ?? null;
    if (unk !== null && typeof unk !== 'string') {
      throw new TokenizerError('InvalidField', 'expected a string or null', { field: `${field}.unk_token` });
    }
    if (!Array.isArray(c.merges)) {
      throw new TokenizerError('InvalidField', 'expected an array of merges', { field: `${field}.merges` });
    }
    const rawMerges = c.merges as unknown[];
    const table = new PairTable(rawMerges.length);
    for (let r = 0; r < rawMerges.length; r++) {
      const m = rawMerges[r];
      let ia: number;
      let ib: number;
      let im: number;
      if (typeof m === 'string') {
        const sp = m.indexOf(' ');
        if (sp < 0 || m.indexOf(' ', sp + 1) >= 0) {
          throw new TokenizerError('InvalidField', `merge ${JSON.stringify(m)} must be two tokens separated by one space`, {
            field: `${field}.merges[${r}]`,
          });
        }
        ia = vocab.getRange(m, 0, sp);
        ib = vocab.getRange(m, sp + 1, m.length);
        im = vocab.getConcat(m, 0, sp, sp + 1, m.length);
        if (ia < 0 || ib < 0 || im < 0) {
          const a = m.slice(0, sp);
          const b = m.slice(sp + 1);
          throw mergeError(ia < 0 ? a : ib < 0 ? b : null, a + b, `${field}.merges[${r}]`);
        }
      } else if (Array.isArray(m) && m.length === 2 && typeof m[0] === 'string' && typeof m[1] === 'string') {
        const [a, b] = m as [string, string];
        ia = vocab.get(a);
        ib = vocab.get(b);
        im = vocab.get(a + b);
        if (ia < 0 || ib < 0 || im < 0) throw mergeError(ia < 0 ? a : ib < 0 ? b : null, a + b, `${field}.merges[${r}]`);
      } else {
        throw new TokenizerError('InvalidField', 'merge must be "a b" or ["a", "b"]', { field: `${field}.merges[${r}]` });
      }
      table.set(ia, ib, r, im);
    }
    return new BpeModel(vocab, rawMerges as (string | [string, string])[], table, {
      ignoreMerges: bool('ignore_merges', false),
      unkToken: unk as string | null,
      fuseUnk: bool('fuse_unk', false),
      byteFallback: bool('byte_fallback', false),
      cacheCapacity: options.cacheCapacity ?? 262_144,
    });
  }

  /** Id of a token string in the model vocab, or undefined. */
  tokenToId(token: string): number | undefined {
    const id = this.strings.get(token);
    return id >= 0 ? id : undefined;
  }

  /** Token string -> id (model vocab only, without added tokens), as a new Map. */
  get vocab(): Map<string, number> {
    const m = new Map<string, number>();
    this.strings.keys.forEach((k, i) => m.set(k, this.strings.values[i]!));
    return m;
  }

  /** The merges in rank order, as token-string pairs. */
  get merges(): [string, string][] {
    return this.rawMerges.map((m): [string, string] => {
      if (typeof m !== 'string') return [m[0], m[1]];
      const sp = m.indexOf(' ');
      return [m.slice(0, sp), m.slice(sp + 1)];
    });
  }

  /** Number of merges. */
  get mergeCount(): number {
    return this.rawMerges.length;
  }

  /** The `tokenizer.json` form of this model. */
  toConfig(): BpeModelConfig {
    const vocab: Record<string, number> = {};
    const order = this.strings.keys.map((_, k) => k).sort((x, y) => this.strings.values[x]! - this.strings.values[y]!);
    for (const k of order) vocab[this.strings.keys[k]!] = this.strings.values[k]!;
    return {
      type: 'BPE',
      dropout: null,
      unk_token: this.unkToken,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: this.fuseUnk,
      byte_fallback: this.byteFallback,
      ignore_merges: this.ignoreMerges,
      vocab,
      merges: this.merges.map(([a, b]) => [a, b]),
    };
  }

  /** Drop all cached pre-token encodings. */
  clearCache(): void {
    this.cache.clear();
  }

  /**
   * If the pre-token `(prefixed ? ' ' : '') + text[start, end)` is cached, append its ids to
   * `out` and return true.
   */
  encodeCached(text: string, start: number, end: number, prefixed: number, out: number[]): boolean {
    return this.cache.get(text, start, end, prefixed, out);
  }

  /**
   * Encode one pre-token: `(prefixed ? ' ' : '') + text[start, end)`, whose UTF-8 bytes are
   * `bytes[0, n)`. Appends ids to `out`, and when `lens` is given, the number of bytes each token
   * covers. Uses and fills the cache.
   */
  encodeWord(text: string, start: number, end: number, prefixed: number, bytes: Uint8Array, n: number, out: number[], lens: number[] | null): void {
    const first = out.length;
    if (this.cache.get(text, start, end, prefixed, out)) {
      if (lens !== null) for (let i = first; i < out.length; i++) lens.push(this.byteLength(out[i]!));
      return;
    }
    if (this.ignoreMerges && n > 1) {
      const whole = this.strings.getByteLevel(bytes, n);
      if (whole >= 0) {
        out.push(whole);
        if (lens !== null) lens.push(n);
        this.ids[0] = whole;
        this.cache.set(text, start, end, prefixed, this.ids, 1);
        return;
      }
    }
    const count = this.mergeBytes(bytes, n);
    const ids = this.ids;
    for (let i = 0; i < count; i++) out.push(ids[i]!);
    if (lens !== null) for (let i = 0; i < count; i++) lens.push(this.lens[i]!);
    if (!this.lossy) this.cache.set(text, start, end, prefixed, ids, count);
  }

  private byteLen: Int32Array | null = null;

  /** Number of bytes token `id` stands for (its byte-level string length). */
  private byteLength(id: number): number {
    if (this.byteLen === null) {
      let max = 0;
      for (const v of this.strings.values) if (v > max) max = v;
      const t = new Int32Array(max + 1);
      const keys = this.strings.keys;
      for (let k = 0; k < keys.length; k++) t[this.strings.values[k]!] = keys[k]!.length;
      this.byteLen = t;
    }
    return this.byteLen[id]!;
  }

  private grow(n: number): void {
    let cap = this.ids.length;
    while (cap < n) cap *= 2;
    this.ids = new Int32Array(cap);
    this.lens = new Int32Array(cap);
    this.slots = new Int32Array(cap);
    this.prev = new Int32Array(cap);
    this.next = new Int32Array(cap);
    this.heap = new Float64Array(cap * 4); // at most 3 pushes per symbol
  }

  /**
   * Initial symbols for `bytes[0, n)` into `this.ids`/`this.lens` (one per byte; bytes missing from
   * the vocab become byte-fallback tokens, the unknown token, or are dropped). Returns the count.
   */
  private initSymbols(bytes: Uint8Array, n: number): number {
    const ids = this.ids;
    const lens = this.lens;
    const byteIds = this.byteIds;
    let count = 0;
    this.lossy = false;
    for (let i = 0; i < n; i++) {
      const id = byteIds[bytes[i]!]!;
      if (id >= 0) {
        ids[count] = id;
        lens[count++] = 1;
        continue;
      }
      this.lossy = true;
      if (this.byteFallback && this.fallbackIds[bytes[i]!]! >= 0) {
        ids[count] = this.fallbackIds[bytes[i]!]!;
        lens[count++] = 1;
        continue;
      }
      if (this.unkId >= 0) {
        if (this.fuseUnk && count > 0 && ids[count - 1] === this.unkId) {
          lens[count - 1]!++;
        } else {
          ids[count] = this.unkId;
          lens[count++] = 1;
        }
        continue;
      }
      // No unknown token: the byte is dropped (the reference does the same); its length is
      // attributed to the previous symbol so offsets stay contiguous.
      if (count > 0) lens[count - 1]!++;
    }
    return count;
  }

  /** Run BPE merges over the bytes; the result is in `this.ids[0, count)` / `this.lens`. */
  private mergeBytes(bytes: Uint8Array, n: number): number {
    if (n > this.ids.length) this.grow(n);
    const count = this.initSymbols(bytes, n);
    if (count < 2) return count;
    return count <= LINEAR_MAX ? this.mergeLinear(count) : this.mergeHeap(count);
  }

  /** Merge loop for short words: compact arrays, pick the lowest (rank, position) each round. */
  private mergeLinear(n: number): number {
    const ids = this.ids;
    const lens = this.lens;
    const slots = this.slots;
    const table = this.table;
    const data = table.data;
    for (let i = 0; i + 1 < n; i++) slots[i] = table.find(ids[i]!, ids[i + 1]!);
    for (;;) {
      let best = -1;
      let bestRank = 0x7fffffff;
      for (let i = 0; i + 1 < n; i++) {
        const s = slots[i]!;
        if (s >= 0) {
          const r = data[s + 2]!;
          if (r < bestRank) {
            bestRank = r;
            best = i;
          }
        }
      }
      if (best < 0) return n;
      ids[best] = data[slots[best]! + 3]!;
      lens[best] = lens[best]! + lens[best + 1]!;
      // Remove symbol best+1 (and pair slot best+1, which started at it).
      for (let i = best + 1; i + 1 < n; i++) {
        ids[i] = ids[i + 1]!;
        lens[i] = lens[i + 1]!;
        slots[i] = slots[i + 1]!;
      }
      n--;
      if (best + 1 < n) slots[best] = table.find(ids[best]!, ids[best + 1]!);
      if (best > 0) slots[best - 1] = table.find(ids[best - 1]!, ids[best]!);
    }
  }

  /**
   * Merge loop for long words: doubly linked symbols and a binary min-heap of candidate merges
   * keyed by rank * 2^26 + position (stale entries are skipped when popped).
   */
  private mergeHeap(n: number): number {
    if (n >= 1 << 26) {
      throw new TokenizerError('InvalidField', `pre-token of ${n} bytes is too long to encode`);
    }
    const ids = this.ids;
    const lens = this.lens;
    const prev = this.prev;
    const next = this.next;
    const table = this.table;
    const heap = this.heap;
    const SHIFT = 67108864; // 2^26
    let size = 0;
    const push = (key: number): void => {
      let i = size++;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (heap[p]! <= key) break;
        heap[i] = heap[p]!;
        i = p;
      }
      heap[i] = key;
    };
    const pop = (): number => {
      const top = heap[0]!;
      const last = heap[--size]!;
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= size) break;
        if (c + 1 < size && heap[c + 1]! < heap[c]!) c++;
        if (heap[c]! >= last) break;
        heap[i] = heap[c]!;
        i = c;
      }
      heap[i] = last;
      return top;
    };
    for (let i = 0; i < n; i++) {
      prev[i] = i - 1;
      next[i] = i + 1 < n ? i + 1 : -1;
    }
    for (let i = 0; i + 1 < n; i++) {
      const s = table.find(ids[i]!, ids[i + 1]!);
      if (s >= 0) push(table.data[s + 2]! * SHIFT + i);
    }
    while (size > 0) {
      const key = pop();
      const r = Math.floor(key / SHIFT);
      const pos = key - r * SHIFT;
      if (lens[pos] === 0) continue; // removed
      const right = next[pos]!;
      if (right < 0) continue;
      const s = table.find(ids[pos]!, ids[right]!);
      if (s < 0 || table.data[s + 2] !== r) continue; // stale
      ids[pos] = table.data[s + 3]!;
      lens[pos] = lens[pos]! + lens[right]!;
      lens[right] = 0;
      const after = next[right]!;
      next[pos] = after;
      if (after >= 0) prev[after] = pos;
      const before = prev[pos]!;
      if (before >= 0) {
        const sp = table.find(ids[before]!, ids[pos]!);
        if (sp >= 0) push(table.data[sp + 2]! * SHIFT + before);
      }
      if (after >= 0) {
        const sn = table.find(ids[pos]!, ids[after]!);
        if (sn >= 0) push(table.data[sn + 2]! * SHIFT + pos);
      }
    }
    let count = 0;
    for (let i = 0; i >= 0; i = next[i]!) {
      ids[count] = ids[i]!;
      lens[count++] = lens[i]!;
    }
    return count;
  }

  /** For tests: force the heap (or linear) merge loop on a byte string, bypassing cache and ignore_merges. */
  mergeForTest(bytes: Uint8Array, mode: 'linear' | 'heap'): number[] {
    if (bytes.length > this.ids.length) this.grow(bytes.length);
    const count = this.initSymbols(bytes, bytes.length);
    const m = count < 2 ? count : mode === 'linear' ? this.mergeLinear(count) : this.mergeHeap(count);
    return Array.from(this.ids.subarray(0, m));
  }
}
