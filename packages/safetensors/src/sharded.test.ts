// Sharded checkpoints: Hugging Face shard assignment and names, the index file byte for byte,
// lazy reads through the index, and index validation errors.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  deserialize,
  INDEX_FILE_NAME,
  openCheckpoint,
  openCheckpointAsync,
  parseShardIndex,
  parseSize,
  SafetensorsFile,
  SafetensorsHeaderError,
  SafetensorsIndexError,
  SafetensorsIoError,
  SafetensorsNotFoundError,
  SafetensorsWriteError,
  shardFileName,
  ShardedCheckpoint,
  SINGLE_FILE_NAME,
  writeCheckpoint,
  writeCheckpointAsync,
  writeFile,
  type TensorEntry,
} from './index.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'st-sharded-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let counter = 0;
const freshDir = () => path.join(root, `ckpt-${counter++}`);

const u8 = (n: number, fill: number): TensorEntry => ({ dtype: 'U8', shape: [n], data: new Uint8Array(n).fill(fill) });

describe('writeCheckpoint', () => {
  // Caller order a(40) b(40) c(30) d(100) e(10) with maxShardSize 64, following
  // huggingface_hub split_state_dict_into_shards: b does not fit after a, c not after b, d is
  // larger than the limit and gets its own shard right away, e joins c.
  const entries: Array<[string, TensorEntry]> = [
    ['a', u8(40, 1)],
    ['b', u8(40, 2)],
    ['c', u8(30, 3)],
    ['d', u8(100, 4)],
    ['e', u8(10, 5)],
  ];

  it('assigns shards like huggingface_hub and writes the index like Transformers', () => {
    const dir = freshDir();
    const result = writeCheckpoint(dir, entries, { maxShardSize: 64, fsync: false });
    const names = [1, 2, 3, 4].map((i) => `model-0000${i}-of-00004.safetensors`);
    expect(result.files).toEqual(names.map((n) => path.join(dir, n)));
    expect(result.indexFile).toBe(path.join(dir, INDEX_FILE_NAME));
    expect(result.totalSize).toBe(220);
    expect(fs.readdirSync(dir).sort()).toEqual([...names, INDEX_FILE_NAME].sort());
    // json.dumps(index, indent=2, sort_keys=True) + "\n" (checked against CPython 3 by hand)
    expect(fs.readFileSync(result.indexFile!, 'utf8')).toBe(
      '{\n  "metadata": {\n    "total_size": 220\n  },\n  "weight_map": {\n' +
        `    "a": "${names[0]}",\n    "b": "${names[1]}",\n    "c": "${names[3]}",\n` +
        `    "d": "${names[2]}",\n    "e": "${names[3]}"\n  }\n}\n`,
    );
    const shard4 = deserialize(fs.readFileSync(result.files[3]!));
    expect(shard4.keys()).toEqual(['c', 'e']);
    expect(shard4.metadata).toEqual({ format: 'pt' });
  });

  it('writes a single model.safetensors when everything fits, removing a stale index and shards', async () => {
    const dir = freshDir();
    writeCheckpoint(dir, entries, { maxShardSize: 64, fsync: false });
    const result = await writeCheckpointAsync(dir, entries, { fsync: false, metadata: { step: '2' } }); // default 5GB
    expect(result).toEqual({ files: [path.join(dir, SINGLE_FILE_NAME)], indexFile: null, totalSize: 220 });
    expect(fs.readdirSync(dir)).toEqual([SINGLE_FILE_NAME]);
    const ckpt = openCheckpoint(dir);
    expect(ckpt).toBeInstanceOf(SafetensorsFile);
    expect((ckpt as SafetensorsFile).metadata).toEqual({ format: 'pt', step: '2' });
    expect([...ckpt.read('d').data]).toEqual(new Array(100).fill(4));
    ckpt.close();
  });

  it('replaces an earlier layout with more shards by one with fewer', () => {
    const dir = freshDir();
    writeCheckpoint(dir, entries, { maxShardSize: 64, fsync: false });
    writeCheckpoint(dir, entries, { maxShardSize: 120, fsync: false }); // a+b+c = 110 | d+e = 110
    const files = fs.readdirSync(dir).sort();
    expect(files).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', INDEX_FILE_NAME]);
    const ckpt = openCheckpoint(dir) as ShardedCheckpoint;
    expect(ckpt.index.weightMap).toEqual(
      new Map([
        ['a', 'model-00001-of-00002.safetensors'],
        ['b', 'model-00001-of-00002.safetensors'],
        ['c', 'model-00001-of-00002.safetensors'],
        ['d', 'model-00002-of-00002.safetensors'],
        ['e', 'model-00002-of-00002.safetensors'],
      ]),
    );
    ckpt.close();
  });

  it('parses shard sizes like huggingface_hub', () => {
    expect(parseSize('5GB')).toBe(5e9);
    expect(parseSize('2GiB')).toBe(2 * 2 ** 30);
    expect(parseSize('500MB')).toBe(5e8);
    expect(parseSize('1.5kb')).toBe(1500);
    expect(parseSize(4096)).toBe(4096);
    for (const bad of ['5 GBs', 'GB', '-1GB', '0', 0, -5, 1.5, Number.NaN]) expect(() => parseSize(bad)).toThrowError(SafetensorsWriteError);
    expect(() => writeCheckpoint(freshDir(), entries, { maxShardSize: 'lots' })).toThrowError(SafetensorsWriteError);
  });

  it('names shards with five digits', () => {
    expect(shardFileName(0, 3)).toBe('model-00001-of-00003.safetensors');
    expect(shardFileName(11, 12)).toBe('model-00012-of-00012.safetensors');
  });
});

