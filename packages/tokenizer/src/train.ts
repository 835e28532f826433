// Byte-level BPE training with the Apertus pre-tokenizer and id layout.
//
//  1. Split each text on the Apertus added tokens (they are never learned), pre-tokenize the rest
//     with the Apertus regex and count distinct pre-tokens ("words").
//  2. Each word starts as its UTF-8 bytes (ids 1000 + byte). Count every adjacent pair, weighted
//     by word frequency, and remember which words contain each pair.
//  3. Repeat until the vocabulary is full: take the most frequent pair (ties: smaller
//     (left id, right id) first), give `left + right` an id (a new one, or the existing id when two
//     pairs spell the same string), and rewrite only the words that contain the pair, updating
//     the counts of the neighbouring pairs incrementally. A max-heap with lazy invalidation picks
//     the next pair; nothing is ever recounted from scratch.

import { AddedVocabulary } from './added-tokens.js';
import {
  APERTUS_BYTE_OFFSET,
  APERTUS_FIRST_MERGE_ID,
  APERTUS_SPECIAL_TOKENS,
  buildApertusTokenizerConfig,
  buildApertusTokenizerJson,
} from './apertus.js';
import { BYTE_TO_CHAR, utf8Encode } from './byte-level.js';
import { TokenizerError } from './errors.js';
import { PreTokenizer, type Pieces } from './pretokenizer.js';
import type { TokenizerConfigJson, TokenizerJson } from './tokenizer.js';

/** Options of {@link trainApertusBpe}. */
export interface TrainBpeOptions {
  /** Target vocabulary size, reserved ids and byte tokens included (at least 1256). */
  vocabSize: number;
  /** Pairs seen fewer times than this are never merged (default 2). */
  minFrequency?: number;
  /** Called every `progressEvery` merges with the number of merges so far. */
  onProgress?: (merges: number) => void;
  /** How often `onProgress` is called (default 1000). */
  progressEvery?: number;
  /**
   * `tokenizerConfig` for an Instruct model (EOS `<|assistant_end|>`, the default) or, when false,
   * for a base model (EOS `</s>`, id 2, as a pretrained model's config.json says).
   */
  instruct?: boolean;
}

/** Result of {@link trainApertusBpe}. */
export interface TrainedBpe {
  /** Learned merges in rank order, as byte-level token strings. */
  merges: [string, string][];
  /** Number of ids in the trained vocabulary (equals `vocabSize` unless the corpus ran out of pairs). */
  vocabSize: number;
  /** The `tokenizer.json` document (Apertus layout). */
  tokenizerJson: TokenizerJson;
  /** A matching `tokenizer_config.json` document. */
  tokenizerConfig: TokenizerConfigJson;
  /** Distinct pre-tokens counted in the corpus. */
  distinctWords: number;
}

const KEY_SHIFT = 2097152; // 2^21: pair key = left * 2^21 + right

/** Max-heap of (count, pair key); ties pop the smaller key first. */
class PairHeap {
  private counts = new Float64Array(1024);
  private keys = new Float64Array(1024);
  size = 0;

  private above(ci: number, ki: number, cj: number, kj: number): boolean {
    return ci > cj || (ci === cj && ki < kj);
  }

  push(count: number, key: number): void {
    if (this.size === this.counts.length) {
      const c = new Float64Array(this.size * 2);
      c.set(this.counts);
      this.counts = c;
      const k = new Float64Array(this.size * 2);
      k.set(this.keys);
      this.keys = k;
    }
    const counts = this.counts;
    const keys = this.keys;
    let i = this.size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.above(count, key, counts[p]!, keys[p]!)) break;
      counts[i] = counts[p]!;
      keys[i] = keys[p]!;
      i = p;
    }
    counts[i] = count;
    keys[i] = key;
  }

  /** Pop the top; its count and key are left in `topCount` / `topKey`. */
  topCount = 0;
  topKey = 0;
  pop(): void {
    const counts = this.counts;
    const keys = this.keys;
    this.topCount = counts[0]!;
    this.topKey = keys[0]!;
    const n = --this.size;
    const lc = counts[n]!;
    const lk = keys[n]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && this.above(counts[c + 1]!, keys[c + 1]!, counts[c]!, keys[c]!)) c++;
      if (!this.above(counts[c]!, keys[c]!, lc, lk)) break;
      counts[i] = counts[c]!;
      keys[i] = keys[c]!;
      i = c;
    }
    counts[i] = lc;
    keys[i] = lk;
  }
}

