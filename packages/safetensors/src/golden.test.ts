// Byte-exact goldens. Vectors marked "reference" are the expected bytes asserted by the test
// suites of huggingface/safetensors (Rust `safetensors/src/tensor.rs` tests, Python
// `bindings/python/tests/test_pt_*.py`); the others are built by hand from the format rules.
import { describe, expect, it } from 'vitest';
import {
  deserialize,
  SafetensorsHeaderError,
  SafetensorsSizeError,
  SafetensorsTrailingDataError,
  SafetensorsTruncatedError,
  serialize,
  type SafetensorsError,
} from './index.js';

/** Bytes of a string whose characters are all < 256 (like a Python `b"..."` literal). */
const latin1 = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
const f32le = (...v: number[]): Uint8Array => new Uint8Array(new Float32Array(v).buffer);
const zeros = (n: number): string => '\x00'.repeat(n);

describe('writer matches reference goldens (no __metadata__)', () => {
  it('Rust test_serialization: attn.0 F32 [1,2,3]', () => {
    const out = serialize({ 'attn.0': { dtype: 'F32', shape: [1, 2, 3], data: new Float32Array([0, 1, 2, 3, 4, 5]) } }, null);
    // prettier-ignore
    expect([...out]).toEqual([
      64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
      116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
      58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
      101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
      0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64,
    ]);
  });

  it('Rust test_serialization_forced_alignement: 7 spaces of padding', () => {
    const out = serialize({ attn0: { dtype: 'F32', shape: [1, 1, 2, 3], data: new Float32Array([0, 1, 2, 3, 4, 5]) } }, null);
    // prettier-ignore
    expect([...out]).toEqual([
      72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116,
      121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
      91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102,
      115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 32, 32, 32, 32, 32,
      32, 32, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0,
      160, 64,
    ]);
  });

  it('Rust test_serialization_fp4: F4 [1,2] in one byte', () => {
    const out = serialize({ 'attn.0': { dtype: 'F4', shape: [1, 2], data: new Uint8Array([0]) } }, null);
    // prettier-ignore
    expect([...out]).toEqual([
      64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
      116, 121, 112, 101, 34, 58, 34, 70, 52, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
      91, 49, 44, 50, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115, 101, 116,
      115, 34, 58, 91, 48, 44, 49, 93, 125, 125, 32, 32, 32, 32, 0,
    ]);
  });

  it('Rust test_empty: no tensors', () => {
    expect([...serialize({}, null)]).toEqual([8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32]);
  });

  it('Python test_serialization: I32 [2,2] with and without a 1', () => {
    const data = new Int32Array(4);
    const header = '@\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}    ';
    expect(serialize({ test: { dtype: 'I32', shape: [2, 2], data } }, null)).toEqual(latin1(header + zeros(16)));
    data[3] = 1;
    expect(serialize({ test: { dtype: 'I32', shape: [2, 2], data } }, null)).toEqual(latin1(`${header}${zeros(12)}\x01\x00\x00\x00`));
  });

  it('Python test_serialization: BF16 ones with [0,0] = 2.25', () => {
    // bf16 bits built by hand: the top 16 bits of the f32 pattern (both values are exact in bf16).
    const bits = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0]! >>> 16;
    const data = new Uint16Array([bits(2.25), bits(1), bits(1), bits(1)]);
    expect([...data]).toEqual([0x4010, 0x3f80, 0x3f80, 0x3f80]);
    const out = serialize({ test: { dtype: 'BF16', shape: [2, 2], data } }, null);
    expect(out).toEqual(latin1('@\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}}    \x10@\x80?\x80?\x80?'));
  });

  it('Python test_complex: C64 with [1][1] = -1 + 1i', () => {
    const data = new Float32Array(8);
    data[6] = -1;
    data[7] = 1;
    const out = serialize({ test: { dtype: 'C64', shape: [2, 2], data } }, null);
    const header = '@\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"C64","shape":[2,2],"data_offsets":[0,32]}}    ';
    expect(out).toEqual(latin1(`${header}${zeros(26)}\x80\xbf\x00\x00\x80?`));
    const t = deserialize(out).read('test');
    expect(t.dtype).toBe('C64');
    expect([...t.data]).toEqual([0, 0, 0, 0, 0, 0, -1, 1]);
  });
});

