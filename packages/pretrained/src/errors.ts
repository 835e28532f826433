// Typed errors of @apertus/pretrained: a model that cannot be loaded (ModelLoadError, naming the
// file or directory and the field at fault) and a conversation its chat template cannot turn into
// a prompt (PromptError, naming the request field). Errors of the layers below (the Hub, the
// checkpoint, GGUF and tokenizer readers) keep their own types.

/** Base class of the errors of @apertus/pretrained. */
export class PretrainedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A model that cannot be loaded (missing tokenizer, a chat template that does not parse, a GGUF file where weights must be trainable…). */
export class ModelLoadError extends PretrainedError {
  /** The field of the file at fault (`chat_template`, `added_tokens`), or null. */
  readonly field: string | null;
  constructor(
    /** The directory or file at fault. */
    readonly path: string,
    message: string,
    options?: { cause?: unknown; field?: string },
  ) {
    super(`${path}: ${options?.field !== undefined ? `${options.field}: ` : ''}${message}`, options);
    this.field = options?.field ?? null;
  }
}

/** A conversation that cannot be turned into a prompt (the template refused it, or unsafe text). */
export class PromptError extends PretrainedError {
  constructor(
    /** The request field at fault (`messages[2].content`, `tools[0]`, `chat_template`). */
    readonly field: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