/**
 * Statistics of adjacent symbol pairs: open-addressing table keyed by (left id, right id) with a
 * count (weighted by word frequency) and the list of words that may contain the pair. Slots are
 * stable between rehashes only; callers keep pair ids, not slots.
 */
class PairStats {
  left: Int32Array;
  right: Int32Array;
  count: Float64Array;
  where: (number[] | undefined)[];
  /** Per-slot scratch stamp (the trainer marks pairs already queued in the current merge). */
  mark: Int32Array;
  private mask: number;
  private used = 0;

  constructor(expected: number) {
    let cap = 1024;
    while (cap < expected * 2) cap *= 2;
    this.left = new Int32Array(cap).fill(-1);
    this.right = new Int32Array(cap);
    this.count = new Float64Array(cap);
    this.where = new Array<number[] | undefined>(cap);
    this.mark = new Int32Array(cap);
    this.mask = cap - 1;
  }

  private static hash(a: number, b: number): number {
    let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b ^ 0x7f4a7c15, 0x85ebca6b);
    h ^= h >>> 15;
    return Math.imul(h, 0x2c1b3c6d) ^ (h >>> 12);
  }

  /** Slot of pair (a, b), created (count 0, no words) when missing. */
  slot(a: number, b: number): number {
    let i = PairStats.hash(a, b) & this.mask;
    for (;;) {
      const l = this.left[i]!;
      if (l === a && this.right[i] === b) return i;
      if (l === -1) break;
      i = (i + 1) & this.mask;
    }
    if ((this.used + 1) * 2 > this.left.length) {
      this.grow();
      return this.slot(a, b);
    }
    this.left[i] = a;
    this.right[i] = b;
    this.used++;
    return i;
  }

  /** Slot of pair (a, b), or -1. */
  find(a: number, b: number): number {
    let i = PairStats.hash(a, b) & this.mask;
    for (;;) {
      const l = this.left[i]!;
      if (l === a && this.right[i] === b) return i;
      if (l === -1) return -1;
      i = (i + 1) & this.mask;
    }
  }

  /** Add `delta` to the count of (a, b); when `word >= 0`, also note that the word contains it. */
  add(a: number, b: number, delta: number, word: number): number {
    const s = this.slot(a, b);
    this.count[s] = this.count[s]! + delta;
    if (word >= 0) {
      let list = this.where[s];
      if (list === undefined) this.where[s] = list = [];
      if (list.length === 0 || list[list.length - 1] !== word) list.push(word);
    }
    return s;
  }

  private grow(): void {
    const { left, right, count, where, mark } = this;
    const cap = left.length * 2;
    this.left = new Int32Array(cap).fill(-1);
    this.right = new Int32Array(cap);
    this.count = new Float64Array(cap);
    this.where = new Array<number[] | undefined>(cap);
    this.mark = new Int32Array(cap);
    this.mask = cap - 1;
    for (let i = 0; i < left.length; i++) {
      const a = left[i]!;
      if (a === -1) continue;
      let j = PairStats.hash(a, right[i]!) & this.mask;
      while (this.left[j] !== -1) j = (j + 1) & this.mask;
      this.left[j] = a;
      this.right[j] = right[i]!;
      this.count[j] = count[i]!;
      this.where[j] = where[i];
      this.mark[j] = mark[i]!;
    }
  }

  /** Visit every pair with its count. */
  forEach(fn: (a: number, b: number, count: number) => void): void {
    for (let i = 0; i < this.left.length; i++) if (this.left[i] !== -1) fn(this.left[i]!, this.right[i]!, this.count[i]!);
  }
}

