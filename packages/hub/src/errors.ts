// Typed errors of @apertus/hub: one line each, naming the spec, repository, revision or file at
// fault and, where the user can act, what to do (accept a licence, set HF_TOKEN, go online).

/** Base class of every error thrown by @apertus/hub. */
export class HubError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A `--model` value that is neither an existing path nor a Hub id (`owner/name[@revision][:QUANT]`). */
export class ModelSpecError extends HubError {
  constructor(
    /** The spec as given. */
    readonly spec: string,
    message: string,
  ) {
    super(`${spec}: ${message}`);
  }
}

/** What a Hub request could not find. */
export type HubMissing = 'repository' | 'revision' | 'file';

/** The Hub has no such repository, revision of it, or file in it (or a private one the token cannot see). */
export class HubNotFoundError extends HubError {
  constructor(
    /** `owner/name`. */
    readonly repo: string,
    /** What is missing. */
    readonly missing: HubMissing,
    message: string,
    /** The revision or file path, when that is what is missing. */
    readonly item: string | null = null,
  ) {
    super(`${repo}${item !== null ? (missing === 'revision' ? `@${item}` : `: ${item}`) : ''}: ${message}`);
  }
}

/**
 * The Hub refused access: a gated repository without a token or with a token whose account has
 * not accepted the licence (`gated`), or a token it does not accept (`unauthorized`).
 */
export class HubAccessError extends HubError {
  constructor(
    /** `owner/name`. */
    readonly repo: string,
    /** Why. */
    readonly reason: 'gated' | 'unauthorized',
    /** The HTTP status (401 or 403). */
    readonly status: number,
    message: string,
  ) {
    super(`${repo}: ${message}`);
  }
}

/** A repository that holds no weights this project reads (no safetensors checkpoint, no GGUF file of the asked type). */
export class HubNoWeightsError extends HubError {
  constructor(
    /** `owner/name` (with `:QUANT` when a type was asked for). */
    readonly repo: string,
    message: string,
  ) {
    super(`${repo}: ${message}`);
  }
}

/** The Hub cannot be used (HF_HUB_OFFLINE=1, or unreachable) and the cache does not hold what is needed. */
export class HubOfflineError extends HubError {
  constructor(
    /** `owner/name`. */
    readonly repo: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${repo}: ${message}`, options);
  }
}

/** A download that cannot be completed or does not check out (size or hash differs, HTTP error, too many dropped connections). */
export class HubDownloadError extends HubError {
  constructor(
    /** `owner/name`. */
    readonly repo: string,
    /** The file in the repository. */
    readonly file: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${repo}: ${file}: ${message}`, options);
  }
}

/** Any other HTTP error status from the Hub (5xx, 429, …). */
export class HubHttpError extends HubError {
  constructor(
    /** The HTTP status. */
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
