import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Document } from '../document';
import { DocumentReadError, EmptyCorpusError, InvalidOptionError, JsonlError } from '../errors';
import { readJsonl } from './jsonl';
import { readTextFolder } from './text-folder';

const dir = mkdtempSync(path.join(tmpdir(), 'apertus-readers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function collect(it: AsyncIterable<Document>): Promise<Document[]> {
  const out: Document[] = [];
  for await (const d of it) out.push(d);
  return out;
}

describe('readJsonl', () => {
  it('reads text, id, url, lang; default ids name file and line; skips blank lines; handles CRLF and BOM', async () => {
    const file = path.join(dir, 'ok.jsonl');
    writeFileSync(
      file,
      '\ufeff{"text":"a","id":"x1","url":"https://e.com/1","lang":"de"}\r\n\n{"text":"b\\nc","id":7,"url":null}\r\n   \n{"text":"ü 日本"}\n',
    );
    expect(await collect(readJsonl(file))).toEqual([
      { id: 'x1', text: 'a', url: 'https://e.com/1', lang: 'de' },
      { id: '7', text: 'b\nc' },
      { id: 'ok.jsonl:5', text: 'ü 日本' },
    ]);
  });

  it('throws a JsonlError naming file and line for each kind of bad line', async () => {
    const cases: [string, string][] = [
      ['{"text": "a"', 'invalid JSON'],
      ['[1,2]', 'not a JSON object'],
      ['{"id": "x"}', 'field "text" is missing or not a string'],
      ['{"text": 5}', 'field "text" is missing or not a string'],
      ['{"text": "a", "id": {"k": 1}}', 'field "id" is not a string or number'],
      ['{"text": "a", "url": 3}', 'field "url" is not a string'],
      ['{"text": "a", "lang": ["de"]}', 'field "lang" is not a string'],
    ];
    for (const [i, [line, reason]] of cases.entries()) {
      const file = path.join(dir, `bad${i}.jsonl`);
      writeFileSync(file, `{"text":"fine"}\n\n${line}\n`);
      let err: unknown;
      try {
        await collect(readJsonl(file));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(JsonlError);
      expect(err).toMatchObject({ file, line: 3, reason });
      expect((err as Error).message).toBe(`${file}:3: ${reason}`);
    }
  });

  it('skip mode drops bad lines and counts them', async () => {
    const file = path.join(dir, 'mixed.jsonl');
    writeFileSync(file, '{"text":"a"}\nnot json\n{"nope":1}\n{"text":"b"}\n');
    const reader = readJsonl([file, file], { onError: 'skip' });
    expect((await collect(reader)).map((d) => d.text)).toEqual(['a', 'b', 'a', 'b']);
    expect(reader.stats).toMatchObject({ files: 2, documents: 4, skipped: 4 });
    expect(reader.stats.errors.map((e) => e.line)).toEqual([2, 3, 2, 3]);
  });

  it('streams a file larger than one read chunk without holding it', async () => {
    const file = path.join(dir, 'big.jsonl');
    const line = JSON.stringify({ text: 'x'.repeat(1000) });
    writeFileSync(file, `${Array.from({ length: 3000 }, () => line).join('\n')}\n`);
    let n = 0;
    let chars = 0;
    for await (const d of readJsonl(file)) {
      n++;
      chars += d.text.length;
    }
    expect([n, chars]).toEqual([3000, 3_000_000]);
  });

  it('rejects missing files, directories, empty corpora and bad options with typed errors', async () => {
    await expect(collect(readJsonl(path.join(dir, 'missing.jsonl')))).rejects.toThrow(DocumentReadError);
    await expect(collect(readJsonl(dir))).rejects.toThrow(/not a regular file/);
    const empty = path.join(dir, 'empty.jsonl');
    writeFileSync(empty, '\n\n');
    await expect(collect(readJsonl(empty))).rejects.toThrow(EmptyCorpusError);
    expect(await collect(readJsonl(empty, { allowEmpty: true }))).toEqual([]);
    expect(() => readJsonl([])).toThrow(InvalidOptionError);
    expect(() => readJsonl(empty, { onError: 'ignore' as 'skip' })).toThrow(InvalidOptionError);
  });
});

describe('readTextFolder', () => {
  it('reads one document per file, recursively, in sorted order', async () => {
    const root = path.join(dir, 'corpus');
    mkdirSync(path.join(root, 'b', 'deep'), { recursive: true });
    mkdirSync(path.join(root, 'a'), { recursive: true });
    writeFileSync(path.join(root, 'z.txt'), 'zed');
    writeFileSync(path.join(root, 'b', 'deep', 'x.txt'), 'deep x');
    writeFileSync(path.join(root, 'a', '2.txt'), '\ufefftwo');
    writeFileSync(path.join(root, 'a', '10.txt'), 'ten');
    writeFileSync(path.join(root, 'a', 'skip.md'), 'markdown');
    expect(await collect(readTextFolder(root, { lang: 'en' }))).toEqual([
      { id: 'a/10.txt', text: 'ten', lang: 'en' },
      { id: 'a/2.txt', text: 'two', lang: 'en' },
      { id: 'b/deep/x.txt', text: 'deep x', lang: 'en' },
      { id: 'z.txt', text: 'zed', lang: 'en' },
    ]);
    expect((await collect(readTextFolder(root, { extensions: null }))).map((d) => d.id)).toContain('a/skip.md');
  });

  it('rejects a missing directory, invalid UTF-8 and an empty corpus with typed errors', async () => {
    await expect(collect(readTextFolder(path.join(dir, 'nope')))).rejects.toThrow(DocumentReadError);
    const bad = path.join(dir, 'badutf8');
    mkdirSync(bad);
    writeFileSync(path.join(bad, 'x.txt'), Buffer.from([0x61, 0xff, 0x62]));
    await expect(collect(readTextFolder(bad))).rejects.toThrow(/not valid UTF-8/);
    const empty = path.join(dir, 'emptydir');
    mkdirSync(empty);
    await expect(collect(readTextFolder(empty))).rejects.toThrow(EmptyCorpusError);
  });
});