/** Count the distinct pre-tokens of the corpus (Apertus added tokens split out first). */
function countWords(corpus: Iterable<string>, added: AddedVocabulary, pre: PreTokenizer): Map<string, number> {
  const words = new Map<string, number>();
  const segs: number[] = [];
  const pieces: Pieces = [];
  for (const text of corpus) {
    if (typeof text !== 'string') throw new TokenizerError('InvalidTrainerOption', 'corpus items must be strings', { field: 'corpus' });
    segs.length = 0;
    added.split(text, segs);
    for (let k = 0; k < segs.length; k += 3) {
      if (segs[k + 2] !== -1) continue;
      pieces.length = 0;
      pre.run(text, segs[k]!, segs[k + 1]!, pieces);
      for (let p = 0; p < pieces.length; p += 3) {
        const w = text.slice(pieces[p]!, pieces[p + 1]!);
        words.set(w, (words.get(w) ?? 0) + 1);
      }
    }
  }
  return words;
}

/**
 * Train a byte-level BPE vocabulary in the Apertus layout from `corpus` (any iterable of texts).
 * Deterministic: the result depends only on the multiset of pre-tokens, not on the text order.
 * Throws {@link TokenizerError} (`InvalidTrainerOption`) for a bad `vocabSize`/`minFrequency`.
 */
