// Typed errors of @apertus/goldfish.

/** Machine-readable reason attached to every {@link GoldfishError}. */
export type GoldfishErrorCode =
  /** An option (goldfishK, goldfishH, strategy, shape, ...) is invalid. */
  | 'InvalidOption'
  /** A label is not an integer (or not a safe integer). */
  | 'InvalidLabel'
  /** Inputs that must have the same length (rows, masks) do not. */
  | 'LengthMismatch';

/** Every error thrown by @apertus/goldfish. */
export class GoldfishError extends Error {
  /** The rule that was broken. */
  readonly code: GoldfishErrorCode;
  /** Option or argument concerned (e.g. `goldfishK`, `labels`, `b`). */
  readonly field?: string;
  /** Flat index of the offending element, when there is one. */
  readonly index?: number;

  /**
   * @param code - the rule that was broken
   * @param message - human-readable explanation
   * @param context - option / argument and element index concerned
   */
  constructor(code: GoldfishErrorCode, message: string, context: { readonly field?: string; readonly index?: number } = {}) {
    super(message);
    this.name = 'GoldfishError';
    this.code = code;
    if (context.field !== undefined) this.field = context.field;
    if (context.index !== undefined) this.index = context.index;
  }
}
