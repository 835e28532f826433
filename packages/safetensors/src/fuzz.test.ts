// Fuzzing the header parser: random bytes, random JSON, header-shaped random objects and
// mutations of valid files. A parse either succeeds with every invariant of the format holding
// (so no tensor can reach outside the buffer) or throws a SafetensorsError subclass; nothing else.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJson, jsonToPlain } from './json.js';
import {
  DTYPE_INFO,
  DTYPES,
  deserialize,
  SafetensorsError,
  SafetensorsFile,
  serialize,
  type Dtype,
  type TensorEntry,
} from './index.js';

function expectSafetensorsSubclass(error: unknown): void {
  expect(error).toBeInstanceOf(SafetensorsError);
  expect((error as object).constructor).not.toBe(SafetensorsError);
}

/** Parse `bytes`; on success check every format invariant, on failure check the error type. */
function check(bytes: Uint8Array): 'ok' | 'error' {
  let f;
  try {
    f = deserialize(bytes);
  } catch (error) {
    expectSafetensorsSubclass(error);
    return 'error';
  }
  const h = f.header;
  expect(h.dataStart).toBe(8 + h.headerSize);
  expect(h.dataStart + h.dataSize).toBe(bytes.length);
  let cursor = 0;
  for (const [name, info] of h.tensors) {
    expect(info.name).toBe(name);
    expect(info.dataOffsets[0]).toBe(cursor);
    cursor = info.dataOffsets[1];
    expect(info.byteLength * 8).toBe(info.numel * DTYPE_INFO[info.dtype].bits);
    const got = f.readBytes(name);
    expect(got.length).toBe(info.byteLength);
    expect(got.byteOffset + got.length).toBeLessThanOrEqual(bytes.byteOffset + bytes.length);
    expect(f.read(name).data.byteLength).toBe(info.byteLength);
  }
  expect(cursor).toBe(h.dataSize);
  return 'ok';
}

const withLength = (header: Uint8Array, tail: Uint8Array): Uint8Array => {
  const out = new Uint8Array(8 + header.length + tail.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(header.length), true);
  out.set(header, 8);
  out.set(tail, 8 + header.length);
  return out;
};

const enc = new TextEncoder();

const smallDtype = fc.constantFrom<Dtype>(...DTYPES);
const validEntry: fc.Arbitrary<TensorEntry> = fc
  .tuple(smallDtype, fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }))
  .map(([dtype, shape]) => {
    const numel = shape.reduce((a, b) => a * b, 1);
    const bits = numel * DTYPE_INFO[dtype].bits;
    const fixed = bits % 8 === 0 ? shape : [...shape, 2, 4]; // make sub-byte sizes whole bytes
    const n = (fixed.reduce((a, b) => a * b, 1) * DTYPE_INFO[dtype].bits) / 8;
    return { dtype, shape: fixed, data: Uint8Array.from({ length: n }, (_, i) => (i * 37 + 11) & 0xff) };
  });
const validFile = fc
  .dictionary(fc.string({ maxLength: 6 }).filter((s) => s !== '__metadata__'), validEntry, { maxKeys: 5 })
  .chain((entries) => fc.constantFrom(serialize(entries), serialize(entries, null), serialize(entries, { k: 'v' })));

