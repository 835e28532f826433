// @apertus/safetensors: read and write the safetensors format (huggingface/safetensors),
// lazily from files, in memory, and as sharded Hugging Face checkpoints.

export { DTYPES, DTYPE_INFO, isDtype, toTypedArray } from './dtype.js';
export type { Dtype, DtypeArrayMap, DtypeInfo, TensorArray } from './dtype.js';
export {
  SafetensorsError,
  SafetensorsHeaderError,
  SafetensorsTruncatedError,
  SafetensorsTrailingDataError,
  SafetensorsDtypeError,
  SafetensorsShapeError,
  SafetensorsOffsetError,
  SafetensorsSizeError,
  SafetensorsNotFoundError,
  SafetensorsWriteError,
  SafetensorsIndexError,
  SafetensorsIoError,
} from './errors.js';
export type { SafetensorsErrorCode, SafetensorsErrorContext } from './errors.js';
export { MAX_HEADER_SIZE, METADATA_KEY, parseHeader } from './header.js';
export type { ParseHeaderOptions, SafetensorsHeader, TensorInfo } from './header.js';
export type { Tensor, TensorReader } from './reader.js';
export { SafetensorsBuffer, deserialize } from './deserialize.js';
export { SafetensorsFile } from './file.js';
export { serialize } from './serialize.js';
export type { MetadataInput, TensorEntries, TensorEntry } from './serialize.js';
export { writeFile, writeFileAsync } from './write-file.js';
export type { WriteFileOptions } from './write-file.js';
export {
  DEFAULT_MAX_SHARD_SIZE,
  INDEX_FILE_NAME,
  SINGLE_FILE_NAME,
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
