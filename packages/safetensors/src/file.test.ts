// Lazy file reading (only the header and the requested bytes are read), alignment of returned
// arrays, and the streaming, atomic writer.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  deserialize,
  SafetensorsFile,
  SafetensorsHeaderError,
  SafetensorsIoError,
  SafetensorsNotFoundError,
  SafetensorsTruncatedError,
  serialize,
  writeFile,
  writeFileAsync,
  type TensorEntry,
} from './index.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-file-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const MB = 1 << 20;
/** Byte equality of two typed arrays (vitest's element-wise toEqual is slow on MiB arrays). */
const sameBytes = (a: ArrayBufferView, b: ArrayBufferView): boolean =>
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
const big = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => (i % 1000) * 0.5 + seed);

function threeTensorFile(name: string): { file: string; entries: Record<string, TensorEntry> } {
  const entries = {
    'model.embed_tokens.weight': { dtype: 'F32', shape: [MB / 4, 4], data: big(MB, 1) },
    'model.norm.weight': { dtype: 'F32', shape: [4], data: new Float32Array([1, 2, 3, 4]) },
    'lm_head.weight': { dtype: 'F32', shape: [MB / 4, 4], data: big(MB, 2) },
  } satisfies Record<string, TensorEntry>;
  const file = path.join(dir, name);
  writeFile(file, entries);
  return { file, entries };
}

describe('SafetensorsFile (lazy)', () => {
  it('reads only the header on open and only the requested bytes per tensor', () => {
    const { file } = threeTensorFile('lazy.safetensors');
    const size = fs.statSync(file).size;
    expect(size).toBeGreaterThan(8 * MB);
    const f = SafetensorsFile.open(file);
    const headerBytes = f.header.dataStart; // 8 + N
    expect(f.bytesRead).toBe(headerBytes);
    expect(headerBytes).toBeLessThan(512);
    const norm = f.read('model.norm.weight');
    expect([...norm.data]).toEqual([1, 2, 3, 4]);
    expect(f.bytesRead).toBe(headerBytes + 16);
    const head = f.read('lm_head.weight');
    expect(head.data.length).toBe(MB);
    expect(head.data[1001]).toBe(1 * 0.5 + 2);
    expect(f.bytesRead).toBe(headerBytes + 16 + 4 * MB);
    expect(size - f.bytesRead).toBe(4 * MB); // everything but the embedding's 4 MiB
    f.close();
  });

  it('returns fresh, aligned arrays and agrees with the in-memory reader', async () => {
    const { file, entries } = threeTensorFile('agree.safetensors');
    const f = SafetensorsFile.open(file);
    const mem = deserialize(fs.readFileSync(file));
    expect(f.keys()).toEqual(mem.keys());
    expect(f.keys()).toEqual(['lm_head.weight', 'model.embed_tokens.weight', 'model.norm.weight']);
    const all = await Promise.all(f.keys().map((k) => f.readAsync(k)));
    for (const [i, k] of f.keys().entries()) {
      expect(all[i]!.data.byteOffset).toBe(0);
      expect(all[i]!.data.constructor).toBe(Float32Array);
      expect(sameBytes(all[i]!.data, entries[k]!.data as Float32Array)).toBe(true);
      expect(sameBytes(f.read(k).data, mem.read(k).data)).toBe(true);
      expect(f.info(k)).toEqual(mem.info(k));
    }
    expect(f.metadata).toEqual({ format: 'pt' });
    f.close();
  });

  it('names the file and tensor when a tensor is missing, and fails after close', async () => {
    const { file } = threeTensorFile('missing.safetensors');
    const f = SafetensorsFile.open(file);
    expect(f.has('nope')).toBe(false);
    expect(() => f.read('nope')).toThrowError(SafetensorsNotFoundError);
    expect(() => f.read('nope')).toThrowError(`${file}: tensor "nope": no such tensor`);
    const pending = f.readAsync('model.norm.weight'); // in flight while closing
    f.close();
    expect([...(await pending).data]).toEqual([1, 2, 3, 4]);
    expect(() => f.readBytes('model.norm.weight')).toThrowError(SafetensorsIoError);
    await expect(f.readAsync('model.norm.weight')).rejects.toThrowError(SafetensorsIoError);
    f.close(); // idempotent
  });

  it('wraps open errors and reports corrupt or shrunk files', async () => {
    const missing = path.join(dir, 'does-not-exist.safetensors');
    expect(() => SafetensorsFile.open(missing)).toThrowError(SafetensorsIoError);
    try {
      SafetensorsFile.open(missing);
    } catch (e) {
      expect((e as { cause: { code: string } }).cause.code).toBe('ENOENT');
    }
    await expect(SafetensorsFile.openAsync(missing)).rejects.toThrowError(SafetensorsIoError);

    const corrupt = path.join(dir, 'corrupt.safetensors');
    const bytes = serialize({ a: { dtype: 'U8', shape: [1], data: new Uint8Array([1]) } });
    bytes[8] = 0x5b; // '[' instead of '{'
    fs.writeFileSync(corrupt, bytes);
    expect(() => SafetensorsFile.open(corrupt)).toThrowError(SafetensorsHeaderError);
    await expect(SafetensorsFile.openAsync(corrupt)).rejects.toThrowError(`${corrupt}: header must start with '{'`);

    const { file } = threeTensorFile('shrunk.safetensors');
    const f = SafetensorsFile.open(file);
    fs.truncateSync(file, f.header.dataStart + 10);
    expect(() => f.read('lm_head.weight')).toThrowError(SafetensorsTruncatedError);
    f.close();
  });
});

