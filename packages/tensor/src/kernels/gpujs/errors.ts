import { BackendError } from '../../errors';

/**
 * A gpu.js backend cannot run as requested: the mode is not available on this machine, gpu.js
 * would silently run a different mode (for example `cpu` instead of `webasm`, or `webasm`
 * instead of a GPU), or gpu.js itself failed while building or running a kernel (for example a
 * GL texture larger than `MAX_TEXTURE_SIZE`).
 */
export class GpujsBackendError extends BackendError {
  /** The mode that was asked for. */
  readonly requestedMode: string;
  /** The mode gpu.js really chose or ran, when it got that far. */
  readonly actualMode: string | undefined;
  /** The kernel being built or run (`softmax.lse`, `attention.out`...), when the failure is kernel-specific. */
  readonly kernel: string | undefined;
  /** Why: gpu.js's own message or fallback reason, or ours. */
  readonly reason: string;

  constructor(opts: { requestedMode: string; actualMode?: string; kernel?: string; reason: string; cause?: unknown }) {
    const where = opts.kernel === undefined ? '' : ` (kernel ${opts.kernel})`;
    const actual = opts.actualMode === undefined ? '' : `, gpu.js chose '${opts.actualMode}'`;
    super(`gpu.js mode '${opts.requestedMode}'${where}${actual}: ${opts.reason}`);
    this.requestedMode = opts.requestedMode;
    this.actualMode = opts.actualMode;
    this.kernel = opts.kernel;
    this.reason = opts.reason;
    if (opts.cause !== undefined) (this as { cause?: unknown }).cause = opts.cause;
  }
}
