// Round trips of every dtype through the in-memory and file writers/readers, the dtype table,
// typed-array views and writer input validation.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DTYPE_INFO,
  DTYPES,
  deserialize,
  isDtype,
  SafetensorsDtypeError,
  SafetensorsFile,
  SafetensorsHeaderError,
  SafetensorsShapeError,
  SafetensorsSizeError,
  SafetensorsWriteError,
  serialize,
  toTypedArray,
  writeFile,
  writeFileAsync,
  type Dtype,
  type TensorEntry,
} from './index.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-roundtrip-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('dtype table', () => {
  it('lists the 22 reference dtypes in enum order with their bit sizes', () => {
    // ecosystem.md section 4: bit sizes 4, 6, 8, 16, 32, 64; BOOL is one byte; C64 is 64 bits
    expect(DTYPES.map((d) => `${d}:${DTYPE_INFO[d].bits}`)).toEqual([
      'BOOL:8', 'F4:4', 'F6_E2M3:6', 'F6_E3M2:6', 'U8:8', 'I8:8', 'F8_E5M2:8', 'F8_E4M3:8', 'F8_E8M0:8',
      'F8_E4M3FNUZ:8', 'F8_E5M2FNUZ:8', 'I16:16', 'U16:16', 'F16:16', 'BF16:16', 'I32:32', 'U32:32', 'F32:32',
      'C64:64', 'F64:64', 'I64:64', 'U64:64',
    ]);
    expect(DTYPES.map((d) => DTYPE_INFO[d].rank)).toEqual(DTYPES.map((_, i) => i));
    expect(isDtype('BF16')).toBe(true);
    expect(isDtype('bf16')).toBe(false);
    expect(isDtype('toString')).toBe(false);
  });

  it('maps each dtype to its natural typed array', () => {
    const bytes = new Uint8Array(8);
    const kinds = Object.fromEntries(DTYPES.map((d) => [d, toTypedArray(d, bytes).constructor.name]));
    expect(kinds).toMatchObject({
      BOOL: 'Uint8Array', F4: 'Uint8Array', F8_E4M3: 'Uint8Array', U8: 'Uint8Array', I8: 'Int8Array',
      I16: 'Int16Array', U16: 'Uint16Array', F16: 'Uint16Array', BF16: 'Uint16Array',
      I32: 'Int32Array', U32: 'Uint32Array', F32: 'Float32Array', C64: 'Float32Array',
      F64: 'Float64Array', I64: 'BigInt64Array', U64: 'BigUint64Array',
    });
  });

  it('views aligned bytes without copying and copies unaligned bytes', () => {
    const buffer = new ArrayBuffer(16);
    const u8 = new Uint8Array(buffer);
    u8.set([0, 0, 0x80, 0x3f, 0, 0, 0, 0x40], 4); // f32 1, 2 at byte 4
    const aligned = toTypedArray('F32', u8.subarray(4, 12));
    expect(aligned.buffer).toBe(buffer);
    expect([...aligned]).toEqual([1, 2]);
    u8.copyWithin(5, 4, 12); // now at byte 5: unaligned
    const copied = toTypedArray('F32', u8.subarray(5, 13));
    expect(copied.buffer).not.toBe(buffer);
    expect(copied.byteOffset).toBe(0);
    expect([...copied]).toEqual([1, 2]);
    expect(() => toTypedArray('F32', u8.subarray(0, 6))).toThrowError(SafetensorsSizeError);
  });
});

/** Deterministic bytes for a tensor of `byteLength` bytes, different per name. */
function pattern(byteLength: number, seed: number): Uint8Array {
  return Uint8Array.from({ length: byteLength }, (_, i) => (i * 131 + seed * 17 + 7) & 0xff);
}

function everyDtype(): Record<string, TensorEntry> {
  const out: Record<string, TensorEntry> = {};
  DTYPES.forEach((dtype, i) => {
    const shape = DTYPE_INFO[dtype].bits < 8 ? [3, 4] : [2, 3]; // 12 x 4 or 6 bits = whole bytes
    const n = (shape[0]! * shape[1]! * DTYPE_INFO[dtype].bits) / 8;
    out[`t.${dtype.toLowerCase()}`] = { dtype, shape, data: pattern(n, i) };
  });
  return out;
}