describe('ShardedCheckpoint', () => {
  const dir = freshDir();
  const entries: Record<string, TensorEntry> = {
    'model.embed_tokens.weight': { dtype: 'BF16', shape: [256, 64], data: Uint16Array.from({ length: 256 * 64 }, (_, i) => i) },
    'model.layers.0.mlp.up_proj.weight': { dtype: 'F32', shape: [64, 32], data: Float32Array.from({ length: 2048 }, (_, i) => i / 8) },
    'model.norm.weight': { dtype: 'F32', shape: [64], data: new Float32Array(64).fill(1) },
    'lm_head.weight': { dtype: 'BF16', shape: [256, 64], data: new Uint16Array(256 * 64).fill(0x3f80) },
  };
  writeCheckpoint(dir, entries, { maxShardSize: 40_000, fsync: false });

  it('opens through the index, reading shard headers only', () => {
    const ckpt = openCheckpoint(dir);
    expect(ckpt).toBeInstanceOf(ShardedCheckpoint);
    const s = ckpt as ShardedCheckpoint;
    // 32768 | 8192 + 256 | 32768 bytes: each 32 KiB matrix overflows 40,000 next to anything
    expect(s.shards.size).toBe(3);
    expect(s.index.weightMap.get('model.norm.weight')).toBe('model-00002-of-00003.safetensors');
    expect(s.keys()).toEqual(Object.keys(entries).sort());
    expect(s.index.metadata).toEqual({ total_size: 32768 + 8192 + 256 + 32768 });
    expect(s.totalSize).toBe(s.index.metadata.total_size);
    const headers = [...s.shards.values()].reduce((sum, f) => sum + f.header.dataStart, 0);
    expect(s.bytesRead).toBe(headers);
    expect(s.info('model.norm.weight')).toMatchObject({ dtype: 'F32', shape: [64], byteLength: 256 });
    expect(s.has('model.norm.weight')).toBe(true);
    expect(s.has('nope')).toBe(false);
    const t = s.read('model.layers.0.mlp.up_proj.weight');
    expect(t.dtype).toBe('F32');
    expect(t.data[2047]).toBe(2047 / 8);
    expect(s.bytesRead).toBe(headers + 8192);
    expect(() => s.read('nope')).toThrowError(SafetensorsNotFoundError);
    expect(() => s.read('nope')).toThrowError(`${path.join(dir, INDEX_FILE_NAME)}: tensor "nope"`);
    s.close();
  });

  it('reads every tensor back, sync and async', async () => {
    const ckpt = await openCheckpointAsync(path.join(dir, INDEX_FILE_NAME));
    const bytesOf = (v: ArrayBufferView) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    for (const [name, e] of Object.entries(entries)) {
      const expected = bytesOf(e.data as ArrayBufferView);
      expect(bytesOf(await ckpt.readBytesAsync(name)).equals(expected)).toBe(true);
      const t = await ckpt.readAsync(name);
      expect(t.dtype).toBe(e.dtype);
      expect(t.shape).toEqual(e.shape);
      expect(bytesOf(t.data).equals(expected)).toBe(true);
      expect(bytesOf(ckpt.readBytes(name)).equals(expected)).toBe(true);
    }
    ckpt.close();
  });
});

