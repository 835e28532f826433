// Writer ↔ reader round trip, cross-checked with an independent parser (@huggingface/gguf), and
// the typed errors of the reader; the header parser is fuzzed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gguf as hfGguf } from '@huggingface/gguf';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { GgufError, GgufFormatError, GgufIoError, GgufQuantTypeError, GgufTruncatedError } from './errors';
import { GgufFile } from './file';
import { openGgufFile } from './open';
import { NeedMoreBytes, parseHeader } from './header';
import { quantize } from './quant/index';
import { writeGguf, type GgufEntry, type GgufTensorEntry } from './writer';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-file-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const metadata: [string, GgufEntry][] = [
  ['general.architecture', { type: 'string', value: 'apertus' }],
  ['test.u8', { type: 'u8', value: 200 }],
  ['test.i16', { type: 'i16', value: -3000 }],
  ['test.u64', { type: 'u64', value: 2 ** 40 + 3 }],
  ['test.f64', { type: 'f64', value: Math.PI }],
  ['test.f32', { type: 'f32', value: 0.1 }],
  ['test.bool', { type: 'bool', value: true }],
  ['test.unicode', { type: 'string', value: 'Grüezi 🇨🇭' }],
  ['test.floats', { type: 'array', elem: 'f32', value: [1.5, -2, 0.25] }],
  ['test.strings', { type: 'array', elem: 'string', value: ['a', 'Ġb', ''] }],
];
const x = Float32Array.from({ length: 512 }, (_, i) => Math.sin(i) * 0.1);
const tensors: GgufTensorEntry[] = [
  { name: 'a.f32', type: 'F32', shape: [3], data: () => quantize('F32', Float32Array.of(1, 2, 3)) },
  { name: 'b.q8', type: 'Q8_0', shape: [4, 128], data: () => quantize('Q8_0', x) },
  { name: 'c.q4k', type: 'Q4_K', shape: [2, 256], data: () => quantize('Q4_K', x) },
  { name: 'd.bf16', type: 'BF16', shape: [2, 3, 4], data: () => quantize('BF16', x.subarray(0, 24)) },
];
const file = path.join(dir, 'sample.gguf');
writeGguf(file, metadata, tensors);

describe('GGUF writer and reader', () => {
  it('reads back what was written, tensors lazily at aligned offsets', () => {
    const f = openGgufFile(file);
    expect(f.version).toBe(3);
    expect(f.metadata.get('test.u64')).toBe(2 ** 40 + 3);
    expect(f.metadata.get('test.f32')).toBe(Math.fround(0.1));
    expect(f.metadata.get('test.unicode')).toBe('Grüezi 🇨🇭');
    expect(f.metadata.get('test.strings')).toEqual(['a', 'Ġb', '']);
    expect(f.metadataTypes.get('test.floats')).toBe('array<f32>');
    expect(f.tensors.map((t) => [t.name, t.type.name, t.shape])).toEqual([['a.f32', 'F32', [3]], ['b.q8', 'Q8_0', [4, 128]], ['c.q4k', 'Q4_K', [2, 256]], ['d.bf16', 'BF16', [2, 3, 4]]]);
    for (const t of f.tensors) expect(t.offset % 32).toBe(0);
    expect(Buffer.from(f.read('c.q4k')).equals(Buffer.from(quantize('Q4_K', x)))).toBe(true);
    expect(f.info('b.q8').dims).toEqual([128, 4]);
    f.close();
  });

  it('an independent parser (@huggingface/gguf) reads the same header', async () => {
    const { metadata, tensorInfos } = await hfGguf(file, { allowLocalFile: true });
    const m = metadata as unknown as Record<string, unknown>;
    expect(m['general.architecture']).toBe('apertus');
    expect(m['test.i16']).toBe(-3000);
    expect(Number(m['test.u64'])).toBe(2 ** 40 + 3);
    expect(m['test.strings']).toEqual(['a', 'Ġb', '']);
    const f = openGgufFile(file);
    expect(tensorInfos.map((t) => [t.name, t.dtype, t.shape.map(Number), Number(t.offset) + f.dataOffset])).toEqual(f.tensors.map((t) => [t.name, t.type.id, t.dims, t.offset]));
    f.close();
  });
});

