import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { DataError, DataWriteError, DocumentReadError, EmptyCorpusError, MegatronFormatError, TokenError } from '../errors';
import { MegatronDatasetWriter, MegatronIndexedDataset, megatronDTypeForVocab, writeMegatronDataset } from './indexed-dataset';

const golden = path.join(import.meta.dirname, '../../test/golden');
const tmp = mkdtempSync(path.join(tmpdir(), 'apertus-megatron-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/**
 * The golden pairs under test/golden were produced by this writer
 * (test/make-megatron-golden.mjs) and then checked with test/megatron_reader.py, an
 * independent numpy parser of Megatron's layout, which printed:
 *   megatron-uint16: code 8, S=3, D=4, lengths [4,3,5], pointers [0,8,14], doc idx [0,1,2,3],
 *     sequences [[1,11,12,2],[1,13,2],[1,65535,14,15,2]], 102 + 24 bytes
 *   megatron-int32: code 4, S=4, D=4, lengths [3,2,3,2], pointers [0,12,20,32], doc idx [0,1,3,4],
 *     sequences [[1,100000,2],[1,5],[6,131071,2],[1,2]], 114 + 40 bytes
 */
const EXPECTED = {
  'megatron-uint16': {
    dtype: 'uint16',
    lengths: [4, 3, 5],
    pointers: [0, 8, 14],
    docs: [0, 1, 2, 3],
    sequences: [[1, 11, 12, 2], [1, 13, 2], [1, 65535, 14, 15, 2]],
    bytes: [102, 24],
  },
  'megatron-int32': {
    dtype: 'int32',
    lengths: [3, 2, 3, 2],
    pointers: [0, 12, 20, 32],
    docs: [0, 1, 3, 4],
    sequences: [[1, 100000, 2], [1, 5], [6, 131071, 2], [1, 2]],
    bytes: [114, 40],
  },
} as const;

async function writeGoldenCopies(dir: string): Promise<void> {
  await writeMegatronDataset(path.join(dir, 'megatron-uint16'), [[11, 12], [13], [65535, 14, 15]], { vocabSize: 65536, bodId: 1, eodId: 2 });
  const w = new MegatronDatasetWriter(path.join(dir, 'megatron-int32'), { vocabSize: 131072, bufferTokens: 2 });
  w.addDocument([1, 100000, 2]);
  w.pushTokens([1, 5]);
  w.endSequence();
  w.pushTokens([6, 131071, 2]);
  w.endSequence();
  w.endDocument();
  w.addDocument([1, 2]);
  w.close();
}

describe('Megatron indexed dataset', () => {
  it('writer reproduces the golden .idx/.bin byte for byte', async () => {
    await writeGoldenCopies(tmp);
    for (const name of Object.keys(EXPECTED)) {
      for (const ext of ['.idx', '.bin']) {
        expect(readFileSync(path.join(tmp, name + ext)).equals(readFileSync(path.join(golden, name + ext))), name + ext).toBe(true);
      }
    }
    expect(readdirSync(tmp).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('reader returns the values the independent numpy reader printed', () => {
    for (const [name, e] of Object.entries(EXPECTED)) {
      const ds = MegatronIndexedDataset.open(path.join(golden, name));
      try {
        expect(ds.dtype).toBe(e.dtype);
        expect(Array.from(ds.sequenceLengths)).toEqual(e.lengths);
        expect(Array.from(ds.sequencePointers)).toEqual(e.pointers);
        expect(Array.from(ds.documentIndices)).toEqual(e.docs);
        expect(ds.numDocuments).toBe(e.docs.length - 1);
        expect(Array.from({ length: ds.length }, (_, i) => Array.from(ds.get(i)))).toEqual(e.sequences);
        expect([readFileSync(path.join(golden, `${name}.idx`)).length, readFileSync(path.join(golden, `${name}.bin`)).length]).toEqual(e.bytes);
      } finally {
        ds.close();
      }
    }
  });

  it('round-trips random documents (property)', () => {
    let k = 0;
    fc.assert(
      fc.property(fc.constantFrom(1000, 131072), fc.array(fc.array(fc.nat(999), { maxLength: 30 }), { minLength: 1, maxLength: 20 }), (vocab, docs) => {
        const prefix = path.join(tmp, `rt${k++}`);
        const w = new MegatronDatasetWriter(prefix, { vocabSize: vocab, bufferTokens: 5 });
        for (const d of docs) w.addDocument(d);
        w.close();
        const ds = MegatronIndexedDataset.open(prefix);
        expect(ds.dtype).toBe(megatronDTypeForVocab(vocab));
        expect(ds.dtype).toBe(vocab > 65536 ? 'int32' : 'uint16');
        expect(Array.from({ length: ds.length }, (_, i) => Array.from(ds.get(i)))).toEqual(docs);
        expect(Array.from(ds.documentIndices)).toEqual(docs.map((_, i) => i).concat(docs.length));
        ds.close();
      }),
      { numRuns: 40 },
    );
  });

  it('rejects bad tokens, empty datasets and corrupted files with typed errors', () => {
    const w = new MegatronDatasetWriter(path.join(tmp, 'bad'), { vocabSize: 100 });
    expect(() => w.addDocument([5, 100])).toThrow(TokenError);
    expect(readdirSync(tmp).filter((f) => f.startsWith('bad'))).toEqual([]);
    expect(() => new MegatronDatasetWriter(path.join(tmp, 'u16'), { dtype: 'uint16' }).pushTokens([65536])).toThrow(TokenError);
    expect(() => new MegatronDatasetWriter(path.join(tmp, 'empty')).close()).toThrow(EmptyCorpusError);
    expect(() => new MegatronDatasetWriter(path.join(tmp, 'no-such-dir', 'x'))).toThrow(DataWriteError);
    expect(() => MegatronIndexedDataset.open(path.join(tmp, 'missing'))).toThrow(DocumentReadError);
    const idx = readFileSync(path.join(golden, 'megatron-uint16.idx'));
    const bin = readFileSync(path.join(golden, 'megatron-uint16.bin'));
    const check = (i: Buffer, b: Buffer, field: string): void => {
      writeFileSync(path.join(tmp, 'c.idx'), i);
      writeFileSync(path.join(tmp, 'c.bin'), b);
      let err: unknown;
      try {
        MegatronIndexedDataset.open(path.join(tmp, 'c')).close();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(MegatronFormatError);
      expect((err as MegatronFormatError).field).toBe(field);
    };
    const copy = (mut: (b: Buffer) => void): Buffer => {
      const c = Buffer.from(idx);
      mut(c);
      return c;
    };
    check(copy((c) => c.write('X', 0, 'latin1')), bin, 'magic');
    check(copy((c) => c.writeBigUInt64LE(2n, 9)), bin, 'version');
    check(copy((c) => c.writeUInt8(9, 17)), bin, 'dtype');
    check(idx.subarray(0, idx.length - 8), bin, 'size');
    check(idx.subarray(0, 20), bin, 'header');
    check(copy((c) => c.writeBigInt64LE(9n, 34 + 12 + 8)), bin, 'sequence_pointers');
    check(copy((c) => c.writeBigInt64LE(0n, idx.length - 16)), bin, 'document_indices');
    check(idx, bin.subarray(0, bin.length - 2), 'size');
  });

  it('fuzzed .idx/.bin pairs either read back consistently or throw MegatronFormatError naming the file (property)', () => {
    const idx = readFileSync(path.join(golden, 'megatron-int32.idx'));
    const bin = readFileSync(path.join(golden, 'megatron-int32.bin'));
    const edit = fc.record({
      file: fc.constantFrom('idx', 'bin'),
      kind: fc.constantFrom('byte', 'truncate', 'extend'),
      at: fc.nat(),
      value: fc.integer({ min: 0, max: 255 }),
    });
    let k = 0;
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 4 }), (edits) => {
        const files = { idx: Buffer.from(idx), bin: Buffer.from(bin) };
        for (const e of edits) {
          const b = files[e.file as 'idx' | 'bin'];
          if (e.kind === 'byte' && b.length > 0) b[e.at % b.length] = e.value;
          else if (e.kind === 'truncate') files[e.file as 'idx' | 'bin'] = b.subarray(0, e.at % (b.length + 1));
          else files[e.file as 'idx' | 'bin'] = Buffer.concat([b, Buffer.from([e.value])]);
        }
        const prefix = path.join(tmp, `fuzz${k++}`);
        writeFileSync(`${prefix}.idx`, files.idx);
        writeFileSync(`${prefix}.bin`, files.bin);
        let ds: MegatronIndexedDataset | undefined;
        try {
          ds = MegatronIndexedDataset.open(prefix);
          // Opened: every sequence is inside the .bin, and the lengths add up to its size.
          let total = 0;
          for (let i = 0; i < ds.length; i++) total += ds.get(i).length;
          expect(total * { uint8: 1, int8: 1, int16: 2, uint16: 2, int32: 4, float32: 4, int64: 8, float64: 8 }[ds.dtype]).toBe(files.bin.length);
        } catch (e) {
          expect(e).toBeInstanceOf(DataError);
          expect(e).toBeInstanceOf(MegatronFormatError);
          expect((e as MegatronFormatError).file).toMatch(new RegExp(`fuzz${k - 1}\\.(idx|bin)$`));
        } finally {
          ds?.close();
        }
      }),
      { numRuns: 300 },
    );
  });
});
