// readBytesRange: any byte range of a tensor is the same bytes as that slice of readBytes, in
// memory, from a file and from a sharded checkpoint; ranges outside the tensor are typed errors.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { SafetensorsBuffer } from './deserialize.js';
import { SafetensorsOffsetError } from './errors.js';
import { SafetensorsFile } from './file.js';
import { serialize } from './serialize.js';
import { openCheckpoint, writeCheckpoint } from './sharded.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'st-range-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const entries = {
  a: { dtype: 'F32' as const, shape: [7, 9], data: Float32Array.from({ length: 63 }, (_, i) => i * 0.5 - 3) },
  b: { dtype: 'BF16' as const, shape: [130], data: Uint16Array.from({ length: 130 }, (_, i) => i * 7) },
  c: { dtype: 'U8' as const, shape: [3, 5], data: Uint8Array.from({ length: 15 }, (_, i) => 255 - i) },
};

describe('readBytesRange', () => {
  const file = path.join(tmp, 'x.safetensors');
  fs.writeFileSync(file, serialize(entries));
  writeCheckpoint(path.join(tmp, 'sharded'), entries, { maxShardSize: 300 });
  const readers = {
    memory: new SafetensorsBuffer(new Uint8Array(fs.readFileSync(file))),
    file: SafetensorsFile.open(file),
    sharded: openCheckpoint(path.join(tmp, 'sharded')),
  };
  afterAll(() => { readers.file.close(); readers.sharded.close(); });

  for (const [kind, r] of Object.entries(readers)) {
    it(`${kind}: every range is that slice of the tensor's bytes (property test)`, () => {
      fc.assert(fc.property(fc.constantFrom('a', 'b', 'c'), fc.nat(), fc.nat(), (name, x, y) => {
        const all = r.readBytes(name), n = all.length, begin = x % (n + 1), end = begin + (y % (n - begin + 1));
        expect(Array.from(r.readBytesRange(name, begin, end))).toEqual(Array.from(all.subarray(begin, end)));
      }), { numRuns: 200, seed: 9 });
    });
    it(`${kind}: a range outside the tensor is a SafetensorsOffsetError naming it`, () => {
      expect(() => r.readBytesRange('a', 0, 253)).toThrow(SafetensorsOffsetError);
      expect(() => r.readBytesRange('a', 10, 5)).toThrow(/tensor "a": byte range \[10, 5\) is not inside the tensor's 252 bytes/);
      expect(() => r.readBytesRange('b', -1, 2)).toThrow(SafetensorsOffsetError);
    });
  }
});
