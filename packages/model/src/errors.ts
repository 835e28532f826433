/** Base class of @apertus/model errors. */
export class ModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A config.json field is missing, has the wrong type, or asks for something unsupported. */
export class ConfigError extends ModelError {
  constructor(readonly field: string, readonly detail: string, readonly file?: string) {
    super(`${file ? file + ': ' : ''}${field}: ${detail}`);
  }
}

/** Checkpoint weights do not match the config (missing tensor, wrong shape or dtype). */
export class CheckpointError extends ModelError {
  constructor(message: string, readonly tensor?: string, readonly file?: string) {
    super(`${file ? file + ': ' : ''}${tensor ? tensor + ': ' : ''}${message}`);
  }
}

/** Generation request that cannot be served (context overflow, invalid sampling parameters). */
export class GenerationError extends ModelError {
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`);
  }
}

/** A LoRA configuration or adapter directory that cannot be used (bad field, missing or misshapen tensor). */
export class AdapterError extends ModelError {
  constructor(readonly field: string, readonly detail: string, readonly file?: string) {
    super(`${file ? file + ': ' : ''}${field}: ${detail}`);
  }
}
