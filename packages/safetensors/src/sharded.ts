// Sharded checkpoints, Hugging Face layout:
//   model.safetensors.index.json  {"metadata": {"total_size": <sum of tensor bytes>},
//                                  "weight_map": {"<tensor>": "model-00001-of-00003.safetensors", ...}}
//   model-00001-of-00003.safetensors, ...
// or a single model.safetensors when everything fits in one shard.
//
// Shard assignment follows huggingface_hub `split_state_dict_into_shards`: walk tensors in the
// caller's order, start a new shard when the next tensor would push the current one past
// `maxShardSize`, and give a tensor larger than `maxShardSize` a shard of its own. The index is
// written like Transformers does: `json.dumps(index, indent=2, sort_keys=True) + "\n"`.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { SafetensorsError, SafetensorsIndexError, SafetensorsIoError, SafetensorsNotFoundError, SafetensorsWriteError } from './errors.js';
import { SafetensorsFile } from './file.js';
import type { TensorInfo } from './header.js';
import { jsonToPlain, parseJson } from './json.js';
import type { Tensor, TensorReader } from './reader.js';
import {
  compareCodePoints,
  entryByteLength,
  entryList,
  planSerialization,
  type MetadataInput,
  type TensorEntries,
  type TensorEntry,
} from './serialize.js';
import { writePlanAsync, writePlanSync, writeTextSync, type WriteFileOptions } from './write-file.js';

import { INDEX_FILE_NAME, SINGLE_FILE_NAME } from './names.js';

export { INDEX_FILE_NAME, SINGLE_FILE_NAME };
/** Default `maxShardSize`: `"5GB"` (5 * 10^9 bytes), the Transformers default. */
export const DEFAULT_MAX_SHARD_SIZE = '5GB';

const SHARD_NAME = /^model-\d{5}-of-\d{5}\.safetensors$/;

/** Name of shard `index` (0-based) of `count`: `model-00001-of-00003.safetensors`. */
export function shardFileName(index: number, count: number): string {
  return `model-${String(index + 1).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.safetensors`;
}

const UNITS: Record<string, number> = {
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  TB: 1e12,
  KIB: 2 ** 10,
  MIB: 2 ** 20,
  GIB: 2 ** 30,
  TIB: 2 ** 40,
};

/**
 * Parse a shard size: a byte count, or a string like `"5GB"` (10^9) or `"2GiB"` (2^30), as
 * huggingface_hub `parse_size_to_int` does. Throws `SafetensorsWriteError`.
 */
export function parseSize(size: number | string): number {
  if (typeof size === 'number') {
    if (Number.isSafeInteger(size) && size > 0) return size;
  } else {
    const m = /^\s*(\d+(?:\.\d+)?)\s*([KMGT]I?B|B)\s*$/i.exec(size);
    if (m !== null) {
      const bytes = Math.floor(Number(m[1]) * (UNITS[m[2]!.toUpperCase()] ?? Number.NaN));
      if (Number.isSafeInteger(bytes) && bytes > 0) return bytes;
    }
  }
  throw new SafetensorsWriteError('InvalidOption', `maxShardSize ${JSON.stringify(size)} must be a positive byte count or a size like "5GB"`);
}

/** Options of {@link writeCheckpoint}. */
export interface WriteCheckpointOptions extends WriteFileOptions {
  /** Largest shard, in bytes of tensor data or as `"5GB"`/`"500MiB"` (default `"5GB"`). */
  readonly maxShardSize?: number | string;
  /** `__metadata__` of every shard (see `MetadataInput`; default `{"format":"pt"}`). */
  readonly metadata?: MetadataInput;
}

/** What {@link writeCheckpoint} wrote. */
export interface CheckpointWriteResult {
  /** Paths of the safetensors files written, in shard order. */
  readonly files: string[];
  /** Path of the index file, or `null` for a single `model.safetensors`. */
  readonly indexFile: string | null;
  /** Sum of all tensor byte sizes (the index's `total_size`). */
  readonly totalSize: number;
}

interface ShardPlan {
  readonly shards: Array<Array<readonly [string, TensorEntry]>>;
  readonly totalSize: number;
}

function planShards(entries: TensorEntries, maxShardSize: number, dir: string): ShardPlan {
  const shards: Array<Array<readonly [string, TensorEntry]>> = [];
  let current: Array<readonly [string, TensorEntry]> = [];
  let currentSize = 0;
  let totalSize = 0;
  const seen = new Set<string>();
  for (const pair of entryList(entries)) {
    const [name, entry] = pair;
    const size = entryByteLength(name, entry, dir);
    if (seen.has(name)) throw new SafetensorsWriteError('InvalidTensorName', 'duplicate tensor name', { file: dir, tensor: name });
    seen.add(name);
    totalSize += size;
    if (size > maxShardSize) {
      shards.push([pair]);
      continue;
    }
    if (currentSize + size > maxShardSize) {
      shards.push(current);
      current = [];
      currentSize = 0;
    }
    current.push(pair);
    currentSize += size;
  }
  if (current.length > 0 || shards.length === 0) shards.push(current);
  return { shards, totalSize };
}

