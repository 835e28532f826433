// A file written by Python (test/fixtures/gen_fixture.py; see its docstring for which writer),
// with values from numpy and torch recorded in python-writer.expected.json. Our reader must
// return exactly those values, and our writer must reproduce the file byte for byte.
import * as fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { deserialize, SafetensorsFile, serialize, type Dtype, type TensorEntry } from './index.js';

const fixture = (name: string) => fileURLToPath(new URL(`../test/fixtures/${name}`, import.meta.url));
const bytes = new Uint8Array(fs.readFileSync(fixture('python-writer.safetensors')));
const expected = JSON.parse(fs.readFileSync(fixture('python-writer.expected.json'), 'utf8')) as {
  metadata: Record<string, string>;
  tensors: Record<string, { dtype: Dtype; shape: number[]; values: Array<number | string> }>;
};

describe('file written by Python', () => {
  it('is read with the recorded dtypes, shapes, metadata and values', () => {
    const f = deserialize(bytes, 'python-writer.safetensors');
    expect(f.metadata).toEqual(expected.metadata);
    expect(new Set(f.keys())).toEqual(new Set(Object.keys(expected.tensors)));
    expect(Object.keys(expected.tensors)).toHaveLength(18);
    for (const [name, want] of Object.entries(expected.tensors)) {
      const t = f.read(name);
      expect([name, t.dtype, t.shape]).toEqual([name, want.dtype, want.shape]);
      const got = [...t.data].map((v) => (typeof v === 'bigint' ? v.toString() : v));
      expect([name, got]).toEqual([name, want.values]);
    }
    // spot checks written out, independent of the JSON sidecar
    expect([...f.read('bf16.rne').data].slice(6)).toEqual([0x3f80, 0x3f82]); // ties round to even
    expect([...f.read('i64.extremes').data]).toEqual([-(2n ** 63n), 0n, 2n ** 63n - 1n]);
    expect([...f.read('f64.consts').data]).toEqual([Math.E, -Math.PI]);
  });

  it('is read the same lazily from disk', () => {
    const f = SafetensorsFile.open(fixture('python-writer.safetensors'));
    const mem = deserialize(bytes);
    for (const k of mem.keys()) expect(f.readBytes(k)).toEqual(mem.readBytes(k));
    expect(f.bytesRead).toBe(bytes.length);
    f.close();
  });

  it('is reproduced byte for byte by our writer', () => {
    const f = deserialize(bytes);
    const entries: Record<string, TensorEntry> = {};
    for (const name of f.keys()) {
      const info = f.info(name);
      entries[name] = { dtype: info.dtype, shape: info.shape, data: f.readBytes(name) };
    }
    const ours = serialize(entries, expected.metadata);
    expect(Buffer.from(ours).equals(bytes)).toBe(true);
    expect(ours.length).toBe(1480);
  });
});
