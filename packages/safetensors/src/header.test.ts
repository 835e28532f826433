// One test per validation rule: each bad header must fail with the exact error class and code.
import { describe, expect, it } from 'vitest';
import {
  MAX_HEADER_SIZE,
  parseHeader,
  SafetensorsDtypeError,
  SafetensorsHeaderError,
  SafetensorsOffsetError,
  SafetensorsShapeError,
  SafetensorsSizeError,
  SafetensorsTrailingDataError,
  SafetensorsTruncatedError,
  type SafetensorsError,
  type SafetensorsErrorCode,
} from './index.js';

const enc = new TextEncoder();

/** A file: 8-byte N, the header bytes as given (no padding added), then `dataLength` data bytes. */
function file(header: string | Uint8Array, dataLength = 0): Uint8Array {
  const h = typeof header === 'string' ? enc.encode(header) : header;
  const out = new Uint8Array(8 + h.length + dataLength);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  for (let i = 0; i < dataLength; i++) out[8 + h.length + i] = i & 0xff;
  return out;
}

const entry = (dtype: string, shape: string, offsets: string) => `{"dtype":${dtype},"shape":${shape},"data_offsets":${offsets}}`;

type ErrorClass = abstract new (...args: never[]) => SafetensorsError;

function expectError(bytes: Uint8Array, cls: ErrorClass, code: SafetensorsErrorCode, tensor?: string): SafetensorsError {
  try {
    parseHeader(bytes, { file: 'x.safetensors' });
  } catch (error) {
    expect(error).toBeInstanceOf(cls);
    const e = error as SafetensorsError;
    expect(e.constructor).toBe(cls);
    expect(e.code).toBe(code);
    expect(e.file).toBe('x.safetensors');
    expect(e.message).toMatch(/^x\.safetensors: /);
    if (tensor !== undefined) {
      expect(e.tensor).toBe(tensor);
      expect(e.message).toContain(`tensor ${JSON.stringify(tensor)}: `);
    }
    return e;
  }
  throw new Error('expected parseHeader to throw');
}

describe('framing: the 8-byte length', () => {
  it('rejects files shorter than 8 bytes', () => {
    for (let n = 0; n < 8; n++) expectError(new Uint8Array(n), SafetensorsTruncatedError, 'HeaderTooSmall');
  });

  it('rejects N above 100,000,000 but not N equal to it', () => {
    const bytes = new Uint8Array(16);
    const view = new DataView(bytes.buffer);
    view.setBigUint64(0, BigInt(MAX_HEADER_SIZE + 1), true);
    expectError(bytes, SafetensorsHeaderError, 'HeaderTooLarge');
    view.setBigUint64(0, (1n << 64n) - 1n, true);
    expectError(bytes, SafetensorsHeaderError, 'HeaderTooLarge');
    view.setBigUint64(0, BigInt(MAX_HEADER_SIZE), true);
    expectError(bytes, SafetensorsTruncatedError, 'InvalidHeaderLength'); // within the limit, past the end
  });

  it('rejects N beyond the file size', () => {
    const good = file('{}');
    const bad = good.slice(0, good.length - 1);
    expectError(bad, SafetensorsTruncatedError, 'InvalidHeaderLength');
    // header-only bytes with a fileSize that cannot hold them
    expect(() => parseHeader(good, { fileSize: 9 })).toThrowError(SafetensorsTruncatedError);
  });
});

