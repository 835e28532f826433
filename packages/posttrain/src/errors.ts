// Typed errors of @apertus/posttrain. One class; `code` names the rule that failed and the context
// fields name the file, line and field at fault, so a broken data job can be fixed without a debugger.

/** Machine-readable reason attached to every {@link PosttrainError}. */
export type PosttrainErrorCode =
  /** An option is missing, of the wrong type or out of range. */
  | 'InvalidOption'
  /** Inputs that must have matching lengths (hypotheses and references, ids and masks) do not. */
  | 'LengthMismatch'
  /** A JSONL line is not valid JSON. */
  | 'InvalidJson'
  /** A conversation (SFT row) does not follow the message schema or cannot be rendered. */
  | 'InvalidConversation'
  /** The UDHR corpus lacks a declaration the task needs. */
  | 'MissingLanguage'
  /** A preference record is malformed (no branches, non-finite reward, ...). */
  | 'InvalidPreference'
  /** A reward function failed or returned something other than a finite number. */
  | 'RewardFailed'
  /** Reading a file failed. */
  | 'Io'
  /** A preparation was stopped by its abort signal (what is done so far is kept for the next run). */
  | 'Interrupted';

/** Where an error happened, when known. */
export interface PosttrainErrorContext {
  /** Path (or caller-given label) of the file concerned. */
  readonly file?: string;
  /** 1-based line number inside `file`. */
  readonly line?: number;
  /** Option name or JSON path of the offending field, e.g. `messages[2].tool_calls[0].function.name`. */
  readonly field?: string;
  /** Underlying error. */
  readonly cause?: unknown;
}

/**
 * Every error thrown by `@apertus/posttrain`. The message starts with `file:line: field: ` when
 * those are known, e.g. `chat.jsonl:12: messages[1].role: expected one of system, user, assistant, tool`.
 */
export class PosttrainError extends Error {
  /** The rule that was broken. */
  readonly code: PosttrainErrorCode;
  /** File concerned, if any. */
  readonly file: string | undefined;
  /** 1-based line inside `file`, if any. */
  readonly line: number | undefined;
  /** Option or JSON path concerned, if any. */
  readonly field: string | undefined;

  /**
   * @param code - the rule that was broken
   * @param detail - human-readable explanation
   * @param context - file, line and field concerned, and the underlying error
   */
  constructor(code: PosttrainErrorCode, detail: string, context: PosttrainErrorContext = {}) {
    const where =
      (context.file !== undefined ? `${context.file}${context.line !== undefined ? `:${context.line}` : ''}: ` : context.line !== undefined ? `line ${context.line}: ` : '') +
      (context.field !== undefined ? `${context.field}: ` : '');
    super(`${where}${detail}`, context.cause !== undefined ? { cause: context.cause } : undefined);
    this.name = 'PosttrainError';
    this.code = code;
    this.file = context.file;
    this.line = context.line;
    this.field = context.field;
  }
}

/** Throw an `InvalidOption` error unless `ok`. */
export function checkOption(ok: boolean, field: string, detail: string): void {
  if (!ok) throw new PosttrainError('InvalidOption', detail, { field });
}