/** The bytes of the sample file. */
const bytes = new Uint8Array(fs.readFileSync(file));

describe('GGUF reader over bytes in memory (the browser entry)', () => {
  it('reads the same header and tensors as from the file; closed, it reads nothing', () => {
    const fromFile = openGgufFile(file);
    const f = GgufFile.fromBytes(bytes, 'picked.gguf');
    expect(f.path).toBe('picked.gguf');
    expect(f.size).toBe(fromFile.size);
    expect([...f.metadata]).toEqual([...fromFile.metadata]);
    expect(f.tensors).toEqual(fromFile.tensors);
    for (const t of f.tensors) expect(f.read(t.name)).toEqual(fromFile.read(t.name));
    fromFile.close();
    f.close();
    expect(() => f.read('a.f32')).toThrow(GgufIoError);
    expect(() => f.read('a.f32')).toThrow(/file is closed/);
  });

  it('truncated bytes give the same typed error, naming the given name', () => {
    expect(() => GgufFile.fromBytes(bytes.subarray(0, bytes.length - 40), 'cut.gguf')).toThrow(GgufTruncatedError);
    expect(() => GgufFile.fromBytes(bytes.subarray(0, bytes.length - 40), 'cut.gguf')).toThrow(/cut\.gguf.*tensor "d\.bf16": data .* ends past the end/);
  });
});

function parse(b: Uint8Array): unknown {
  return parseHeader(b, b.length, 'x.gguf');
}

describe('GGUF reader errors', () => {
  it('a truncated file names the tensor whose data is cut', () => {
    const cut = path.join(dir, 'cut.gguf');
    fs.writeFileSync(cut, bytes.subarray(0, bytes.length - 40));
    expect(() => openGgufFile(cut)).toThrow(GgufTruncatedError);
    expect(() => openGgufFile(cut)).toThrow(/tensor "d\.bf16": data .* ends past the end/);
    expect(() => parse(bytes.subarray(0, 60))).toThrow(GgufTruncatedError);
  });

  it('an unknown tensor type names the tensor', () => {
    const b = bytes.slice();
    // The type id of the first tensor follows its name and one dimension.
    const at = Buffer.from(b).indexOf('a.f32') + 'a.f32'.length + 4 + 8;
    new DataView(b.buffer).setUint32(at, 77, true);
    expect(() => parse(b)).toThrow(GgufQuantTypeError);
    expect(() => parse(b)).toThrow(/tensor "a\.f32": unknown or unsupported ggml type 77/);
  });

  it('bad magic, version and value types are format errors naming the key', () => {
    const magic = bytes.slice(); magic[0] = 0;
    expect(() => parse(magic)).toThrow(/not a GGUF file/);
    const version = bytes.slice(); new DataView(version.buffer).setUint32(4, 9, true);
    expect(() => parse(version)).toThrow(/unsupported GGUF version 9/);
    const vtype = bytes.slice();
    new DataView(vtype.buffer).setUint32(Buffer.from(vtype).indexOf('test.u8') + 7, 42, true);
    expect(() => parse(vtype)).toThrow(GgufFormatError);
    expect(() => parse(vtype)).toThrow(/key "test\.u8": unknown value type 42/);
  });

  it('fuzz: any corruption or truncation gives a GgufError (never a crash or another error)', () => {
    fc.assert(fc.property(
      fc.array(fc.tuple(fc.nat(bytes.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
      fc.nat(bytes.length),
      (edits, len) => {
        const b = bytes.slice(0, Math.max(len, 1));
        for (const [i, v] of edits) if (i < b.length) b[i] = v;
        try {
          parseHeader(b, b.length);
        } catch (e) {
          if (!(e instanceof GgufError) || e instanceof NeedMoreBytes) throw e;
        }
      },
    ), { numRuns: 3000 });
  });

  it('fuzz: a file read in pieces parses exactly as read whole', () => {
    const whole = parseHeader(bytes, bytes.length);
    fc.assert(fc.property(fc.integer({ min: 4, max: bytes.length }), (n) => {
      try {
        expect(parseHeader(bytes.subarray(0, n), bytes.length)).toEqual(whole);
      } catch (e) {
        if (!(e instanceof NeedMoreBytes)) throw e;
      }
    }), { numRuns: 300 });
  });
});