// Python json.dumps(..., indent=2, sort_keys=True) with its default ensure_ascii=True.
function pythonJsonDumps(value: unknown, indent = ''): string {
  if (typeof value === 'string') return JSON.stringify(value).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (typeof value === 'number') return String(value);
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort(compareCodePoints);
    if (keys.length === 0) return '{}';
    const inner = indent + '  ';
    const items = keys.map((k) => `${inner}${pythonJsonDumps(k)}: ${pythonJsonDumps((value as Record<string, unknown>)[k], inner)}`);
    return `{\n${items.join(',\n')}\n${indent}}`;
  }
  return JSON.stringify(value);
}

function indexText(weightMap: Record<string, string>, totalSize: number): string {
  return `${pythonJsonDumps({ metadata: { total_size: totalSize }, weight_map: weightMap })}\n`;
}

function staleFiles(dir: string, keep: ReadonlySet<string>): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => (n === INDEX_FILE_NAME || n === SINGLE_FILE_NAME || SHARD_NAME.test(n)) && !keep.has(n))
    .map((n) => path.join(dir, n));
}

function ioError(op: string, file: string, cause: unknown): SafetensorsIoError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new SafetensorsIoError('Io', `${op} failed: ${detail}`, { file, cause });
}

interface CheckpointJob {
  readonly plans: Array<{ file: string; plan: ReturnType<typeof planSerialization> }>;
  readonly index: { file: string; text: string } | null;
  readonly result: CheckpointWriteResult;
  readonly stale: string[];
}

function prepareCheckpoint(dir: string, entries: TensorEntries, options: WriteCheckpointOptions): CheckpointJob {
  const max = parseSize(options.maxShardSize ?? DEFAULT_MAX_SHARD_SIZE);
  const { shards, totalSize } = planShards(entries, max, dir);
  const names = shards.length === 1 ? [SINGLE_FILE_NAME] : shards.map((_, i) => shardFileName(i, shards.length));
  const plans = shards.map((shard, i) => {
    const file = path.join(dir, names[i]!);
    return { file, plan: planSerialization(shard, options.metadata, file) };
  });
  let index: CheckpointJob['index'] = null;
  if (shards.length > 1) {
    const weightMap: Record<string, string> = {};
    shards.forEach((shard, i) => shard.forEach(([name]) => Object.defineProperty(weightMap, name, { value: names[i], enumerable: true, writable: true, configurable: true })));
    index = { file: path.join(dir, INDEX_FILE_NAME), text: indexText(weightMap, totalSize) };
  }
  const keep = new Set(index === null ? names : [...names, INDEX_FILE_NAME]);
  return {
    plans,
    index,
    result: { files: plans.map((p) => p.file), indexFile: index?.file ?? null, totalSize },
    stale: staleFiles(dir, keep),
  };
}

/**
 * Write a checkpoint directory: `model.safetensors` when all tensors fit in `maxShardSize`,
 * else `model-0000i-of-0000N.safetensors` shards plus `model.safetensors.index.json`. Every file
 * is written atomically; the index is written after the shards; checkpoint files left over from
 * an earlier save with a different layout (`model.safetensors`, old shards, old index) are then
 * removed, so `openCheckpoint(dir)` always sees the new checkpoint. Creates `dir` if needed.
 */
export function writeCheckpoint(dir: string, entries: TensorEntries, options: WriteCheckpointOptions = {}): CheckpointWriteResult {
  try {
    fs.mkdirSync(dir, { recursive: true });
  } catch (cause) {
    throw ioError('mkdir', dir, cause);
  }
  const job = prepareCheckpoint(dir, entries, options);
  for (const { file, plan } of job.plans) writePlanSync(file, plan, options);
  if (job.index !== null) writeTextSync(job.index.file, job.index.text, options);
  for (const file of job.stale) fs.rmSync(file, { force: true });
  return job.result;
}

/** Async {@link writeCheckpoint}. */
export async function writeCheckpointAsync(dir: string, entries: TensorEntries, options: WriteCheckpointOptions = {}): Promise<CheckpointWriteResult> {
  try {
    await fs.promises.mkdir(dir, { recursive: true });
  } catch (cause) {
    throw ioError('mkdir', dir, cause);
  }
  const job = prepareCheckpoint(dir, entries, options);
  for (const { file, plan } of job.plans) await writePlanAsync(file, plan, options);
  if (job.index !== null) writeTextSync(job.index.file, job.index.text, options);
  for (const file of job.stale) await fs.promises.rm(file, { force: true });
  return job.result;
}