describe('in-memory reads from unaligned buffers', () => {
  it('is zero-copy when aligned and copies when not', () => {
    const bytes = serialize({ x: { dtype: 'F64', shape: [2], data: new Float64Array([1.25, -3]) } });
    const aligned = deserialize(bytes).read('x');
    expect(aligned.data.buffer).toBe(bytes.buffer);
    const shifted = new Uint8Array(bytes.length + 3);
    shifted.set(bytes, 3);
    const view = shifted.subarray(3);
    const copied = deserialize(view).read('x');
    expect(copied.data.buffer).not.toBe(shifted.buffer);
    expect([...copied.data]).toEqual([1.25, -3]);
    expect(deserialize(view).readBytes('x').buffer).toBe(shifted.buffer); // raw bytes stay views
  });
});

describe('writeFile: streaming and atomic', () => {
  it('writes the header first, then each tensor in order, into a temporary sibling', () => {
    const target = path.join(dir, 'stream.safetensors');
    const seenSizes: number[] = [];
    const producer = (value: number) => () => {
      const tmp = fs.readdirSync(dir).filter((n) => n.startsWith(`.stream.safetensors.tmp-${process.pid}-`));
      expect(tmp).toHaveLength(1);
      expect(fs.existsSync(target)).toBe(false); // nothing at the final path until the rename
      seenSizes.push(fs.statSync(path.join(dir, tmp[0]!)).size);
      return new Float32Array(1024).fill(value);
    };
    writeFile(target, { a: { dtype: 'F32', shape: [1024], data: producer(1) }, b: { dtype: 'F32', shape: [1024], data: producer(2) } });
    const f = SafetensorsFile.open(target);
    const start = f.header.dataStart;
    expect(seenSizes).toEqual([start, start + 4096]); // a is produced after the header, b after a
    expect(f.read('b').data[1023]).toBe(2);
    f.close();
    expect(fs.readdirSync(dir).filter((n) => n.includes('.tmp-'))).toEqual([]);
  });

  it('leaves the previous file intact and no temporary file when writing fails midway', async () => {
    const target = path.join(dir, 'keep.safetensors');
    writeFile(target, { old: { dtype: 'U8', shape: [2], data: new Uint8Array([7, 7]) } });
    const before = fs.readFileSync(target);
    const failing = {
      a: { dtype: 'U8', shape: [4], data: new Uint8Array(4) },
      b: {
        dtype: 'U8',
        shape: [4],
        data: () => {
          throw new Error('disk full (simulated)');
        },
      },
    } satisfies Record<string, TensorEntry>;
    expect(() => writeFile(target, failing)).toThrowError(/disk full \(simulated\)/);
    await expect(writeFileAsync(target, failing)).rejects.toThrowError(SafetensorsIoError);
    expect(() => writeFile(target, { w: { dtype: 'U8', shape: [4], data: () => new Uint8Array(5) } })).toThrowError(/needs 4 bytes but data has 5/);
    expect(fs.readFileSync(target)).toEqual(before);
    expect(fs.readdirSync(dir).filter((n) => n.includes('.tmp-'))).toEqual([]);
  });

  it('reports a missing directory as an I/O error', () => {
    expect(() => writeFile(path.join(dir, 'no', 'such', 'dir.safetensors'), {})).toThrowError(SafetensorsIoError);
  });
});
