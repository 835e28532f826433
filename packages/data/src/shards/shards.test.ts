import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { DataWriteError, DocumentReadError, EmptyCorpusError, InvalidOptionError, ShardFormatError, TokenError } from '../errors';
import { Packer } from '../packing/packer';
import { PackedDataset } from './dataset';
import { SHARD_HEADER_BYTES } from './format';
import { ShardedTokens, TokenShard } from './reader';
import { ShardWriter, writeShards } from './writer';

const root = mkdtempSync(path.join(tmpdir(), 'apertus-shards-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirCounter = 0;
const freshDir = (): string => path.join(root, `d${dirCounter++}`);

describe('token shards', () => {
  it('round-trips random documents: the concatenation reproduces the BoD/doc/EoD stream (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1000, 70000),
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.array(fc.nat(), { maxLength: 40 }), { minLength: 1, maxLength: 25 }),
        (vocab, maxTokensPerShard, seqLength, raw) => {
          const docs = raw.map((d) => d.map((x) => 3 + (x % (vocab - 3))));
          const dir = freshDir();
          const w = new ShardWriter({ directory: dir, vocabSize: vocab, bodId: 1, eodId: 2, maxTokensPerShard, bufferTokens: 7 });
          for (const d of docs) w.addDocument(d);
          const manifest = w.close();
          expect(manifest.dtype).toBe(vocab <= 65536 ? 'uint16' : 'uint32');
          const stream = docs.flatMap((d) => [1, ...d, 2]);
          const tokens = ShardedTokens.open(w.manifestPath);
          try {
            expect(tokens.numTokens).toBe(stream.length);
            expect(tokens.numDocuments).toBe(docs.length);
            expect(Array.from(tokens.readTokens(0, stream.length))).toEqual(stream);
            docs.forEach((d, i) => expect(Array.from(tokens.readDocument(i))).toEqual([1, ...d, 2]));
            // an arbitrary slice crossing shard boundaries
            const a = Math.floor(stream.length / 3);
            expect(Array.from(tokens.readTokens(a, a + 17))).toEqual(stream.slice(a, a + 17));
            // samples read back from disk equal the streaming packer's samples
            const packer = new Packer({ seqLength, bodId: 1, eodId: 2, padId: 0 });
            const expected = docs.flatMap((d) => packer.addDocument(d));
            expected.push(...packer.finish());
            const ds = new PackedDataset(tokens, { seqLength, padId: 0 });
            expect(ds.numSamples).toBe(expected.length);
            expected.forEach((s, i) => {
              const got = ds.sample(i);
              expect(Array.from(got.tokens)).toEqual(Array.from(s.tokens));
              expect(Array.from(got.labels)).toEqual(Array.from(s.labels));
              expect(Array.from(got.lossMask)).toEqual(Array.from(s.lossMask));
              expect(Array.from(got.positionIds)).toEqual(Array.from(s.positionIds));
              expect(Array.from(got.documentIds)).toEqual(Array.from(s.documentIds));
            });
          } finally {
            tokens.close();
          }
          // no temporary file is left behind
          expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('reads back the training-recipe §4.4 worked example from disk, value by value', () => {
    const dir = freshDir();
    const w = new ShardWriter({ directory: dir, vocabSize: 100, bodId: 1, eodId: 2, maxTokensPerShard: 4 });
    // documents [11,12], [13], [14,15]: stream [1,11,12,2,1,13,2,1,14,15,2], three shards
    for (const d of [[11, 12], [13], [14, 15]]) w.addDocument(d);
    const t = ShardedTokens.open(w.close().shards.map((s) => path.join(dir, s.file)));
    const ds = new PackedDataset(t, { seqLength: 9 });
    expect(ds.numSamples).toBe(1);
    const s = ds.sample(0);
    expect(Array.from(s.tokens)).toEqual([1, 11, 12, 2, 1, 13, 2, 1, 14]);
    expect(Array.from(s.labels)).toEqual([11, 12, 2, 1, 13, 2, 1, 14, 15]);
    expect(Array.from(s.lossMask)).toEqual([1, 1, 1, 0, 1, 1, 0, 1, 1]);
    expect(Array.from(s.positionIds)).toEqual([0, 1, 2, 3, 0, 1, 2, 0, 1]);
    expect(Array.from(s.documentIds)).toEqual([0, 0, 0, 0, 1, 1, 1, 2, 2]);
    t.close();
  });

  it('writes the documented byte layout', () => {
    const dir = freshDir();
    const w = new ShardWriter({ directory: dir, vocabSize: 100, bodId: 1, eodId: 2 });
    w.addDocument([11, 12]);
    w.addDocument([13]);
    w.close();
    const bytes = readFileSync(path.join(dir, 'shard-00000.tokens'));
    expect(bytes.toString('latin1', 0, 8)).toBe('APTSHARD');
    const header = JSON.parse(bytes.toString('utf8', 12, 12 + bytes.readUInt32LE(8)));
    expect(header).toMatchObject({ dtype: 'uint16', numTokens: 7, numDocuments: 2, tokensOffset: 4096, indexOffset: 4112 });
    // tokens [1 11 12 2 1 13 2] as uint16 LE at 4096
    expect(Array.from({ length: 7 }, (_, i) => bytes.readUInt16LE(SHARD_HEADER_BYTES + 2 * i))).toEqual([1, 11, 12, 2, 1, 13, 2]);
    // 14 token bytes + 2 zero bytes of padding, then u64 index [0, 4, 7]
    expect(bytes.readUInt16LE(4110)).toBe(0);
    expect([0, 1, 2].map((i) => Number(bytes.readBigUInt64LE(4112 + 8 * i)))).toEqual([0, 4, 7]);
    expect(bytes.length).toBe(4112 + 24);
  });

  it('streams a document in chunks and rolls shards only at document boundaries', () => {
    const dir = freshDir();
    const w = new ShardWriter({ directory: dir, vocabSize: 50000, bodId: 1, eodId: 2, maxTokensPerShard: 1000, bufferTokens: 64 });
    w.beginDocument();
    for (let i = 0; i < 50; i++) w.pushTokens(Array.from({ length: 100 }, (_, j) => 3 + ((i * 100 + j) % 40000)));
    w.endDocument();
    w.addDocument([5]);
    const m = w.close();
    expect(m.shards.map((s) => s.numTokens)).toEqual([5002, 3]);
    const t = ShardedTokens.open(m.shards.map((s) => path.join(dir, s.file)).reverse());
    expect(t.documentAt(5001)).toBe(0);
    expect(t.documentAt(5002)).toBe(1);
    expect(Array.from(t.readDocument(1))).toEqual([1, 5, 2]);
    expect(t.readDocument(0)[4000]).toBe(3 + (3999 % 40000));
    t.close();
  });

  it('flushes a document to disk while it is still being written (nothing is materialised)', () => {
    const dir = freshDir();
    const w = new ShardWriter({ directory: dir, vocabSize: 1000, bodId: 1, eodId: 2, bufferTokens: 4096 });
    const chunk = Array.from({ length: 1000 }, (_, j) => 3 + (j % 997));
    w.beginDocument();
    for (let i = 0; i < 300; i++) w.pushTokens(chunk);
    // 300,001 tokens pushed, document still open: all but the last partial buffer is on disk
    const tmp = readdirSync(dir).find((f) => f.includes('.tmp-'))!;
    const onDisk = (statSync(path.join(dir, tmp)).size - SHARD_HEADER_BYTES) / 2;
    expect(onDisk).toBe(Math.floor(300_001 / 4096) * 4096);
    w.endDocument();
    const m = w.close();
    expect(m.numTokens).toBe(300_002);
    const t = ShardedTokens.open(w.manifestPath);
    expect(Array.from(t.readTokens(299_999, 300_002))).toEqual([chunk[998], chunk[999], 2]);
    t.close();
  });

  it('rejects bad options, bad tokens and an empty corpus, leaving no partial file', async () => {
    expect(() => new ShardWriter({ directory: freshDir(), vocabSize: 0, bodId: 1, eodId: 2 })).toThrow(InvalidOptionError);
    expect(() => new ShardWriter({ directory: freshDir(), vocabSize: 10, bodId: 1, eodId: 10 })).toThrow(InvalidOptionError);
    expect(() => new ShardWriter({ directory: freshDir(), vocabSize: 10, bodId: 1, eodId: 2, prefix: 'a/b' })).toThrow(InvalidOptionError);
    const aFile = path.join(root, 'a-file');
    writeFileSync(aFile, 'x');
    expect(() => new ShardWriter({ directory: path.join(aFile, 'sub'), vocabSize: 10, bodId: 1, eodId: 2 })).toThrow(DataWriteError);
    const dir = freshDir();
    const w = new ShardWriter({ directory: dir, vocabSize: 10, bodId: 1, eodId: 2 });
    w.addDocument([3]);
    expect(() => w.addDocument([4, 10])).toThrow(TokenError);
    expect(readdirSync(dir)).toEqual([]);
    const empty = freshDir();
    const e = new ShardWriter({ directory: empty, vocabSize: 10, bodId: 1, eodId: 2 });
    expect(() => e.close()).toThrow(EmptyCorpusError);
    expect(readdirSync(empty)).toEqual([]);
    await expect(writeShards([], { directory: freshDir(), vocabSize: 10, bodId: 1, eodId: 2 })).rejects.toThrow(EmptyCorpusError);
    const encoder = { encode: (s: string) => Array.from(s, (c) => c.charCodeAt(0)) };
    const m = await writeShards([{ id: 'x', text: 'hi' }], { directory: freshDir(), vocabSize: 256, bodId: 1, eodId: 2, encoder });
    expect(m.numTokens).toBe(4);
  });

  it('rejects missing, truncated and corrupted shards with typed errors naming the field', () => {
    const dir = freshDir();
    const w = new ShardWriter({ directory: dir, vocabSize: 100, bodId: 1, eodId: 2 });
    w.addDocument([11, 12, 13]);
    const m = w.close();
    const file = path.join(dir, m.shards[0]!.file);
    const good = readFileSync(file);
    expect(() => TokenShard.open(path.join(dir, 'nope.tokens'))).toThrow(DocumentReadError);
    expect(() => ShardedTokens.open(path.join(dir, 'nope.json'))).toThrow(DocumentReadError);
    const corrupt = (mutate: (b: Buffer) => Buffer, field: string): void => {
      writeFileSync(file, mutate(Buffer.from(good)));
      let err: unknown;
      try {
        TokenShard.open(file).close();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ShardFormatError);
      expect((err as ShardFormatError).field).toBe(field);
    };
    corrupt((b) => b.subarray(0, b.length - 1), 'size');
    corrupt((b) => b.subarray(0, 100), 'header');
    corrupt((b) => (b.write('XXXX', 0, 'latin1'), b), 'magic');
    corrupt((b) => (b.write('}', 12, 'latin1'), b), 'header');
    corrupt((b) => {
      const j = b.toString('utf8', 12, 12 + b.readUInt32LE(8)).replace('"uint16"', '"int128"');
      b.fill(0x20, 12, 4096);
      b.writeUInt32LE(Buffer.byteLength(j), 8);
      b.write(j, 12, 'utf8');
      return b;
    }, 'dtype');
    corrupt((b) => (b.writeBigUInt64LE(4n, b.length - 16), b.writeBigUInt64LE(9n, b.length - 8), b), 'index');
    writeFileSync(file, good);
    writeFileSync(w.manifestPath, '{"format":"apertus-token-shards","shards":[]}');
    expect(() => ShardedTokens.open(w.manifestPath)).toThrow(ShardFormatError);
  });

  it('byte corruption gives either a valid shard or a ShardFormatError, never another error (fuzz)', () => {
    const dir = freshDir();
    const w = new ShardWriter({ directory: dir, vocabSize: 100, bodId: 1, eodId: 2 });
    w.addDocument([11, 12, 13]);
    w.addDocument([14]);
    const m = w.close();
    const file = path.join(dir, m.shards[0]!.file);
    const good = readFileSync(file);
    // corrupt the JSON header region and the index (the token bytes are free-form)
    const offsets = fc.oneof(fc.integer({ min: 0, max: 200 }), fc.integer({ min: good.length - 24, max: good.length - 1 }));
    fc.assert(
      fc.property(fc.array(fc.tuple(offsets, fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }), (edits) => {
        const b = Buffer.from(good);
        for (const [o, v] of edits) b[o] = v;
        writeFileSync(file, b);
        try {
          const t = TokenShard.open(file);
          expect(t.readTokens(0, t.header.numTokens).length).toBe(t.header.numTokens);
          t.close();
        } catch (e) {
          expect(e).toBeInstanceOf(ShardFormatError);
        }
      }),
      { numRuns: 300 },
    );
  });
});