/** A parsed `model.safetensors.index.json`. */
export interface ShardIndex {
  /** The index's `metadata` object (e.g. `{ total_size: 16060522496 }`). */
  readonly metadata: Readonly<Record<string, unknown>>;
  /** Tensor name to shard file name (relative to the index's directory), in index order. */
  readonly weightMap: ReadonlyMap<string, string>;
}

/** Parse and validate index JSON text; `file` labels errors. Throws `SafetensorsIndexError`. */
export function parseShardIndex(text: string, file: string): ShardIndex {
  let root;
  try {
    root = parseJson(text, { file, what: 'index' });
  } catch (error) {
    if (error instanceof SafetensorsError) throw new SafetensorsIndexError('InvalidIndex', error.message.replace(`${file}: `, ''), { file, tensor: error.tensor, cause: error });
    throw error;
  }
  if (!(root instanceof Map)) throw new SafetensorsIndexError('InvalidIndex', 'index must be a JSON object', { file });
  const meta = root.get('metadata');
  if (meta !== undefined && meta !== null && !(meta instanceof Map)) throw new SafetensorsIndexError('InvalidIndex', '"metadata" must be an object', { file });
  const map = root.get('weight_map');
  if (!(map instanceof Map)) throw new SafetensorsIndexError('InvalidIndex', '"weight_map" must be an object of tensor name to file name', { file });
  const weightMap = new Map<string, string>();
  for (const [tensor, shard] of map) {
    if (typeof shard !== 'string' || !isSafeRelativePath(shard)) {
      throw new SafetensorsIndexError('InvalidIndex', 'weight_map value must be a relative file name inside the checkpoint directory', { file, tensor });
    }
    weightMap.set(tensor, shard);
  }
  return { metadata: (meta instanceof Map ? jsonToPlain(meta) : {}) as Record<string, unknown>, weightMap };
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function decodeIndex(bytes: Uint8Array, file: string): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new SafetensorsIndexError('InvalidIndex', 'index is not valid UTF-8', { file });
  }
}

function isSafeRelativePath(name: string): boolean {
  if (name.length === 0 || name.includes('\0') || path.isAbsolute(name) || path.win32.isAbsolute(name)) return false;
  return name.split(/[\\/]/).every((part) => part !== '..' && part !== '');
}

/**
 * A sharded checkpoint opened through its index. Opening reads the index and every shard's
 * header (never tensor data) and checks that each shard exists and holds the tensors the index
 * assigns to it; tensor data is read lazily per tensor.
 */
export class ShardedCheckpoint implements TensorReader {
  private constructor(
    /** Path of the index file. */
    readonly indexFile: string,
    /** The parsed index. */
    readonly index: ShardIndex,
    /** Open shards by file name (as written in the index). */
    readonly shards: ReadonlyMap<string, SafetensorsFile>,
  ) {}

  /** Open `indexFile` (a `model.safetensors.index.json`) and validate it against its shards. */
  static open(indexFile: string): ShardedCheckpoint {
    let bytes: Uint8Array;
    try {
      bytes = fs.readFileSync(indexFile);
    } catch (cause) {
      throw ioError('read', indexFile, cause);
    }
    const index = parseShardIndex(decodeIndex(bytes, indexFile), indexFile);
    const shards = new Map<string, SafetensorsFile>();
    try {
      for (const name of new Set(index.weightMap.values())) shards.set(name, openShard(indexFile, name, index));
      checkShards(indexFile, index, shards);
    } catch (error) {
      for (const f of shards.values()) f.close();
      throw error;
    }
    return new ShardedCheckpoint(indexFile, index, shards);
  }

  /** Async {@link ShardedCheckpoint.open}. */
  static async openAsync(indexFile: string): Promise<ShardedCheckpoint> {
    let bytes: Uint8Array;
    try {
      bytes = await fs.promises.readFile(indexFile);
    } catch (cause) {
      throw ioError('read', indexFile, cause);
    }
    const index = parseShardIndex(decodeIndex(bytes, indexFile), indexFile);
    const shards = new Map<string, SafetensorsFile>();
    try {
      for (const name of new Set(index.weightMap.values())) shards.set(name, await openShardAsync(indexFile, name, index));
      checkShards(indexFile, index, shards);
    } catch (error) {
      for (const f of shards.values()) f.close();
      throw error;
    }
    return new ShardedCheckpoint(indexFile, index, shards);
  }

  /** Sum of the byte sizes of all indexed tensors (compare with `index.metadata.total_size`). */
  get totalSize(): number {
    let sum = 0;
    for (const name of this.index.weightMap.keys()) sum += this.info(name).byteLength;
    return sum;
  }

