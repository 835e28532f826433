import { describe, expect, it } from 'vitest';
import type { Document } from './document';
import { InvalidOptionError } from './errors';
import { assignSplit, selectSplit } from './split';

describe('validation split', () => {
  it('holds out by SHA-256 of the id (value from Python hashlib: 0.63099... for "id:abc", seed 0)', () => {
    expect(assignSplit({ id: 'abc' }, { fraction: 0.64 })).toBe('validation');
    expect(assignSplit({ id: 'abc' }, { fraction: 0.63 })).toBe('train');
    expect(assignSplit({ id: 'abc' }, { fraction: 0 })).toBe('train');
    expect(assignSplit({ id: 'abc' }, { fraction: 1 })).toBe('validation');
  });

  it('holds out about `fraction` of documents, independent of order', async () => {
    const docs: Document[] = Array.from({ length: 5000 }, (_, i) => ({ id: `d${i}`, text: '' }));
    const val: string[] = [];
    for await (const d of selectSplit(docs, 'validation', { fraction: 0.1, seed: 5 })) val.push(d.id);
    // binomial sd at n=5000, p=0.1 is ≈ 21 documents
    expect(Math.abs(val.length - 500)).toBeLessThan(90);
    const reversed: string[] = [];
    for await (const d of selectSplit([...docs].reverse(), 'validation', { fraction: 0.1, seed: 5 })) reversed.push(d.id);
    expect(reversed.reverse()).toEqual(val);
    const train: string[] = [];
    for await (const d of selectSplit(docs, 'train', { fraction: 0.1, seed: 5 })) train.push(d.id);
    expect(train.length + val.length).toBe(5000);
    const valSet = new Set(val);
    expect(train.filter((id) => valSet.has(id))).toEqual([]);
  });

  it('by language holds out whole languages', () => {
    const langs = Array.from({ length: 200 }, (_, i) => `l${i}`);
    const opts = { fraction: 0.25, by: 'language' as const, seed: 1 };
    for (const lang of langs) {
      const sides = new Set(Array.from({ length: 5 }, (_, j) => assignSplit({ id: `${lang}-${j}`, lang }, opts)));
      expect(sides.size).toBe(1);
    }
    const held = langs.filter((lang) => assignSplit({ id: 'x', lang }, opts) === 'validation').length;
    expect(held).toBeGreaterThan(25);
    expect(held).toBeLessThan(75);
  });

  it('rejects invalid options', async () => {
    expect(() => assignSplit({ id: 'a' }, { fraction: 1.5 })).toThrow(InvalidOptionError);
    expect(() => assignSplit({ id: 'a' }, { fraction: 0.1, by: 'url' as 'id' })).toThrow(/by/);
    await expect(selectSplit([], 'test' as 'train', { fraction: 0.1 }).next()).rejects.toThrow(/split/);
  });
});
