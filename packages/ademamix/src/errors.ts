// Typed errors of @apertus/ademamix. `code` pins the rule that was broken; `param`, `field` and
// `entry` name what it concerns.

/** Machine-readable reason attached to every {@link OptimizerError}. */
export type OptimizerErrorCode =
  /** A hyperparameter (lr, betas, eps, weight decay, alpha, warm-up length, ...) is out of range. */
  | 'InvalidHyperparameter'
  /** The parameter list is empty, or a parameter is listed twice. */
  | 'InvalidParams'
  /** A parameter's data length does not match its shape, or its gradient length does not match its data. */
  | 'ShapeMismatch'
  /** A state dict is malformed: missing, extra or mismatched entry. */
  | 'InvalidState'
  /** A learning-rate schedule was configured with inconsistent values or evaluated at a bad count. */
  | 'InvalidSchedule'
  /** Bad input to gradient clipping. */
  | 'InvalidClip';

/** Where an error happened, when known. */
export interface OptimizerErrorContext {
  /** Name of the parameter concerned. */
  readonly param?: string;
  /** Name of the hyperparameter or option concerned (e.g. `betas[2]`, `lr`, `warmup`). */
  readonly field?: string;
  /** Name of the state-dict entry concerned (e.g. `exp_avg_slow.model.layers.0.mlp.up_proj.weight`). */
  readonly entry?: string;
}

/** Every error thrown by @apertus/ademamix. Nothing is modified when one is thrown. */
export class OptimizerError extends Error {
  /** The rule that was broken. */
  readonly code: OptimizerErrorCode;
  /** Parameter concerned, if any. */
  readonly param?: string;
  /** Hyperparameter or option concerned, if any. */
  readonly field?: string;
  /** State-dict entry concerned, if any. */
  readonly entry?: string;

  /**
   * @param code - the rule that was broken
   * @param message - human-readable explanation
   * @param context - parameter / field / state entry concerned
   */
  constructor(code: OptimizerErrorCode, message: string, context: OptimizerErrorContext = {}) {
    super(message);
    this.name = 'OptimizerError';
    this.code = code;
    if (context.param !== undefined) this.param = context.param;
    if (context.field !== undefined) this.field = context.field;
    if (context.entry !== undefined) this.entry = context.entry;
  }
}
