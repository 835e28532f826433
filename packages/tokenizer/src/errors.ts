// Typed errors. One class for the whole package; `code` names the rule that failed and `field`
// is the JSON path inside tokenizer.json / tokenizer_config.json (e.g. `model.merges[12]`).

/** Machine-readable reason attached to every {@link TokenizerError}. */
export type TokenizerErrorCode =
  /** The file is not valid JSON. */
  | 'InvalidJson'
  /** A field is missing or has the wrong type / value. */
  | 'InvalidField'
  /** A component type (model, pre-tokenizer, decoder, ...) or a regex construct that this package does not implement. */
  | 'UnsupportedComponent'
  /** A merge names a token that is not in the vocabulary, or merges into one that is not. */
  | 'MergeOutOfVocabulary'
  /** An id passed to `decode` (or another id-taking call) is not a valid token id. */
  | 'IdOutOfRange'
  /** Invalid arguments to the BPE trainer. */
  | 'InvalidTrainerOption'
  /** A conversation that the Apertus chat template cannot render. */
  | 'InvalidConversation'
  /** Reading a file failed. */
  | 'Io';

/** Where an error happened, when known. */
export interface TokenizerErrorContext {
  /** Path (or caller-given label) of the file being read. */
  readonly file?: string;
  /** JSON path of the offending field, e.g. `model.merges[12]` or `messages[3].content`. */
  readonly field?: string;
  /** Underlying error, e.g. a `SyntaxError` from `JSON.parse` or a Node `fs` error. */
  readonly cause?: unknown;
}

/**
 * Base class of every error thrown by `@apertus/tokenizer`. The message starts with the file and
 * field when known: `tokenizer.json: model.merges[12]: merge references unknown token "xq"`.
 */
export class TokenizerError extends Error {
  /** Exact rule that failed. */
  readonly code: TokenizerErrorCode;
  /** File the error concerns, if any. */
  readonly file: string | undefined;
  /** JSON path of the field the error concerns, if any. */
  readonly field: string | undefined;
  /** The message without the file / field prefix. */
  readonly detail: string;

  constructor(code: TokenizerErrorCode, detail: string, context: TokenizerErrorContext = {}) {
    const where =
      (context.file !== undefined ? `${context.file}: ` : '') +
      (context.field !== undefined ? `${context.field}: ` : '');
    super(`${where}${detail}`, context.cause !== undefined ? { cause: context.cause } : undefined);
    this.name = 'TokenizerError';
    this.code = code;
    this.file = context.file;
    this.field = context.field;
    this.detail = detail;
  }

  /** The same error, attributed to `file` (used when a loader knows which file it was reading). */
  inFile(file: string): TokenizerError {
    if (this.file !== undefined) return this;
    return new TokenizerError(this.code, this.detail, {
      file,
      ...(this.field !== undefined ? { field: this.field } : {}),
      ...(this.cause !== undefined ? { cause: this.cause } : {}),
    });
  }
}