describe('fuzz: parser only ever throws SafetensorsError subclasses', () => {
  it('random bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (b) => void check(b)), { numRuns: 2000 });
  });

  it('random bytes behind a correct length prefix', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.uint8Array({ maxLength: 40 }), (h, t) => void check(withLength(h, t))),
      { numRuns: 1000 },
    );
  });

  it('random JSON values as the header', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.uint8Array({ maxLength: 40 }), (v, t) => void check(withLength(enc.encode(JSON.stringify(v)), t))),
      { numRuns: 1000 },
    );
  });

  it('header-shaped random objects', () => {
    const num = fc.oneof(
      fc.integer({ min: -1, max: 12 }).map(String),
      fc.constantFrom('1.5', '2.0', '1e1', '18446744073709551615', '18446744073709551616', '9007199254740993', '"3"', 'null'),
    );
    const arr = (min: number, max: number) => fc.array(num, { minLength: min, maxLength: max }).map((a) => `[${a.join(',')}]`);
    const dtype = fc.oneof(smallDtype.map((d) => JSON.stringify(d)), fc.constantFrom('"F128"', '3', 'null', '"bf16"'));
    const ent = fc.oneof(
      { weight: 8, arbitrary: fc.tuple(dtype, arr(0, 3), arr(1, 3)).map(([d, s, o]) => `{"dtype":${d},"shape":${s},"data_offsets":${o}}`) },
      { weight: 1, arbitrary: fc.constantFrom('[]', '"x"', '{}', 'null', '{"dtype":"U8"}') },
    );
    const meta = fc.constantFrom('', '"__metadata__":{"format":"pt"},', '"__metadata__":{"a":1},', '"__metadata__":null,', '"__metadata__":[],');
    const header = fc
      .tuple(meta, fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'a', '__metadata__', 'é'), ent), { maxLength: 4 }))
      .map(([m, es]) => `{${m}${es.map(([k, e]) => `${JSON.stringify(k)}:${e}`).join(',')}}`.replace(',}', '}'));
    const seen = { ok: 0, error: 0 };
    fc.assert(
      fc.property(header, fc.nat(7), (h, pad) => {
        const bytes = enc.encode(h + ' '.repeat(pad));
        // every data length up to 24 bytes, so the one the offsets call for is among them
        for (let dataLength = 0; dataLength <= 24; dataLength++) seen[check(withLength(bytes, new Uint8Array(dataLength)))]++;
      }),
      { numRuns: 1000 },
    );
    expect(seen.ok).toBeGreaterThan(100); // a fair share gets through every rule
    expect(seen.error).toBeGreaterThan(10_000);
  });

  it('valid files with bytes flipped, set, inserted or deleted', () => {
    const mutate = fc.tuple(fc.constantFrom('flip', 'set', 'insert', 'delete'), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 7 }));
    fc.assert(
      fc.property(validFile, fc.array(mutate, { minLength: 1, maxLength: 3 }), (file, ops) => {
        expect(check(file)).toBe('ok');
        let b = Uint8Array.from(file);
        for (const [op, at, value, bit] of ops) {
          const i = b.length === 0 ? 0 : at % b.length;
          if (op === 'flip' && b.length > 0) b[i]! ^= 1 << bit;
          else if (op === 'set' && b.length > 0) b[i] = value;
          else if (op === 'insert') b = Uint8Array.from([...b.subarray(0, i), value, ...b.subarray(i)]);
          else if (op === 'delete') b = Uint8Array.from([...b.subarray(0, i), ...b.subarray(i + 1)]);
        }
        void check(b);
      }),
      { numRuns: 1500 },
    );
  });

  it('valid files with data_offsets and shapes rewritten to random numbers', () => {
    const seen = { ok: 0, error: 0 };
    fc.assert(
      fc.property(validFile, fc.array(fc.integer({ min: -1, max: 70 }), { minLength: 1, maxLength: 8 }), (file, numbers) => {
        const n = Number(new DataView(file.buffer).getBigUint64(0, true));
        let i = 0;
        const json = new TextDecoder().decode(file.subarray(8, 8 + n)).replace(/\d+/g, (m) => (i < numbers.length ? String(numbers[i++]) : m));
        seen[check(withLength(enc.encode(json), file.subarray(8 + n)))]++;
      }),
      { numRuns: 1500 },
    );
    expect(seen.ok).toBeGreaterThan(10);
    expect(seen.error).toBeGreaterThan(500);
  });

  it('a small file truncated at every length, in memory', () => {
    const file = serialize({
      a: { dtype: 'F32', shape: [2], data: new Float32Array([1, 2]) },
      b: { dtype: 'U8', shape: [3], data: new Uint8Array([1, 2, 3]) },
      c: { dtype: 'F4', shape: [2, 2], data: new Uint8Array([0x12, 0x34]) },
    });
    expect(check(file)).toBe('ok');
    for (let len = 0; len < file.length; len++) expect(check(file.subarray(0, len))).toBe('error');
  });
});

describe('fuzz: the lazy file reader on truncated files', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-fuzz-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('throws a SafetensorsError subclass at every truncation length and never reads past the end', () => {
    const file = serialize({
      x: { dtype: 'I64', shape: [2], data: new BigInt64Array([1n, -1n]) },
      y: { dtype: 'BF16', shape: [3], data: new Uint16Array([1, 2, 3]) },
    });
    const p = path.join(dir, 't.safetensors');
    for (let len = 0; len <= file.length; len++) {
      fs.writeFileSync(p, file.subarray(0, len));
      let f: SafetensorsFile;
      try {
        f = SafetensorsFile.open(p);
      } catch (error) {
        expect(len).toBeLessThan(file.length);
        expectSafetensorsSubclass(error);
        continue;
      }
      expect(len).toBe(file.length);
      for (const k of f.keys()) expect(f.readBytes(k)).toEqual(deserialize(file).readBytes(k));
      expect(f.bytesRead).toBe(file.length);
      f.close();
    }
  });
});

describe('the strict JSON parser agrees with JSON.parse', () => {
  it('on JSON text it did not write (random values)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = JSON.stringify(v);
        expect(jsonToPlain(parseJson(text, { what: 't' }))).toEqual(JSON.parse(text));
      }),
      { numRuns: 1000 },
    );
  });

  it('on random strings over a JSON alphabet, except duplicates, lone surrogates and depth', () => {
    const alphabet = fc.constantFrom(...'{}[]",:0123456789-+.eE \\u/abtnrfl"'.split(''), 'true', 'null', '"a"', '\\ud800');
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 30 }), (parts) => {
        const text = parts.join('');
        let expected: unknown;
        let nativeOk = true;
        try {
          expected = JSON.parse(text);
        } catch {
          nativeOk = false;
        }
        try {
          const ours = jsonToPlain(parseJson(text, { what: 't' }));
          expect(nativeOk).toBe(true);
          expect(ours).toEqual(expected);
        } catch (error) {
          if (!(error instanceof SafetensorsError)) throw error;
          if (nativeOk) expect(error.code === 'DuplicateKey' || /surrogate/.test(error.message)).toBe(true);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