describe('writer golden built by hand (default __metadata__, ordering, padding)', () => {
  it('lays out a mixed-dtype file exactly', () => {
    // Order: descending dtype rank (I64 > F32 > BF16 > U8), then name. Header JSON has no
    // whitespace and __metadata__ first; padded with spaces to a multiple of 8.
    const out = serialize(
      {
        'z.u8': { dtype: 'U8', shape: [3], data: new Uint8Array([1, 2, 3]) },
        'b.bf16': { dtype: 'BF16', shape: [2], data: new Uint16Array([0x3f80, 0xc000]) },
        'a.f32': { dtype: 'F32', shape: [], data: new Float32Array([0.5]) },
        'c.i64': { dtype: 'I64', shape: [1], data: new BigInt64Array([-2n]) },
        'a.bf16': { dtype: 'BF16', shape: [0, 4], data: new Uint16Array(0) },
      },
      { source: 'hand' },
    );
    const json =
      '{"__metadata__":{"format":"pt","source":"hand"},' +
      '"c.i64":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},' +
      '"a.f32":{"dtype":"F32","shape":[],"data_offsets":[8,12]},' +
      '"a.bf16":{"dtype":"BF16","shape":[0,4],"data_offsets":[12,12]},' +
      '"b.bf16":{"dtype":"BF16","shape":[2],"data_offsets":[12,16]},' +
      '"z.u8":{"dtype":"U8","shape":[3],"data_offsets":[16,19]}}';
    expect(json.length).toBe(343);
    const n = 344; // next multiple of 8: one space of padding
    const expected = new Uint8Array(8 + n + 19);
    expected.set([n & 0xff, n >> 8], 0);
    expected.set(latin1(json + ' '.repeat(n - json.length)), 8);
    expected.set([0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 8 + n); // -2 as i64 LE
    expected.set(f32le(0.5), 8 + n + 8);
    expected.set([0x80, 0x3f, 0x00, 0xc0], 8 + n + 12);
    expected.set([1, 2, 3], 8 + n + 16);
    expect(out).toEqual(expected);
  });

  it('default metadata is {"format":"pt"}, overridable, and null omits it', () => {
    const header = (bytes: Uint8Array) => new TextDecoder().decode(bytes.subarray(8, 8 + Number(new DataView(bytes.buffer).getBigUint64(0, true))));
    expect(header(serialize({}))).toBe('{"__metadata__":{"format":"pt"}}'); // 32 bytes: no padding
    expect(header(serialize({}, { format: 'mlx', step: '7' }))).toBe('{"__metadata__":{"format":"mlx","step":"7"}}    ');
    expect(header(serialize({}, null))).toBe('{}      ');
  });

  it('escapes names like serde_json and sorts them by code point (UTF-8 byte order)', () => {
    const e = (name: string) => [name, { dtype: 'U8' as const, shape: [0], data: new Uint8Array(0) }] as const;
    // '\uff01' (U+FF01) sorts before '\u{1F600}' in code point order, after it in UTF-16 order.
    const out = serialize([e('\u{1F600}'), e('\uff01'), e('q"\\\n\u0001'), e('é')], null);
    const text = new TextDecoder().decode(out.subarray(8, 8 + out[0]!));
    const names = [...text.matchAll(/("(?:[^"\\]|\\.)*"):\{"dtype"/g)].map((m) => m[1]);
    expect(names).toEqual(['"q\\"\\\\\\n\\u0001"', '"é"', '"\uff01"', '"\u{1F600}"']);
  });
});

describe('reader accepts reference inputs', () => {
  it('Rust/Python test_deserialization: unpadded 60-byte header', () => {
    const f = deserialize(latin1('<\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}' + zeros(16)));
    expect(f.keys()).toEqual(['test']);
    expect(f.info('test')).toMatchObject({ dtype: 'I32', shape: [2, 2], dataOffsets: [0, 16], byteLength: 16, numel: 4 });
    expect(f.read('test').data).toEqual(new Int32Array(4));
    expect(f.metadata).toBeNull();
  });

  it('Rust test_empty_shapes_allowed: scalar I32', () => {
    const f = deserialize(latin1('8\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"I32","shape":[],"data_offsets":[0,4]}}\x00\x00\x00\x00'));
    expect(f.info('test').shape).toEqual([]);
    expect(f.read('test').data).toEqual(new Int32Array(1));
  });

  it('Rust test_zero_sized_tensor: shape [2,0], "[0, 0]" with a space', () => {
    const f = deserialize(latin1('<\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"I32","shape":[2,0],"data_offsets":[0, 0]}}'));
    expect(f.info('test')).toMatchObject({ shape: [2, 0], byteLength: 0, numel: 0 });
    expect(f.readBytes('test').length).toBe(0);
  });

  it('Rust test_whitespace_padded_header: "{}\\r \\t\\n"', () => {
    expect(deserialize(latin1('\x06\x00\x00\x00\x00\x00\x00\x00{}\x0d\x20\x09\x0a')).keys()).toEqual([]);
  });

  it('Python metadata example: {"framework":"pt"} with 7 spaces of padding', () => {
    const f = deserialize(
      latin1('f\x00\x00\x00\x00\x00\x00\x00{"__metadata__":{"framework":"pt"},"test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}       ' + zeros(16)),
    );
    expect(f.metadata).toEqual({ framework: 'pt' });
    expect(f.keys()).toEqual(['test1']);
  });
});

describe('reader rejects reference bad inputs with the reference rule', () => {
  const cases: Array<[string, string, new (...a: never[]) => SafetensorsError, string]> = [
    ['test_header_too_small', '', SafetensorsTruncatedError, 'HeaderTooSmall'],
    ['test_invalid_header_length', '<\x00\x00\x00\x00\x00\x00\x00', SafetensorsTruncatedError, 'InvalidHeaderLength'],
    [
      'test_header_too_large',
      '<\x00\x00\x00\x00\xff\xff\xff{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}' + zeros(16),
      SafetensorsHeaderError,
      'HeaderTooLarge',
    ],
    ['test_invalid_header_non_utf8', '\x01\x00\x00\x00\x00\x00\x00\x00\xff', SafetensorsHeaderError, 'InvalidHeader'],
    ['test_invalid_header_not_json', '\x01\x00\x00\x00\x00\x00\x00\x00{', SafetensorsHeaderError, 'InvalidHeaderDeserialization'],
    [
      'test_whitespace_start_padded_header_is_not_allowed',
      '\x06\x00\x00\x00\x00\x00\x00\x00\x09\x0a{}\x0d\x20',
      SafetensorsHeaderError,
      'InvalidHeaderStart',
    ],
    [
      'test_invalid_info',
      '<\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0, 4]}}',
      SafetensorsSizeError,
      'TensorInvalidInfo',
    ],
    [
      'test_validation_overflow (shape)',
      'O\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"I32","shape":[2,18446744073709551614],"data_offsets":[0,16]}}' + zeros(16),
      SafetensorsSizeError,
      'ValidationOverflow',
    ],
    [
      'test_validation_overflow (bits)',
      'N\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"I32","shape":[2,9223372036854775807],"data_offsets":[0,16]}}' + zeros(16),
      SafetensorsSizeError,
      'ValidationOverflow',
    ],
    [
      'test_metadata_incomplete_buffer (polyglot tail)',
      '<\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}' + zeros(16) + 'extra_bogus_data_for_polyglot_file',
      SafetensorsTrailingDataError,
      'MetadataIncompleteBuffer',
    ],
    [
      'test_metadata_incomplete_buffer (2 bytes missing)',
      '<\x00\x00\x00\x00\x00\x00\x00{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}' + zeros(14),
      SafetensorsTruncatedError,
      'MetadataIncompleteBuffer',
    ],
  ];
  for (const [name, bytes, cls, code] of cases) {
    it(name, () => {
      const data = latin1(bytes);
      expect(() => deserialize(data, 'ref.safetensors')).toThrowError(cls);
      try {
        deserialize(data, 'ref.safetensors');
      } catch (error) {
        expect((error as SafetensorsError).code).toBe(code);
        expect((error as SafetensorsError).file).toBe('ref.safetensors');
        expect((error as Error).message.startsWith('ref.safetensors: ')).toBe(true);
      }
    });
  }
});