describe('round trip of every dtype', () => {
  it('in memory: bytes, typed values, shapes, and data 8-aligned', () => {
    const entries = everyDtype();
    const bytes = serialize(entries);
    const f = deserialize(bytes);
    expect(f.header.dataStart % 8).toBe(0);
    expect(new Set(f.keys())).toEqual(new Set(Object.keys(entries)));
    for (const [name, e] of Object.entries(entries)) {
      expect(f.info(name)).toMatchObject({ dtype: e.dtype, shape: e.shape });
      expect(f.readBytes(name)).toEqual(e.data);
      const t = f.read(name);
      expect(t.dtype).toBe(e.dtype);
      expect(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)).toEqual(e.data);
      // the writer's order keeps every tensor aligned to its element size: views are zero-copy
      expect(t.data.buffer).toBe(bytes.buffer);
    }
  });

  it('typed values survive: f32, i64, u64, bf16 bits, f16 bits, bool', () => {
    const bf16 = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0]! >>> 16;
    const f = deserialize(
      serialize({
        f32: { dtype: 'F32', shape: [3], data: new Float32Array([1.5, -0, Number.POSITIVE_INFINITY]) },
        i64: { dtype: 'I64', shape: [2], data: new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n]) },
        u64: { dtype: 'U64', shape: [1], data: new BigUint64Array([2n ** 64n - 1n]) },
        bf16: { dtype: 'BF16', shape: [2], data: new Uint16Array([bf16(-2.5), bf16(0.15625)]) },
        f16: { dtype: 'F16', shape: [2], data: new Uint16Array([0x3c00, 0xfc00]) }, // 1.0, -inf
        bool: { dtype: 'BOOL', shape: [3], data: new Uint8Array([1, 0, 1]) },
        nan: { dtype: 'F64', shape: [1], data: new Float64Array([Number.NaN]) },
      }),
    );
    const get = (n: string) => [...f.read(n).data];
    expect(get('f32')).toEqual([1.5, -0, Number.POSITIVE_INFINITY]);
    expect(get('i64')).toEqual([-(2n ** 63n), 2n ** 63n - 1n]);
    expect(get('u64')).toEqual([2n ** 64n - 1n]);
    expect(get('bf16')).toEqual([0xc020, 0x3e20]);
    expect(get('f16')).toEqual([0x3c00, 0xfc00]);
    expect(get('bool')).toEqual([1, 0, 1]);
    expect(Number.isNaN(get('nan')[0])).toBe(true);
  });

  it('through files, sync and async, with lazy data producers', async () => {
    const entries = everyDtype();
    const p = path.join(dir, 'all.safetensors');
    writeFile(p, entries, { note: 'sync' });
    expect(fs.readFileSync(p)).toEqual(Buffer.from(serialize(entries, { note: 'sync' })));
    const lazy = Object.fromEntries(Object.entries(entries).map(([k, e]) => [k, { ...e, data: () => e.data as Uint8Array }]));
    const q = path.join(dir, 'all-async.safetensors');
    await writeFileAsync(q, lazy, { note: 'sync' });
    expect(fs.readFileSync(q)).toEqual(fs.readFileSync(p));
    const f = await SafetensorsFile.openAsync(q);
    expect(f.metadata).toEqual({ format: 'pt', note: 'sync' });
    for (const [name, e] of Object.entries(entries)) {
      expect(await f.readBytesAsync(name)).toEqual(e.data);
      const t = f.read(name);
      expect(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)).toEqual(e.data);
    }
    f.close();
    expect(fs.readdirSync(dir).filter((n) => n.includes('.tmp-'))).toEqual([]);
  });

  it('property: random tensor sets survive serialize/deserialize, in reference order', () => {
    const entry = fc.tuple(fc.constantFrom<Dtype>(...DTYPES), fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 3 }), fc.nat(255)).map(([dtype, shape, seed]) => {
      const bits = DTYPE_INFO[dtype].bits;
      const s = (shape.reduce((a, b) => a * b, 1) * bits) % 8 === 0 ? shape : [...shape, 4];
      const n = (s.reduce((a, b) => a * b, 1) * bits) / 8;
      return { dtype, shape: s, data: pattern(n, seed) } satisfies TensorEntry;
    });
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 5 }).filter((k) => k !== '__metadata__'), entry, { maxKeys: 6 }), (entries) => {
        const f = deserialize(serialize(entries));
        const names = Object.keys(entries);
        const expectedOrder = [...names].sort((a, b) => {
          const byRank = DTYPE_INFO[entries[b]!.dtype].rank - DTYPE_INFO[entries[a]!.dtype].rank;
          if (byRank !== 0) return byRank;
          return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')); // UTF-8 byte order
        });
        expect(f.keys()).toEqual(expectedOrder);
        for (const name of names) expect(f.readBytes(name)).toEqual(entries[name]!.data);
      }),
      { numRuns: 300 },
    );
  });
});