  /** Tensor names in index order. */
  keys(): string[] {
    return [...this.index.weightMap.keys()];
  }

  /** True when the index lists the tensor. */
  has(name: string): boolean {
    return this.index.weightMap.has(name);
  }

  /** The shard file holding `name`; throws `SafetensorsNotFoundError`. */
  shardOf(name: string): SafetensorsFile {
    const shard = this.index.weightMap.get(name);
    if (shard === undefined) throw new SafetensorsNotFoundError('TensorNotFound', 'no such tensor in the index', { file: this.indexFile, tensor: name });
    return this.shards.get(shard)!;
  }

  /** Header information for `name`. */
  info(name: string): TensorInfo {
    return this.shardOf(name).info(name);
  }

  /** Read the tensor's bytes from its shard. */
  readBytes(name: string): Uint8Array {
    return this.shardOf(name).readBytes(name);
  }

  /** Read bytes `[begin, end)` of the tensor from its shard. */
  readBytesRange(name: string, begin: number, end: number): Uint8Array {
    return this.shardOf(name).readBytesRange(name, begin, end);
  }

  /** Read the tensor as its typed array. */
  read(name: string): Tensor {
    return this.shardOf(name).read(name);
  }

  /** Async {@link ShardedCheckpoint.readBytes}. */
  readBytesAsync(name: string): Promise<Uint8Array> {
    return this.shardOf(name).readBytesAsync(name);
  }

  /** Async {@link ShardedCheckpoint.read}. */
  readAsync(name: string): Promise<Tensor> {
    return this.shardOf(name).readAsync(name);
  }

  /** Total bytes read from all shards (headers included). */
  get bytesRead(): number {
    let sum = 0;
    for (const f of this.shards.values()) sum += f.bytesRead;
    return sum;
  }

  /** Close every shard. */
  close(): void {
    for (const f of this.shards.values()) f.close();
  }
}

function shardError(indexFile: string, name: string, index: ShardIndex, error: unknown): SafetensorsIndexError {
  const tensor = [...index.weightMap].find(([, f]) => f === name)?.[0];
  const detail = error instanceof Error ? error.message : String(error);
  return new SafetensorsIndexError('InvalidIndex', `shard ${JSON.stringify(name)} cannot be opened: ${detail}`, { file: indexFile, tensor, cause: error });
}

function openShard(indexFile: string, name: string, index: ShardIndex): SafetensorsFile {
  try {
    return SafetensorsFile.open(path.join(path.dirname(indexFile), name));
  } catch (error) {
    if (error instanceof SafetensorsIoError) throw shardError(indexFile, name, index, error);
    throw error; // a corrupt shard reports its own file and rule
  }
}

async function openShardAsync(indexFile: string, name: string, index: ShardIndex): Promise<SafetensorsFile> {
  try {
    return await SafetensorsFile.openAsync(path.join(path.dirname(indexFile), name));
  } catch (error) {
    if (error instanceof SafetensorsIoError) throw shardError(indexFile, name, index, error);
    throw error;
  }
}

function checkShards(indexFile: string, index: ShardIndex, shards: ReadonlyMap<string, SafetensorsFile>): void {
  for (const [tensor, name] of index.weightMap) {
    if (!shards.get(name)!.has(tensor)) {
      throw new SafetensorsIndexError('InvalidIndex', `index assigns the tensor to ${JSON.stringify(name)}, which does not contain it`, { file: indexFile, tensor });
    }
  }
}

/**
 * Open a checkpoint: a directory (its `model.safetensors.index.json` if present, else its
 * `model.safetensors`), or a path to either file directly.
 */
export function openCheckpoint(location: string): SafetensorsFile | ShardedCheckpoint {
  const target = resolveCheckpoint(location);
  return target.endsWith('.json') ? ShardedCheckpoint.open(target) : SafetensorsFile.open(target);
}

/** Async {@link openCheckpoint}. */
export async function openCheckpointAsync(location: string): Promise<SafetensorsFile | ShardedCheckpoint> {
  const target = resolveCheckpoint(location);
  return target.endsWith('.json') ? ShardedCheckpoint.openAsync(target) : SafetensorsFile.openAsync(target);
}

function resolveCheckpoint(location: string): string {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(location);
  } catch (cause) {
    throw ioError('stat', location, cause);
  }
  if (!stat.isDirectory()) return location;
  for (const name of [INDEX_FILE_NAME, SINGLE_FILE_NAME]) {
    const candidate = path.join(location, name);
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new SafetensorsIoError('Io', `no ${INDEX_FILE_NAME} or ${SINGLE_FILE_NAME} in the directory`, { file: location });
}