describe('index validation', () => {
  function setup(index: unknown, raw?: string): string {
    const dir = freshDir();
    fs.mkdirSync(dir);
    writeFile(path.join(dir, 'part-1.safetensors'), { x: u8(4, 1), y: u8(2, 2) });
    fs.writeFileSync(path.join(dir, INDEX_FILE_NAME), raw ?? JSON.stringify(index));
    return path.join(dir, INDEX_FILE_NAME);
  }
  const expectIndexError = (indexFile: string, tensor: string | undefined, message: RegExp) => {
    let caught: unknown;
    try {
      ShardedCheckpoint.open(indexFile);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(SafetensorsIndexError);
    const e = caught as SafetensorsIndexError;
    expect(e.file).toBe(indexFile);
    expect(e.tensor).toBe(tensor);
    expect(e.message).toMatch(message);
    expect(e.message.startsWith(`${indexFile}: `)).toBe(true);
  };

  it('accepts a hand-written index', () => {
    const f = setup({ metadata: { total_size: 6 }, weight_map: { x: 'part-1.safetensors', y: 'part-1.safetensors' } });
    const ckpt = ShardedCheckpoint.open(f);
    expect([...ckpt.read('y').data]).toEqual([2, 2]);
    ckpt.close();
  });

  it('rejects a shard file that does not exist, naming the index and a tensor', () => {
    expectIndexError(setup({ weight_map: { x: 'part-1.safetensors', z: 'part-2.safetensors' } }), 'z', /shard "part-2\.safetensors" cannot be opened: .*ENOENT/);
  });

  it('rejects a tensor missing from its shard', () => {
    expectIndexError(setup({ weight_map: { x: 'part-1.safetensors', w: 'part-1.safetensors' } }), 'w', /does not contain it/);
  });

  it('rejects paths escaping the directory and malformed maps', () => {
    expectIndexError(setup({ weight_map: { x: '../part-1.safetensors' } }), 'x', /relative file name/);
    expectIndexError(setup({ weight_map: { x: '/etc/passwd' } }), 'x', /relative file name/);
    expectIndexError(setup({ weight_map: { x: 3 } }), 'x', /relative file name/);
    expectIndexError(setup({ metadata: {} }), undefined, /"weight_map" must be an object/);
    expectIndexError(setup({ metadata: 'x', weight_map: {} }), undefined, /"metadata" must be an object/);
    expectIndexError(setup([]), undefined, /index must be a JSON object/);
    expectIndexError(setup(null, '{"weight_map":{"x":"part-1.safetensors",}}'), undefined, /invalid JSON in index/);
    expectIndexError(setup(null, '{"weight_map":{"x":"part-1.safetensors","x":"other.safetensors"}}'), undefined, /duplicate key "x"/);
    const latin = setup(null, '{"weight_map":{}}');
    fs.writeFileSync(latin, Buffer.from([0x7b, 0x22, 0xe9, 0x22, 0x3a, 0x31, 0x7d])); // {"\xe9":1}
    expectIndexError(latin, undefined, /not valid UTF-8/);
  });

  it('reports a corrupt shard with its own file and rule', () => {
    const indexFile = setup({ weight_map: { x: 'part-1.safetensors' } });
    const shard = path.join(path.dirname(indexFile), 'part-1.safetensors');
    const bytes = fs.readFileSync(shard);
    bytes[9] = 0xff; // invalid UTF-8 inside the header
    fs.writeFileSync(shard, bytes);
    expect(() => ShardedCheckpoint.open(indexFile)).toThrowError(SafetensorsHeaderError);
    expect(() => ShardedCheckpoint.open(indexFile)).toThrowError(`${shard}: header is not valid UTF-8`);
  });

  it('parseShardIndex exposes metadata and the map in order', () => {
    const idx = parseShardIndex('{"metadata":{"total_size":12,"format":"pt"},"weight_map":{"b":"s.safetensors","a":"s.safetensors"}}', 'i.json');
    expect(idx.metadata).toEqual({ total_size: 12, format: 'pt' });
    expect([...idx.weightMap.keys()]).toEqual(['b', 'a']);
  });

  it('openCheckpoint reports a directory without a checkpoint', () => {
    const dir = freshDir();
    fs.mkdirSync(dir);
    expect(() => openCheckpoint(dir)).toThrowError(SafetensorsIoError);
    expect(() => openCheckpoint(path.join(dir, 'nothing'))).toThrowError(SafetensorsIoError);
  });
});