export function trainApertusBpe(corpus: Iterable<string>, options: TrainBpeOptions): TrainedBpe {
  const { vocabSize } = options;
  const minFrequency = options.minFrequency ?? 2;
  if (!Number.isInteger(vocabSize) || vocabSize < APERTUS_FIRST_MERGE_ID || vocabSize >= KEY_SHIFT) {
    throw new TokenizerError('InvalidTrainerOption', `vocabSize must be an integer in [${APERTUS_FIRST_MERGE_ID}, ${KEY_SHIFT}), got ${vocabSize}`, {
      field: 'vocabSize',
    });
  }
  if (!Number.isInteger(minFrequency) || minFrequency < 1) {
    throw new TokenizerError('InvalidTrainerOption', `minFrequency must be a positive integer, got ${minFrequency}`, { field: 'minFrequency' });
  }
  const layout = buildApertusTokenizerJson({ merges: [] });
  const added = AddedVocabulary.fromConfig(layout.added_tokens);
  const pre = PreTokenizer.fromConfig(layout.pre_tokenizer);
  const wordCounts = countWords(corpus, added, pre);

  // Words as runs of symbol ids in one array; a word's run shrinks in place as merges apply.
  const nWords = wordCounts.size;
  const wStart = new Int32Array(nWords + 1);
  const wLen = new Int32Array(nWords);
  const wCount = new Float64Array(nWords);
  let total = 0;
  for (const w of wordCounts.keys()) total += 3 * w.length;
  let syms = new Int32Array(Math.max(total, 1));
  {
    let bytes = new Uint8Array(1024);
    let w = 0;
    let o = 0;
    for (const [word, count] of wordCounts) {
      wStart[w] = o;
      if (bytes.length < 3 * word.length) bytes = new Uint8Array(6 * word.length);
      const n = utf8Encode(word, 0, word.length, bytes, null);
      for (let i = 0; i < n; i++) syms[o + i] = APERTUS_BYTE_OFFSET + bytes[i]!;
      wLen[w] = n;
      wCount[w] = count;
      o += n;
      w++;
    }
    wStart[nWords] = o;
    syms = syms.subarray(0, Math.max(o, 1));
  }

  // Pair statistics.
  const stats = new PairStats(nWords * 4);
  for (let w = 0; w < nWords; w++) {
    const s = wStart[w]!;
    const c = wCount[w]!;
    for (let i = s; i + 1 < s + wLen[w]!; i++) stats.add(syms[i]!, syms[i + 1]!, c, w);
  }
  const heap = new PairHeap();
  stats.forEach((a, b, c) => {
    if (c >= minFrequency) heap.push(c, a * KEY_SHIFT + b);
  });

  // Strings of all ids; merged tokens get ids from 1256 on.
  const strOf: string[] = [];
  const idOf = new Map<string, number>();
  const specials = new Set<string>(APERTUS_SPECIAL_TOKENS.map((t) => t.content));
  for (let b = 0; b < 256; b++) {
    strOf[APERTUS_BYTE_OFFSET + b] = BYTE_TO_CHAR[b]!;
    idOf.set(BYTE_TO_CHAR[b]!, APERTUS_BYTE_OFFSET + b);
  }
  let nextId = APERTUS_FIRST_MERGE_ID;
  const merges: [string, string][] = [];
  const stamp = new Int32Array(nWords).fill(-1);
  // Pairs whose count rose during one merge (flat [left, right, ...]); each is queued once.
  const increased: number[] = [];
  const every = options.progressEvery ?? 1000;

  while (nextId < vocabSize && heap.size > 0) {
    heap.pop();
    const key = heap.topKey;
    const a = Math.floor(key / KEY_SHIFT);
    const b = key - a * KEY_SHIFT;
    const slot = stats.find(a, b);
    const actual = slot >= 0 ? stats.count[slot]! : 0;
    if (actual !== heap.topCount) {
      // Stale entry: re-queue a lowered count; a raised count already has its own entry.
      if (actual < heap.topCount && actual >= minFrequency) heap.push(actual, key);
      continue;
    }
    const merged = strOf[a]! + strOf[b]!;
    stats.count[slot] = 0;
    if (specials.has(merged)) continue; // never shadow a reserved token
    let m = idOf.get(merged);
    if (m === undefined) {
      m = nextId++;
      strOf[m] = merged;
      idOf.set(merged, m);
    }
    merges.push([strOf[a]!, strOf[b]!]);
    const list = stats.where[slot] ?? [];
    stats.where[slot] = undefined;
    const mergeIndex = merges.length;
    increased.length = 0;
    for (const w of list) {
      if (stamp[w] === mergeIndex) continue;
      stamp[w] = mergeIndex;
      const s = wStart[w]!;
      let len = wLen[w]!;
      const c = wCount[w]!;
      let i = s;
      while (i + 1 < s + len) {
        if (syms[i] !== a || syms[i + 1] !== b) {
          i++;
          continue;
        }
        if (i > s) {
          const prev = syms[i - 1]!;
          stats.add(prev, a, -c, -1);
          stats.add(prev, m, c, w);
          increased.push(prev, m);
        }
        if (i + 2 < s + len) {
          const next = syms[i + 2]!;
          stats.add(b, next, -c, -1);
          stats.add(m, next, c, w);
          increased.push(m, next);
        }
        syms[i] = m;
        syms.copyWithin(i + 1, i + 2, s + len);
        len--;
        i++;
      }
      wLen[w] = len;
    }
    // The merged pair is gone everywhere (self-overlapping pairs such as (x, x) decremented it).
    stats.count[stats.find(a, b)] = 0;
    for (let k = 0; k < increased.length; k += 2) {
      const pa = increased[k]!;
      const pb = increased[k + 1]!;
      const ps = stats.find(pa, pb);
      if (stats.mark[ps] === mergeIndex) continue;
      stats.mark[ps] = mergeIndex;
      const c = stats.count[ps]!;
      if (c >= minFrequency) heap.push(c, pa * KEY_SHIFT + pb);
    }
    if (options.onProgress !== undefined && merges.length % every === 0) options.onProgress(merges.length);
  }

  const tokenizerJson = buildApertusTokenizerJson({ merges });
  return {
    merges,
    vocabSize: nextId,
    tokenizerJson,
    tokenizerConfig: buildApertusTokenizerConfig({ instruct: options.instruct ?? true }),
    distinctWords: nWords,
  };
}
