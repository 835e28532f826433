import type { Document } from '../document';
import { FilterError, InvalidOptionError } from '../errors';
import type { DocumentFilter, FilterResult } from './report';
import { KEPT } from './report';

/**
 * Anything that scores a text's toxicity in [0, 1] (higher = more toxic).
 * Apertus used a per-language classifier (XLM-RoBERTa-base embeddings + MLP head,
 * max of P(toxic) over chunks); plug such a model in through this interface.
 */
export interface ToxicityScorer {
  /** Toxicity score of `text` in [0, 1]; `lang` is the document language, if known. */
  score(text: string, lang: string | undefined): number | Promise<number>;
}

/**
 * Per-language thresholds Apertus applied to its classifier scores
 * (training-recipe §7.3); a document is kept iff score < threshold.
 * Languages not listed got no toxicity step.
 */
export const APERTUS_TOXICITY_THRESHOLDS: Readonly<Record<string, number>> = Object.freeze({
  en: 0.999440610408783,
  de: 0.9977,
  fr: 0.9994,
  pl: 0.9867,
  pt: 0.9476,
  es: 0.9953,
  it: 0.9985,
  zh: 0.5954,
  nl: 0.9883,
});

/**
 * Default English word list: common profanity and insults. It is a placeholder
 * for wiring and tests, not a substitute for the Apertus classifier; supply your
 * own lists per language for real use.
 */
export const DEFAULT_TOXIC_WORDS: readonly string[] = Object.freeze([
  'asshole',
  'bastard',
  'bitch',
  'bullshit',
  'crap',
  'cunt',
  'damn',
  'dick',
  'dumbass',
  'fuck',
  'fucked',
  'fucker',
  'fucking',
  'idiot',
  'moron',
  'motherfucker',
  'piss',
  'prick',
  'shit',
  'slut',
  'stupid',
  'twat',
  'whore',
]);

/** Options of {@link WordListToxicityScorer}. */
export interface WordListScorerOptions {
  /**
   * Toxic words: one list for every language, or a list per language code
   * (`"*"` for the fallback list). Default {@link DEFAULT_TOXIC_WORDS} for all.
   */
  readonly words?: Iterable<string> | Readonly<Record<string, Iterable<string>>>;
  /** Words per chunk (default 64); the score is the maximum over chunks. */
  readonly chunkWords?: number;
}

const WORD = /[\p{L}\p{N}\p{M}]+(?:['’][\p{L}\p{N}\p{M}]+)*/gu;

/**
 * Default scorer: the text is split into words (Unicode letters/digits, lower-cased),
 * cut into chunks of `chunkWords` words, and each chunk scores the fraction of its
 * words that are on the list; the document score is the maximum chunk score
 * (the same max-over-chunks aggregation as the Apertus classifier).
 */
export class WordListToxicityScorer implements ToxicityScorer {
  private readonly lists = new Map<string, Set<string>>();
  private readonly chunkWords: number;

  constructor(options: WordListScorerOptions = {}) {
    const words = options.words ?? DEFAULT_TOXIC_WORDS;
    if (isIterable(words)) this.lists.set('*', toSet(words));
    else for (const [lang, list] of Object.entries(words)) this.lists.set(lang.toLowerCase(), toSet(list));
    this.chunkWords = options.chunkWords ?? 64;
    if (!Number.isInteger(this.chunkWords) || this.chunkWords < 1) {
      throw new InvalidOptionError('chunkWords', `expected a positive integer, got ${String(options.chunkWords)}`);
    }
  }

  private listFor(lang: string | undefined): Set<string> | undefined {
    if (lang !== undefined) {
      const l = lang.toLowerCase();
      const exact = this.lists.get(l) ?? this.lists.get(l.split(/[-_]/)[0]!);
      if (exact !== undefined) return exact;
    }
    return this.lists.get('*');
  }

  /** Maximum over chunks of the fraction of listed words. */
  score(text: string, lang: string | undefined): number {
    const list = this.listFor(lang);
    if (list === undefined || list.size === 0) return 0;
    let best = 0;
    let inChunk = 0;
    let hits = 0;
    for (const m of text.toLowerCase().matchAll(WORD)) {
      if (list.has(m[0])) hits++;
      if (++inChunk === this.chunkWords) {
        best = Math.max(best, hits / inChunk);
        inChunk = 0;
        hits = 0;
      }
    }
    if (inChunk > 0) best = Math.max(best, hits / inChunk);
    return best;
  }
}

function isIterable(x: unknown): x is Iterable<string> {
  return typeof x === 'object' && x !== null && Symbol.iterator in x;
}

function toSet(words: Iterable<string>): Set<string> {
  return new Set([...words].map((w) => w.trim().toLowerCase()).filter((w) => w !== ''));
}

/** Options of {@link ToxicityFilter}. */
export interface ToxicityFilterOptions {
  /** Scorer (default: {@link WordListToxicityScorer} with the default list). */
  readonly scorer?: ToxicityScorer;
  /**
   * Keep iff score < threshold. A number applies to every document; a map applies
   * per language (primary subtag match) and documents in unlisted languages, or
   * without a language, pass untouched — as Apertus filtered only 9 languages.
   * Default 0.1 for the word-list scorer.
   */
  readonly threshold?: number | Readonly<Record<string, number>>;
}

/** Toxicity filter (training-recipe §7.3): removes documents scoring at or above the threshold. */
export class ToxicityFilter implements DocumentFilter {
  /** Filter name in reports. */
  readonly name = 'toxicity';
  private readonly scorer: ToxicityScorer;
  private readonly threshold: number | Readonly<Record<string, number>>;

  constructor(options: ToxicityFilterOptions = {}) {
    this.scorer = options.scorer ?? new WordListToxicityScorer();
    this.threshold = options.threshold ?? 0.1;
    const values = typeof this.threshold === 'number' ? [this.threshold] : Object.values(this.threshold);
    for (const t of values) {
      if (typeof t !== 'number' || !(t >= 0 && t <= 1)) {
        throw new InvalidOptionError('threshold', `thresholds must be numbers in [0, 1], got ${String(t)}`);
      }
    }
  }

  /** Threshold for a language, or `undefined` when the document is not filtered. */
  thresholdFor(lang: string | undefined): number | undefined {
    if (typeof this.threshold === 'number') return this.threshold;
    if (lang === undefined) return undefined;
    const l = lang.toLowerCase();
    return this.threshold[l] ?? this.threshold[l.split(/[-_]/)[0]!];
  }

  /** Score and keep/remove `document`. */
  async apply(document: Document): Promise<FilterResult> {
    const threshold = this.thresholdFor(document.lang);
    if (threshold === undefined) return { document, report: KEPT };
    const score = await this.scorer.score(document.text, document.lang);
    if (typeof score !== 'number' || !(score >= 0 && score <= 1)) {
      throw new FilterError(this.name, document.id, `scorer returned ${String(score)}, expected a number in [0, 1]`);
    }
    if (score < threshold) return { document, report: KEPT };
    return {
      document,
      report: { kept: false, filter: this.name, reason: 'toxicity', detail: `score ${score} >= threshold ${threshold}` },
    };
  }
}
