/**
 * How float32 updates are computed: `torch-exact` (default) rounds every operation to float32 and
 * emulates PyTorch's fused multiply-adds, reproducing torch's optimizer bit for bit; `fast`
 * computes each element's update in double precision and rounds only what is stored — several
 * times faster, and within 1e-6 (relative to each state's largest value) of `torch-exact`.
 */
export type Arithmetic = 'torch-exact' | 'fast';

/** Execution options of an optimizer. */
export interface ArithmeticOptions {
  /** See {@link Arithmetic} (default `torch-exact`). */
  readonly arithmetic?: Arithmetic;
}