describe('framing: UTF-8, first byte, JSON', () => {
  it("rejects a header that does not start with '{'", () => {
    expectError(file(''), SafetensorsHeaderError, 'InvalidHeaderStart');
    expectError(file(' {}'), SafetensorsHeaderError, 'InvalidHeaderStart');
    expectError(file('[]'), SafetensorsHeaderError, 'InvalidHeaderStart');
    expectError(file('\ufeff{}'), SafetensorsHeaderError, 'InvalidHeaderStart'); // a BOM is not '{'
  });

  it('rejects invalid UTF-8', () => {
    expectError(file(Uint8Array.of(0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d)), SafetensorsHeaderError, 'InvalidHeader');
    expectError(file(Uint8Array.of(0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d)), SafetensorsHeaderError, 'InvalidHeader'); // encoded surrogate
  });

  it('rejects malformed JSON', () => {
    for (const bad of [
      '{',
      '{"a":{},}',
      "{'a':{}}",
      '{}x',
      '{} {}',
      '{"a":NaN}',
      '{"a":01}',
      '{"a":-}',
      '{"a":1.}',
      '{"a":"unterminated}',
      '{"a":"tab\there"}',
      '{"a":"\\x41"}',
      '{"a":"\\ud800"}',
      '{"a":"\\udc00x"}',
      '{"a":"\\ud800\\u0041"}',
      '{"a":tru}',
      '{"a" {}}',
      '{"a":[1 2]}',
      '{a:1}',
      '{}\u00a0', // NBSP is not JSON whitespace
    ]) {
      expectError(file(bad), SafetensorsHeaderError, 'InvalidHeaderDeserialization');
    }
  });

  it('limits nesting to 128 levels', () => {
    const nest = (depth: number) => `{"t":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    expect(parseHeader(file(nest(126))).tensors.get('t')?.dtype).toBe('U8'); // 2 object levels + 126 arrays
    expectError(file(nest(127)), SafetensorsHeaderError, 'InvalidHeaderDeserialization');
    expectError(file('['.repeat(100_000)), SafetensorsHeaderError, 'InvalidHeaderStart');
    expectError(file('{"a":' + '['.repeat(100_000)), SafetensorsHeaderError, 'InvalidHeaderDeserialization');
  });
});

describe('duplicate keys (JSON.parse would keep the last silently)', () => {
  it('rejects duplicate tensor names', () => {
    const json = `{"w":${entry('"U8"', '[1]', '[0,1]')},"w":${entry('"U8"', '[2]', '[0,2]')}}`;
    expect(Object.keys(JSON.parse(json) as object)).toEqual(['w']); // what a naive reader would accept
    expectError(file(json, 2), SafetensorsHeaderError, 'DuplicateKey', 'w');
  });

  it('rejects duplicate fields inside an entry and inside __metadata__', () => {
    expectError(file(`{"w":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}}`, 1), SafetensorsHeaderError, 'DuplicateKey');
    expectError(file(`{"__metadata__":{"a":"1","a":"2"}}`), SafetensorsHeaderError, 'DuplicateKey');
    expectError(file(`{"__metadata__":{},"__metadata__":{}}`), SafetensorsHeaderError, 'DuplicateKey');
  });

  it('detects duplicates written with different escapes', () => {
    expectError(file(`{"w":${entry('"U8"', '[0]', '[0,0]')},"\\u0077":${entry('"U8"', '[0]', '[0,0]')}}`), SafetensorsHeaderError, 'DuplicateKey', 'w');
  });
});

describe('entries', () => {
  it('rejects entries that are not objects', () => {
    for (const v of ['[1]', '"F32"', 'null', '3', 'true']) expectError(file(`{"w":${v}}`), SafetensorsHeaderError, 'InvalidEntry', 'w');
  });

  it('rejects unknown, missing and non-string dtypes', () => {
    for (const d of ['"F128"', '"f32"', '"float32"', '""', '3', 'null']) {
      expectError(file(`{"w":${entry(d, '[1]', '[0,4]')}}`, 4), SafetensorsDtypeError, 'UnknownDtype', 'w');
    }
    expectError(file(`{"w":{"shape":[1],"data_offsets":[0,4]}}`, 4), SafetensorsDtypeError, 'UnknownDtype', 'w');
  });

  it('rejects shapes that are not arrays of unsigned integers', () => {
    for (const s of ['[-1]', '[1.5]', '[2.0]', '[1e1]', '["2"]', '[null]', '[[2]]', '2', '{}', '[18446744073709551616]']) {
      expectError(file(`{"w":${entry('"U8"', s, '[0,2]')}}`, 2), SafetensorsShapeError, 'InvalidShape', 'w');
    }
    expectError(file(`{"w":{"dtype":"U8","data_offsets":[0,0]}}`), SafetensorsShapeError, 'InvalidShape', 'w');
    // u64-valid but above 2^53 - 1: only possible for an empty tensor, and JS numbers cannot hold it
    expectError(file(`{"w":${entry('"U8"', '[0,9007199254740992]', '[0,0]')}}`), SafetensorsShapeError, 'InvalidShape', 'w');
  });

  it('rejects malformed data_offsets', () => {
    for (const o of ['[0]', '[0,1,2]', '[]', '0', '{}', '[-1,0]', '[0,1.0]', '[0,"1"]', '[0,9007199254740992]', 'null']) {
      expectError(file(`{"w":${entry('"U8"', '[1]', o)}}`, 1), SafetensorsOffsetError, 'InvalidOffset', 'w');
    }
    expectError(file(`{"w":{"dtype":"U8","shape":[1]}}`, 1), SafetensorsOffsetError, 'InvalidOffset', 'w');
  });

  it('rejects begin > end', () => {
    expectError(file(`{"w":${entry('"U8"', '[1]', '[1,0]')}}`, 1), SafetensorsOffsetError, 'InvalidOffset', 'w');
  });

  it('rejects a byte size different from numel * bits / 8', () => {
    expectError(file(`{"w":${entry('"F32"', '[2,3]', '[0,20]')}}`, 20), SafetensorsSizeError, 'TensorInvalidInfo', 'w');
    expectError(file(`{"w":${entry('"BF16"', '[3]', '[0,3]')}}`, 3), SafetensorsSizeError, 'TensorInvalidInfo', 'w');
    expectError(file(`{"w":${entry('"F4"', '[4]', '[0,1]')}}`, 1), SafetensorsSizeError, 'TensorInvalidInfo', 'w');
  });

  it('checks element-count overflow in dimension order, like the reference checked_mul fold', () => {
    // 2^32 * 2^32 overflows u64 before the 0 is reached; with the 0 first nothing overflows.
    expectError(file(`{"w":${entry('"U8"', '[4294967296,4294967296,0]', '[0,0]')}}`), SafetensorsSizeError, 'ValidationOverflow', 'w');
    expect(parseHeader(file(`{"w":${entry('"U8"', '[0,4294967296,4294967296]', '[0,0]')}}`)).tensors.get('w')).toMatchObject({
      shape: [0, 4294967296, 4294967296],
      numel: 0,
      byteLength: 0,
    });
    // 2^61 U64 elements: the count fits in u64, the bit count does not
    expectError(file(`{"w":${entry('"U64"', '[2305843009213693952]', '[0,8]')}}`, 8), SafetensorsSizeError, 'ValidationOverflow', 'w');
  });

  it('rejects sub-byte tensors that end inside a byte', () => {
    expectError(file(`{"w":${entry('"F4"', '[3]', '[0,2]')}}`, 2), SafetensorsSizeError, 'MisalignedSlice', 'w');
    expectError(file(`{"w":${entry('"F6_E2M3"', '[2]', '[0,2]')}}`, 2), SafetensorsSizeError, 'MisalignedSlice', 'w');
    // whole bytes are fine: 4 x 6 bits = 3 bytes, 2 x 4 bits = 1 byte
    expect(parseHeader(file(`{"w":${entry('"F6_E3M2"', '[4]', '[0,3]')}}`, 3)).tensors.get('w')?.byteLength).toBe(3);
    expect(parseHeader(file(`{"w":${entry('"F4"', '[1,2]', '[0,1]')}}`, 1)).tensors.get('w')?.numel).toBe(2);
  });

  it('ignores unknown fields inside an entry, as the reference does', () => {
    const h = parseHeader(file(`{"w":{"extra":{"x":[1,{"y":null}]},"dtype":"I16","shape":[2],"data_offsets":[0,4]}}`, 4));
    expect(h.tensors.get('w')).toEqual({ name: 'w', dtype: 'I16', shape: [2], dataOffsets: [0, 4], byteLength: 4, numel: 2 });
  });
});

describe('data coverage', () => {
  const two = (a: string, b: string) => `{"a":${entry('"U8"', '[4]', a)},"b":${entry('"U8"', '[4]', b)}}`;

  it('accepts tensors listed out of offset order and returns them in file order', () => {
    const h = parseHeader(file(two('[4,8]', '[0,4]'), 8));
    expect([...h.tensors.keys()]).toEqual(['b', 'a']);
    expect(h.dataSize).toBe(8);
  });

  it('rejects overlapping tensors', () => {
    expectError(file(two('[0,4]', '[2,6]'), 6), SafetensorsOffsetError, 'InvalidOffset', 'b');
    expectError(file(two('[0,4]', '[0,4]'), 4), SafetensorsOffsetError, 'InvalidOffset', 'b');
  });

  it('rejects holes, including before the first tensor', () => {
    expectError(file(two('[0,4]', '[5,9]'), 9), SafetensorsOffsetError, 'InvalidOffset', 'b');
    expectError(file(`{"a":${entry('"U8"', '[4]', '[1,5]')}}`, 5), SafetensorsOffsetError, 'InvalidOffset', 'a');
  });

  it('allows several empty tensors at the same offset', () => {
    const h = parseHeader(file(`{"a":${entry('"F32"', '[0]', '[4,4]')},"b":${entry('"U8"', '[4]', '[0,4]')},"c":${entry('"I64"', '[2,0]', '[4,4]')}}`, 4));
    expect([...h.tensors.keys()]).toEqual(['b', 'a', 'c']);
  });

  it('requires 8 + N + last_end == file size', () => {
    const json = `{"a":${entry('"U8"', '[4]', '[0,4]')}}`;
    expect(parseHeader(file(json, 4)).dataStart).toBe(8 + json.length);
    expectError(file(json, 5), SafetensorsTrailingDataError, 'MetadataIncompleteBuffer');
    expectError(file(json, 3), SafetensorsTruncatedError, 'MetadataIncompleteBuffer', 'a');
    expectError(file('{}', 1), SafetensorsTrailingDataError, 'MetadataIncompleteBuffer');
  });

  it('checks coverage against fileSize when given only the header bytes', () => {
    const json = `{"a":${entry('"U8"', '[4]', '[0,4]')}}`;
    const whole = file(json, 4);
    const head = whole.slice(0, 8 + json.length);
    expect(parseHeader(head, { fileSize: whole.length }).tensors.get('a')?.byteLength).toBe(4);
    expect(() => parseHeader(head, { fileSize: whole.length + 1 })).toThrowError(SafetensorsTrailingDataError);
    expect(() => parseHeader(head)).toThrowError(SafetensorsTruncatedError);
  });
});

describe('__metadata__', () => {
  it('reads a string-to-string map and treats null as absent', () => {
    expect(parseHeader(file('{"__metadata__":{"format":"pt","__proto__":"x"}}')).metadata).toEqual(
      Object.fromEntries([
        ['format', 'pt'],
        ['__proto__', 'x'],
      ]),
    );
    expect(parseHeader(file('{"__metadata__":null}')).metadata).toBeNull();
    expect(parseHeader(file('{}')).metadata).toBeNull();
  });

  it('rejects non-object metadata and non-string values', () => {
    for (const m of ['"pt"', '[]', '3', '{"a":1}', '{"a":null}', '{"a":{"b":"c"}}', '{"a":["x"]}']) {
      expectError(file(`{"__metadata__":${m}}`), SafetensorsHeaderError, 'InvalidMetadata');
    }
  });
});
