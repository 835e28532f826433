// Typed errors. Each class is one kind of failure; the message starts with the file and the
// metadata key or tensor it concerns: `model.gguf: key "apertus.block_count": ...`.

/** Where an error happened: the file, metadata key and/or tensor, when known. */
export interface GgufErrorContext {
  /** Path (or caller-given label) of the file. */
  readonly file?: string;
  /** Metadata key concerned. */
  readonly key?: string;
  /** Tensor name concerned. */
  readonly tensor?: string;
  /** Underlying error, e.g. a Node `fs` error. */
  readonly cause?: unknown;
}

/** Base class of every error thrown by `@apertus/gguf`. */
export class GgufError extends Error {
  /** File the error concerns, if any. */
  readonly file: string | undefined;
  /** Metadata key the error concerns, if any. */
  readonly key: string | undefined;
  /** Tensor the error concerns, if any. */
  readonly tensor: string | undefined;

  constructor(detail: string, context: GgufErrorContext = {}) {
    const where =
      (context.file !== undefined ? `${context.file}: ` : '') +
      (context.key !== undefined ? `key ${JSON.stringify(context.key)}: ` : '') +
      (context.tensor !== undefined ? `tensor ${JSON.stringify(context.tensor)}: ` : '');
    super(`${where}${detail}`, context.cause !== undefined ? { cause: context.cause } : undefined);
    this.name = new.target.name;
    this.file = context.file;
    this.key = context.key;
    this.tensor = context.tensor;
  }
}

/** The file ends before its header, metadata, tensor table or tensor data does. */
export class GgufTruncatedError extends GgufError {}

/** Malformed framing: bad magic, unsupported version, bad value type, bad string, duplicate key or tensor, misaligned offset. */
export class GgufFormatError extends GgufError {}

/** A tensor type id that is unknown or not supported (names the tensor). */
export class GgufQuantTypeError extends GgufError {}

/** `general.architecture` is missing or not `apertus`. */
export class GgufArchitectureError extends GgufError {}

/** A metadata key is missing, has the wrong type, or disagrees with the tensor shapes. */
export class GgufMetadataError extends GgufError {}

/** Invalid input to the writer or the quantizer (names the tensor or key). */
export class GgufWriteError extends GgufError {}

/** An operating-system I/O failure (the Node error is in `cause`). */
export class GgufIoError extends GgufError {}
