// Structural parameter types. A `@apertus/tensor` Tensor satisfies `OptimParam` as it is, so this
// package needs no dependency on the tensor package.

/** A dense floating-point buffer: the precision of the math follows the array type. */
export type FloatArray = Float32Array | Float64Array;

/**
 * A trainable parameter as the optimizers see it: a shape, a flat row-major data buffer that is
 * updated in place, and an optional gradient buffer of the same length.
 */
export interface OptimParam {
  /** Dimensions of the parameter; `data.length` must equal their product (1 for rank 0). */
  readonly shape: readonly number[];
  /** Parameter values, updated in place by `step()`. Float32Array → float32 math, Float64Array → float64 math. */
  readonly data: FloatArray;
  /** Gradient of the loss with respect to `data`, or `null` when the parameter has no gradient this step. */
  grad: { readonly data: FloatArray } | null;
}

/** Named parameters, e.g. `model.namedParameters()`: an array of `[name, param]` pairs or a `Map`. */
export type NamedParams = Iterable<readonly [string, OptimParam]>;
