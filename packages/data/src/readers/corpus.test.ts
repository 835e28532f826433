import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DocumentReadError, MegatronFormatError } from '../errors';
import { corpusFingerprint, megatronPrefix, readCorpus, readMegatronDocuments } from './corpus';

const golden = path.join(import.meta.dirname, '../../test/golden');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-corpus-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

async function failure(p: Promise<unknown>): Promise<Error> {
  return p.then(() => { throw new Error('expected a failure'); }, (e: Error) => e);
}

describe('readCorpus', () => {
  it('reads JSONL files and folders, and refuses oversized documents naming the file and the document', async () => {
    const file = path.join(tmp, 'c.jsonl');
    fs.writeFileSync(file, `${JSON.stringify({ id: 'a', text: 'short' })}\n${JSON.stringify({ id: 'b', text: 'x'.repeat(50) })}\n`);
    expect((await all(readCorpus({ source: file, maxDocumentChars: 50 }))).map((d) => d.id)).toEqual(['a', 'b']);
    const long = await failure(all(readCorpus({ source: file, maxDocumentChars: 49, limitName: '--max-document-chars' })));
    expect(long).toBeInstanceOf(DocumentReadError);
    expect(long.message).toBe(`${file} (document b): document of 50 characters exceeds --max-document-chars 49; split it or raise the limit`);
    fs.mkdirSync(path.join(tmp, 'txt'));
    fs.writeFileSync(path.join(tmp, 'txt', 'one.txt'), 'first');
    fs.writeFileSync(path.join(tmp, 'txt', 'two.md'), 'second and last');
    expect((await all(readCorpus({ source: path.join(tmp, 'txt'), maxDocumentChars: 20 }))).map((d) => d.text).sort()).toEqual(['first', 'second and last']);
    // Refused before reading: more than 3 bytes per allowed character (one.txt, 5 bytes, passes this check).
    expect((await failure(all(readCorpus({ source: path.join(tmp, 'txt'), maxDocumentChars: 2 })))).message).toMatch(/two\.md: document of 15 bytes exceeds maxDocumentChars 2/);
  });

  it('a missing or unsupported source is a DocumentReadError naming it', async () => {
    const missing = await failure(all(readCorpus({ source: path.join(tmp, 'nope.jsonl'), maxDocumentChars: 10 })));
    expect(missing).toBeInstanceOf(DocumentReadError);
    expect(missing.message).toMatch(/nope\.jsonl: data not found or not accessible \(ENOENT\)/);
    fs.writeFileSync(path.join(tmp, 'c.csv'), 'a,b\n');
    expect((await failure(all(readCorpus({ source: path.join(tmp, 'c.csv'), maxDocumentChars: 10 })))).message).toMatch(/c\.csv: unsupported data file/);
    await expect(corpusFingerprint({ source: path.join(tmp, 'nope.jsonl') })).rejects.toThrow(DocumentReadError);
  });
});

describe('Megatron corpora', () => {
  it('a prefix is found from PREFIX, PREFIX.idx or PREFIX.bin; anything else is not one', () => {
    const prefix = path.join(golden, 'megatron-int32');
    for (const s of [prefix, `${prefix}.idx`, `${prefix}.bin`]) expect(megatronPrefix(s)).toBe(path.resolve(prefix));
    expect(megatronPrefix(path.join(golden, 'nothing'))).toBeNull();
    expect(megatronPrefix('udhr')).toBeNull();
  });

  it('documents are their sequences concatenated, <s>/</s> removed at the ends (the golden pair as the numpy reader printed it)', () => {
    // sequences [[1,100000,2],[1,5],[6,131071,2],[1,2]], document index [0,1,3,4]
    const prefix = path.join(golden, 'megatron-int32');
    expect([...readMegatronDocuments(prefix)]).toEqual([[1, 100000, 2], [1, 5, 6, 131071, 2], [1, 2]]);
    expect([...readMegatronDocuments(prefix, { bodId: 1, eodId: 2 })]).toEqual([[100000], [5, 6, 131071], []]);
  });

  it('a corrupt pair is a MegatronFormatError naming the file', () => {
    fs.writeFileSync(path.join(tmp, 'bad.idx'), Buffer.alloc(40));
    fs.writeFileSync(path.join(tmp, 'bad.bin'), Buffer.alloc(0));
    expect(() => [...readMegatronDocuments(path.join(tmp, 'bad'))]).toThrow(MegatronFormatError);
    expect(() => [...readMegatronDocuments(path.join(tmp, 'bad'))]).toThrow(/bad\.idx: magic/);
  });
});
