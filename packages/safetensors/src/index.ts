// @apertus/safetensors: read and write the safetensors format (huggingface/safetensors),
// lazily from files, in memory, and as sharded Hugging Face checkpoints. This is the Node entry:
// everything in ./browser (the `browser` export) plus files on disk.

export * from './browser.js';
export { SafetensorsFile } from './file.js';
export { writeFile, writeFileAsync } from './write-file.js';
export type { WriteFileOptions } from './write-file.js';
export {
  DEFAULT_MAX_SHARD_SIZE,
  ShardedCheckpoint,
  openCheckpoint,
  openCheckpointAsync,
  parseShardIndex,
  parseSize,
  shardFileName,
  writeCheckpoint,
  writeCheckpointAsync,
} from './sharded.js';
export type { CheckpointWriteResult, ShardIndex, WriteCheckpointOptions } from './sharded.js';
