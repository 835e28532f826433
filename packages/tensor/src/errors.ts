/** Base class of every error thrown by @apertus/tensor. */
export class TensorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Shapes that do not fit the operation (the message names the op and both shapes). */
export class ShapeError extends TensorError {}

/** A dtype the operation does not accept. */
export class DTypeError extends TensorError {}

/** Autograd misuse: backward on a non-scalar without a gradient, or through a tensor that does not require grad. */
export class AutogradError extends TensorError {}

/** A requested kernel backend is not available here; nothing falls back silently. */
export class BackendError extends TensorError {}

/** The cpu device memory (a wasm32 memory, at most 4 GiB) cannot hold a kernel's operands (the message names the op and the sizes). */
export class HeapError extends TensorError {}
