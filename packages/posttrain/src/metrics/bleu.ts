// BLEU (Papineni et al. 2002) exactly as sacreBLEU 2.x computes it.
//
// Each segment is right-stripped, optionally lowercased and tokenized (`13a` by default); word
// n-grams of orders 1…4 of the hypothesis are matched against the references with clipping by the
// maximum count of each n-gram over the references. The reference length of a segment is the
// reference length closest to the hypothesis length (ties: the shorter). Corpus statistics are
// summed over segments, then
//   BLEU = BP · exp( (1/N)·Σ_n log p_n ),   p_n = 100·correct_n / total_n,
//   BP   = 1 if c ≥ r else exp(1 − r/c)      (c = hypothesis length, r = reference length, BP = 0 if c = 0).
// Smoothing of zero-match orders (Chen & Cherry 2014):
//   'exp'   (sacreBLEU's default for corpus AND sentence BLEU; mteval-v13a "NIST" method 3):
//           the k-th order with no match gets p_n = 100 / (2^k · total_n);
//   'floor' p_n = 100·ε/total_n (ε = 0.1); 'add-k': correct_n, total_n += k for n ≥ 2 (k = 1);
//   'none'  p_n = 0, whose log is floored at −9999999999 (the score becomes 0).
// BLEU is 0 when no n-gram of any order matches. With `effectiveOrder` (sentence BLEU), orders
// whose hypothesis has no n-grams at all are left out of the average.

import { checkOption, PosttrainError } from '../errors';
import type { References } from './chrf';
import { pyRstrip, pySplit } from './python-text';
import { tokenize13a } from './tokenize-13a';

/** Smoothing of zero-match n-gram orders (sacreBLEU's names). */
export type BleuSmoothing = 'none' | 'floor' | 'add-k' | 'exp';

/** Options of BLEU; defaults are sacreBLEU's. */
export interface BleuOptions {
  /** Default `'exp'` (sacreBLEU's default for both corpus and sentence BLEU). */
  readonly smoothMethod?: BleuSmoothing;
  /** ε of `'floor'` (default 0.1) or k of `'add-k'` (default 1). */
  readonly smoothValue?: number;
  /** Highest n-gram order. Default 4. */
  readonly maxNgramOrder?: number;
  /** Average only over orders the hypothesis has n-grams for. Default: false for corpus, true for sentence BLEU. */
  readonly effectiveOrder?: boolean;
  /** Lowercase before tokenizing. Default false. */
  readonly lowercase?: boolean;
  /** `'13a'` (default) or `'none'` (split on whitespace only). */
  readonly tokenize?: '13a' | 'none';
}

/** A BLEU score with its sufficient statistics. */
export interface BleuScore {
  /** The score in [0, 100]. */
  readonly score: number;
  /** Matched n-grams per order (after add-k smoothing, as sacreBLEU reports them). */
  readonly counts: readonly number[];
  /** Hypothesis n-grams per order (after add-k smoothing). */
  readonly totals: readonly number[];
  /** Modified precisions p_n in percent. */
  readonly precisions: readonly number[];
  /** Brevity penalty. */
  readonly bp: number;
  /** Hypothesis length in tokens (summed). */
  readonly sysLen: number;
  /** Reference length in tokens (summed closest lengths). */
  readonly refLen: number;
}

interface Resolved {
  smoothMethod: BleuSmoothing;
  smoothValue: number;
  maxNgramOrder: number;
  effectiveOrder: boolean;
  lowercase: boolean;
  tokenize: '13a' | 'none';
}

function resolve(o: BleuOptions, effectiveDefault: boolean): Resolved {
  const smoothMethod = o.smoothMethod ?? 'exp';
  checkOption(['none', 'floor', 'add-k', 'exp'].includes(smoothMethod), 'smoothMethod', `expected none, floor, add-k or exp, got ${String(smoothMethod)}`);
  const smoothValue = o.smoothValue ?? (smoothMethod === 'floor' ? 0.1 : 1);
  checkOption(Number.isFinite(smoothValue) && smoothValue >= 0, 'smoothValue', `expected a non-negative number, got ${smoothValue}`);
  const maxNgramOrder = o.maxNgramOrder ?? 4;
  checkOption(Number.isInteger(maxNgramOrder) && maxNgramOrder >= 1, 'maxNgramOrder', `expected a positive integer, got ${maxNgramOrder}`);
  const tokenize = o.tokenize ?? '13a';
  checkOption(tokenize === '13a' || tokenize === 'none', 'tokenize', `expected "13a" or "none", got ${String(tokenize)}`);
  return { smoothMethod, smoothValue, maxNgramOrder, effectiveOrder: o.effectiveOrder ?? effectiveDefault, lowercase: o.lowercase ?? false, tokenize };
}

function preprocess(s: string, o: Resolved): string[] {
  const x = pyRstrip(o.lowercase ? s.toLowerCase() : s);
  return pySplit(o.tokenize === '13a' ? tokenize13a(x) : x);
}

/** n-gram counts keyed by `order:tokens` (tokens never contain spaces). */
function ngrams(tokens: readonly string[], maxOrder: number): Map<string, number> {
  const m = new Map<string, number>();
  for (let n = 1; n <= maxOrder; n++) {
    for (let i = 0; i + n <= tokens.length; i++) {
      const key = `${n}:${tokens.slice(i, i + n).join(' ')}`;
      m.set(key, (m.get(key) ?? 0) + 1);
    }
  }
  return m;
}

