// Typed errors. Each class groups one kind of failure; `code` pins the exact rule, using the
// reference error names (huggingface/safetensors `SafeTensorError`) where one exists.

/** Machine-readable reason attached to every {@link SafetensorsError}. */
export type SafetensorsErrorCode =
  // Framing of the 8-byte length and the header (reference names).
  | 'HeaderTooSmall'
  | 'HeaderTooLarge'
  | 'InvalidHeaderLength'
  | 'InvalidHeader'
  | 'InvalidHeaderStart'
  | 'InvalidHeaderDeserialization'
  // Header content.
  | 'DuplicateKey'
  | 'InvalidEntry'
  | 'InvalidMetadata'
  | 'UnknownDtype'
  | 'InvalidShape'
  | 'InvalidOffset'
  | 'ValidationOverflow'
  | 'MisalignedSlice'
  | 'TensorInvalidInfo'
  | 'MetadataIncompleteBuffer'
  // Access, writing, sharding.
  | 'TensorNotFound'
  | 'InvalidTensorView'
  | 'InvalidTensorName'
  | 'InvalidOption'
  | 'InvalidIndex'
  | 'Io'
  | 'Closed'
  | 'BigEndianHost';

/** Where an error happened: the file and/or tensor it concerns, when known. */
export interface SafetensorsErrorContext {
  /** Path (or caller-given label) of the file. */
  readonly file?: string;
  /** Name of the tensor. */
  readonly tensor?: string;
  /** Underlying error, e.g. a Node `fs` error. */
  readonly cause?: unknown;
}

/**
 * Base class of every error thrown by `@apertus/safetensors`. The message starts with the file
 * and tensor when known: `model.safetensors: tensor "lm_head.weight": ...`.
 */
export class SafetensorsError extends Error {
  /** Exact rule that failed. */
  readonly code: SafetensorsErrorCode;
  /** File the error concerns, if any. */
  readonly file: string | undefined;
  /** Tensor the error concerns, if any. */
  readonly tensor: string | undefined;

  constructor(code: SafetensorsErrorCode, detail: string, context: SafetensorsErrorContext = {}) {
    const where =
      (context.file !== undefined ? `${context.file}: ` : '') +
      (context.tensor !== undefined ? `tensor ${JSON.stringify(context.tensor)}: ` : '');
    super(`${where}${detail}`, context.cause !== undefined ? { cause: context.cause } : undefined);
    this.name = new.target.name;
    this.code = code;
    this.file = context.file;
    this.tensor = context.tensor;
  }
}

/** The 8-byte length or the JSON header is malformed (too large, not UTF-8, not JSON, duplicate keys, bad `__metadata__`, an entry that is not an object). */
export class SafetensorsHeaderError extends SafetensorsError {}

/** The file is shorter than its header says (fewer than 8 bytes, header past the end, data past the end, or a short read). */
export class SafetensorsTruncatedError extends SafetensorsError {}

/** Bytes follow the last tensor: the data offsets do not cover the file (reference `MetadataIncompleteBuffer`; blocks polyglot files). */
export class SafetensorsTrailingDataError extends SafetensorsError {}

/** A dtype that is missing, not a string, or not in the dtype table. */
export class SafetensorsDtypeError extends SafetensorsError {}

/** A shape that is not an array of non-negative integers (at most 2^53 - 1). */
export class SafetensorsShapeError extends SafetensorsError {}

/** `data_offsets` malformed (not two non-negative integers, begin > end) or not contiguous (holes or overlaps). */
export class SafetensorsOffsetError extends SafetensorsError {}

/** Byte size does not match `numel * bits / 8`, overflows, or ends inside a byte for sub-byte dtypes. */
export class SafetensorsSizeError extends SafetensorsError {}

/** The requested tensor is not in the file or checkpoint. */
export class SafetensorsNotFoundError extends SafetensorsError {}

/** Invalid input to a writer: a bad tensor name, metadata value or option. */
export class SafetensorsWriteError extends SafetensorsError {}

/** A sharded checkpoint index (`model.safetensors.index.json`) is malformed or disagrees with its shards. */
export class SafetensorsIndexError extends SafetensorsError {}

/** An operating-system I/O failure (the Node error is in `cause`), or use of a closed file. */
export class SafetensorsIoError extends SafetensorsError {}
