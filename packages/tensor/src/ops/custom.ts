import { noGrad, record } from '../autograd';
import type { Tensor } from '../tensor';

/** Everything a custom op's backward receives. */
export interface CustomOpContext<A, S> {
  /** The op's inputs, as passed. */
  readonly inputs: readonly Tensor[];
  /** The forward output. */
  readonly output: Tensor;
  /** The attributes passed at the call. */
  readonly attrs: A;
  /** Whatever the forward chose to save. */
  readonly saved: S;
}

/** A differentiable op with its own forward and backward kernels. */
export interface CustomOp<A, S = undefined> {
  /** Name shown in autograd errors. */
  readonly name: string;
  /** Compute the output (plain kernels, no autograd inside) and optionally save values for backward. */
  forward(inputs: readonly Tensor[], attrs: A): { output: Tensor; saved: S };
  /**
   * Gradient of the loss w.r.t. each input (null for inputs that need none), same shapes as the
   * inputs. Return freshly allocated tensors (or views of `grad`): autograd may accumulate into them.
   * `grad` is recycled once backward returns: do not keep it (or a view of it) beyond the call.
   */
  backward(grad: Tensor, ctx: CustomOpContext<A, S>): (Tensor | null)[];
}

/**
 * Turn a forward/backward kernel pair into a differentiable op. Another package uses this to plug
 * its own op (e.g. xIELU) into the tape: `const xielu = defineOp({...}); y = xielu([x, ap, an], attrs)`.
 */
export function defineOp<A, S = undefined>(op: CustomOp<A, S>): (inputs: readonly Tensor[], attrs: A) => Tensor {
  return (inputs, attrs) => {
    const { output, saved } = noGrad(() => op.forward(inputs, attrs));
    return record(output, op.name, inputs, (g) => op.backward(g, { inputs, output, attrs, saved }));
  };
}
