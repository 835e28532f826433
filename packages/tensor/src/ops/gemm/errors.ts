import { TensorError } from '../../errors';

/**
 * Invalid GEMM arguments, or a failure inside a GEMM backend. `field` names the argument at fault
 * (`'M'`, `'A'`, `'backend'`, ...), so callers can report which operand was wrong.
 */
export class GemmError extends TensorError {
  /** The argument (or subsystem) the error is about. */
  readonly field: string;
  constructor(field: string, message: string) {
    super(`sgemm: ${field}: ${message}`);
    this.field = field;
  }
}
