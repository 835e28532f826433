// chrF (Popović 2015) and chrF++ (Popović 2017), exactly as sacreBLEU 2.x computes them.
//
// Statistics per segment and per order n (character orders 1…charOrder, then word orders
// 1…wordOrder): [hyp n-grams, ref n-grams, matched n-grams], with clipped matches
// Σ min(count_hyp, count_ref). Character n-grams are taken over code points of the segment with all
// whitespace removed (`whitespace: false`, the default). Word n-grams (chrF++) are taken over words
// whose leading or trailing ASCII punctuation is split off. With several references, the one with
// the best segment F-score supplies the statistics. Corpus statistics are the sum over segments.
//
// Score (sacreBLEU's default, "effective order"): average precision P and recall R over the orders
// where both the hypothesis and the reference have n-grams, then
//   chrF = 100 · (1 + β²)·P·R / (β²·P + R),   β = 2 (recall weighs 4× precision).
// `epsSmoothing: true` instead averages the per-order F-scores, with 1e-16 for empty orders
// (the reference chrF++.py / NLTK / Moses behaviour).

import { checkOption, PosttrainError } from '../errors';
import { codePoints, pySplit } from './python-text';

/** Options of chrF; defaults are sacreBLEU's (`chrF2`: charOrder 6, wordOrder 0, β 2). */
export interface ChrfOptions {
  /** Character n-gram order. Default 6. */
  readonly charOrder?: number;
  /** Word n-gram order: 0 = chrF (default), 2 = chrF++. */
  readonly wordOrder?: number;
  /** Recall weight β. Default 2. */
  readonly beta?: number;
  /** Lowercase hypotheses and references first. Default false. */
  readonly lowercase?: boolean;
  /** Keep whitespace inside character n-grams. Default false (removed, as sacreBLEU). */
  readonly whitespace?: boolean;
  /** Average per-order F-scores with ε smoothing instead of the effective-order average. Default false. */
  readonly epsSmoothing?: boolean;
}

/** A chrF score and the statistics it came from. */
export interface ChrfScore {
  /** The score in [0, 100]. */
  readonly score: number;
  /** `chrF2`, `chrF2++`, … (sacreBLEU's name). */
  readonly name: string;
  /** Summed statistics, `[hyp, ref, match]` per order (character orders first, then word orders). */
  readonly stats: readonly number[];
}

/** One reference, or several references, for one hypothesis. */
export type References = string | readonly string[];

interface Resolved {
  charOrder: number;
  wordOrder: number;
  beta: number;
  lowercase: boolean;
  whitespace: boolean;
  epsSmoothing: boolean;
}

function resolve(o: ChrfOptions): Resolved {
  const r = {
    charOrder: o.charOrder ?? 6,
    wordOrder: o.wordOrder ?? 0,
    beta: o.beta ?? 2,
    lowercase: o.lowercase ?? false,
    whitespace: o.whitespace ?? false,
    epsSmoothing: o.epsSmoothing ?? false,
  };
  checkOption(Number.isInteger(r.charOrder) && r.charOrder >= 0, 'charOrder', `expected a non-negative integer, got ${r.charOrder}`);
  checkOption(Number.isInteger(r.wordOrder) && r.wordOrder >= 0, 'wordOrder', `expected a non-negative integer, got ${r.wordOrder}`);
  checkOption(r.charOrder + r.wordOrder > 0, 'charOrder', 'charOrder + wordOrder must be positive');
  checkOption(Number.isFinite(r.beta) && r.beta > 0, 'beta', `expected a positive number, got ${r.beta}`);
  return r;
}

type Counts = Map<string, number>;

function count(grams: Iterable<string>): Counts {
  const m: Counts = new Map();
  for (const g of grams) m.set(g, (m.get(g) ?? 0) + 1);
  return m;
}

function* charNgrams(chars: readonly string[], n: number): Generator<string> {
  for (let i = 0; i + n <= chars.length; i++) yield chars.slice(i, i + n).join('');
}

function* wordNgrams(words: readonly string[], n: number): Generator<string> {
  for (let i = 0; i + n <= words.length; i++) yield words.slice(i, i + n).join(' ');
}

const PUNCT = new Set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~');

/** Words with one leading or trailing ASCII punctuation character split off (chrF++). */
function chrfWords(sent: string): string[] {
  const out: string[] = [];
  for (const w of pySplit(sent)) {
    const cps = codePoints(w);
    if (cps.length === 1) out.push(w);
    else if (PUNCT.has(cps[cps.length - 1]!)) out.push(cps.slice(0, -1).join(''), cps[cps.length - 1]!);
    else if (PUNCT.has(cps[0]!)) out.push(cps[0]!, cps.slice(1).join(''));
    else out.push(w);
  }
  return out;
}

