// @apertus/safetensors, browser entry: the format in memory — parse, validate, read and serialize
// from bytes, a `fetch` Response or a File — with nothing from Node (the package's `browser` export).

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
export { serialize } from './serialize.js';
export type { MetadataInput, TensorEntries, TensorEntry } from './serialize.js';
export { readSafetensors, type SafetensorsSource } from './fetch.js';
export { INDEX_FILE_NAME, SINGLE_FILE_NAME } from './names.js';