function closestRefLen(hypLen: number, refLens: readonly number[]): number {
  let bestDiff = -1;
  let best = -1;
  for (const len of refLens) {
    const diff = Math.abs(hypLen - len);
    if (bestDiff === -1 || diff < bestDiff) {
      bestDiff = diff;
      best = len;
    } else if (diff === bestDiff && len < best) best = len;
  }
  return best;
}

/** `[sysLen, refLen, correct_1..N, total_1..N]` of one segment. */
function segmentStats(hyp: string, refs: readonly string[], o: Resolved): number[] {
  const N = o.maxNgramOrder;
  const refMax = new Map<string, number>();
  const refLens: number[] = [];
  for (const ref of refs) {
    const toks = preprocess(ref, o);
    refLens.push(toks.length);
    for (const [g, c] of ngrams(toks, N)) refMax.set(g, Math.max(refMax.get(g) ?? 0, c));
  }
  const h = preprocess(hyp, o);
  const correct = new Array<number>(N).fill(0);
  const total = new Array<number>(N).fill(0);
  for (const [g, c] of ngrams(h, N)) {
    const n = Number(g.slice(0, g.indexOf(':'))) - 1;
    total[n] = total[n]! + c;
    const r = refMax.get(g);
    if (r !== undefined) correct[n] = correct[n]! + Math.min(c, r);
  }
  return [h.length, closestRefLen(h.length, refLens), ...correct, ...total];
}

/** sacreBLEU's `my_log`: log with log(0) floored at −9999999999. */
function flooredLog(x: number): number {
  return x === 0 ? -9999999999 : Math.log(x);
}

function fromStats(stats: readonly number[], o: Resolved): BleuScore {
  const N = o.maxNgramOrder;
  const sysLen = stats[0]!;
  const refLen = stats[1]!;
  const correct = stats.slice(2, 2 + N);
  const total = stats.slice(2 + N, 2 + 2 * N);
  let bp = 1;
  if (sysLen < refLen) bp = sysLen > 0 ? Math.exp(1 - refLen / sysLen) : 0;
  const precisions = new Array<number>(N).fill(0);
  if (!correct.some((c) => c !== 0)) return { score: 0, counts: correct, totals: total, precisions, bp, sysLen, refLen };
  let smoothMteval = 1;
  let effOrder = N;
  for (let n = 1; n <= N; n++) {
    if (o.smoothMethod === 'add-k' && n > 1) {
      correct[n - 1] = correct[n - 1]! + o.smoothValue;
      total[n - 1] = total[n - 1]! + o.smoothValue;
    }
    if (total[n - 1] === 0) break;
    if (o.effectiveOrder) effOrder = n;
    if (correct[n - 1] === 0) {
      if (o.smoothMethod === 'exp') {
        smoothMteval *= 2;
        precisions[n - 1] = 100 / (smoothMteval * total[n - 1]!);
      } else if (o.smoothMethod === 'floor') {
        precisions[n - 1] = (100 * o.smoothValue) / total[n - 1]!;
      }
    } else {
      precisions[n - 1] = (100 * correct[n - 1]!) / total[n - 1]!;
    }
  }
  let logSum = 0;
  for (let i = 0; i < effOrder; i++) logSum += flooredLog(precisions[i]!);
  return { score: bp * Math.exp(logSum / effOrder), counts: correct, totals: total, precisions, bp, sysLen, refLen };
}

function refList(refs: References, i: number): readonly string[] {
  const list = typeof refs === 'string' ? [refs] : refs;
  if (list.length === 0) throw new PosttrainError('LengthMismatch', 'no reference given', { field: `references[${i}]` });
  return list;
}

/**
 * Corpus BLEU (sacreBLEU `corpus_bleu` defaults: 13a, 4-grams, `exp` smoothing, no effective order).
 * `references[i]` is the reference (or list of references) of `hypotheses[i]`.
 */
export function corpusBleu(hypotheses: readonly string[], references: readonly References[], options: BleuOptions = {}): BleuScore {
  const o = resolve(options, false);
  if (hypotheses.length !== references.length) {
    throw new PosttrainError('LengthMismatch', `${hypotheses.length} hypotheses but ${references.length} references`, { field: 'references' });
  }
  if (hypotheses.length === 0) throw new PosttrainError('LengthMismatch', 'no segments to score', { field: 'hypotheses' });
  const sum = new Array<number>(2 + 2 * o.maxNgramOrder).fill(0);
  hypotheses.forEach((hyp, i) => {
    const s = segmentStats(hyp, refList(references[i]!, i), o);
    for (let k = 0; k < sum.length; k++) sum[k] = sum[k]! + s[k]!;
  });
  return fromStats(sum, o);
}

/**
 * Sentence BLEU (sacreBLEU `sentence_bleu` defaults: 13a, 4-grams, `exp` smoothing, effective order).
 * Pass `smoothMethod: 'add-k'` for Lin & Och's add-one smoothing.
 */
export function sentenceBleu(hypothesis: string, references: References, options: BleuOptions = {}): BleuScore {
  const o = resolve(options, true);
  return fromStats(segmentStats(hypothesis, refList(references, 0), o), o);
}