/** n-gram counters of every order for one segment. */
function ngramCounts(sent: string, o: Resolved): Counts[] {
  const line = o.whitespace ? sent : pySplit(sent).join('');
  const chars = codePoints(line);
  const all: Counts[] = [];
  for (let n = 1; n <= o.charOrder; n++) all.push(count(charNgrams(chars, n)));
  if (o.wordOrder > 0) {
    const words = chrfWords(sent);
    for (let n = 1; n <= o.wordOrder; n++) all.push(count(wordNgrams(words, n)));
  }
  return all;
}

function matchStats(hyp: Counts, ref: Counts): [number, number, number] {
  let hypCount = 0;
  let match = 0;
  for (const [g, c] of hyp) {
    hypCount += c;
    const r = ref.get(g);
    if (r !== undefined) match += Math.min(c, r);
  }
  let refCount = 0;
  for (const c of ref.values()) refCount += c;
  // sacreBLEU counts no hypothesis n-grams for an order the reference lacks entirely
  return [ref.size > 0 ? hypCount : 0, refCount, match];
}

function fScore(stats: readonly number[], o: Resolved): number {
  const eps = 1e-16;
  const factor = o.beta ** 2;
  const order = o.charOrder + o.wordOrder;
  let score = 0;
  let effective = 0;
  let avgP = 0;
  let avgR = 0;
  for (let i = 0; i < order; i++) {
    const nHyp = stats[3 * i]!;
    const nRef = stats[3 * i + 1]!;
    const nMatch = stats[3 * i + 2]!;
    const p = nHyp > 0 ? nMatch / nHyp : eps;
    const r = nRef > 0 ? nMatch / nRef : eps;
    const denom = factor * p + r;
    score += denom > 0 ? ((1 + factor) * p * r) / denom : eps;
    if (nHyp > 0 && nRef > 0) {
      avgP += p;
      avgR += r;
      effective++;
    }
  }
  if (o.epsSmoothing) return (100 * score) / order;
  if (effective === 0) return 0;
  avgP /= effective;
  avgR /= effective;
  if (avgP + avgR === 0) return 0;
  return (100 * (1 + factor) * avgP * avgR) / (factor * avgP + avgR);
}

function refList(refs: References, i: number): readonly string[] {
  const list = typeof refs === 'string' ? [refs] : refs;
  if (list.length === 0) throw new PosttrainError('LengthMismatch', 'no reference given', { field: `references[${i}]` });
  return list;
}

/** Best-matching statistics of one hypothesis against its references (sacreBLEU's segment statistics). */
function segmentStats(hyp: string, refs: readonly string[], o: Resolved): number[] {
  const pre = (s: string): string => (o.lowercase ? s.toLowerCase() : s);
  const h = ngramCounts(pre(hyp), o);
  let best: number[] = [];
  let bestF = -1;
  for (const ref of refs) {
    const r = ngramCounts(pre(ref), o);
    const stats: number[] = [];
    for (let k = 0; k < h.length; k++) stats.push(...matchStats(h[k]!, r[k]!));
    const f = fScore(stats, o);
    if (f > bestF) {
      bestF = f;
      best = stats;
    }
  }
  return best;
}

function nameOf(o: Resolved): string {
  return `chrF${o.beta}${'+'.repeat(o.wordOrder)}`;
}

/**
 * Corpus-level chrF (chrF++ with `wordOrder: 2`): statistics summed over all segments, then one
 * F-score. `references[i]` is the reference (or list of references) of `hypotheses[i]`.
 */
export function corpusChrf(hypotheses: readonly string[], references: readonly References[], options: ChrfOptions = {}): ChrfScore {
  const o = resolve(options);
  if (hypotheses.length !== references.length) {
    throw new PosttrainError('LengthMismatch', `${hypotheses.length} hypotheses but ${references.length} references`, { field: 'references' });
  }
  if (hypotheses.length === 0) throw new PosttrainError('LengthMismatch', 'no segments to score', { field: 'hypotheses' });
  const total = new Array<number>(3 * (o.charOrder + o.wordOrder)).fill(0);
  hypotheses.forEach((hyp, i) => {
    const s = segmentStats(hyp, refList(references[i]!, i), o);
    for (let k = 0; k < total.length; k++) total[k] = total[k]! + s[k]!;
  });
  return { score: fScore(total, o), name: nameOf(o), stats: total };
}

/** Sentence-level chrF of one hypothesis against one or several references. */
export function sentenceChrf(hypothesis: string, references: References, options: ChrfOptions = {}): ChrfScore {
  const o = resolve(options);
  const stats = segmentStats(hypothesis, refList(references, 0), o);
  return { score: fScore(stats, o), name: nameOf(o), stats };
}