describe('writer input validation', () => {
  const ok: TensorEntry = { dtype: 'F32', shape: [2], data: new Float32Array(2) };
  const throwsWith = (fn: () => unknown, cls: new (...a: never[]) => Error, code: string, tensor?: string) => {
    let caught: unknown;
    try {
      fn();
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(cls);
    expect((caught as { code: string }).code).toBe(code);
    if (tensor !== undefined) expect((caught as { tensor: string }).tensor).toBe(tensor);
  };

  it('checks the byte length against shape and dtype', () => {
    throwsWith(() => serialize({ w: { dtype: 'F32', shape: [3], data: new Float32Array(2) } }), SafetensorsSizeError, 'InvalidTensorView', 'w');
    throwsWith(() => serialize({ w: { dtype: 'BF16', shape: [2], data: new Float32Array(2) } }), SafetensorsSizeError, 'InvalidTensorView', 'w');
    throwsWith(() => serialize({ w: { dtype: 'U8', shape: [2], data: [1, 2] as unknown as Uint8Array } }), SafetensorsSizeError, 'InvalidTensorView', 'w');
    throwsWith(() => serialize({ w: { dtype: 'U8', shape: [2], data: () => new Uint8Array(3) } }), SafetensorsSizeError, 'InvalidTensorView', 'w');
  });

  it('rejects sub-byte tensors that end inside a byte', () => {
    throwsWith(() => serialize({ w: { dtype: 'F4', shape: [3], data: new Uint8Array(2) } }), SafetensorsSizeError, 'MisalignedSlice', 'w');
  });

  it('rejects bad dtypes, shapes and names', () => {
    throwsWith(() => serialize({ w: { ...ok, dtype: 'F128' as Dtype } }), SafetensorsDtypeError, 'UnknownDtype', 'w');
    for (const shape of [[-1], [1.5], [Number.NaN], ['2'] as unknown as number[], 3 as unknown as number[]]) {
      throwsWith(() => serialize({ w: { ...ok, shape } }), SafetensorsShapeError, 'InvalidShape', 'w');
    }
    throwsWith(() => serialize({ __metadata__: ok }), SafetensorsWriteError, 'InvalidTensorName');
    throwsWith(() => serialize({ 'bad\ud800': ok }), SafetensorsWriteError, 'InvalidTensorName');
    throwsWith(() => serialize([['w', ok], ['w', ok]]), SafetensorsWriteError, 'InvalidTensorName', 'w');
  });

  it('rejects non-string metadata and oversize headers', () => {
    throwsWith(() => serialize({}, { n: 3 as unknown as string }), SafetensorsWriteError, 'InvalidMetadata');
    throwsWith(() => serialize({}, { k: '\udc00' }), SafetensorsWriteError, 'InvalidMetadata');
    throwsWith(() => serialize({}, { big: 'a'.repeat(100_000_000) }), SafetensorsHeaderError, 'HeaderTooLarge');
  });

  it('accepts a Map and an array of pairs, giving the same bytes as an object', () => {
    const bytes = serialize({ a: ok, b: ok });
    expect(serialize(new Map([['b', ok], ['a', ok]]))).toEqual(bytes);
    expect(serialize([['a', ok], ['b', ok]])).toEqual(bytes);
  });
});
