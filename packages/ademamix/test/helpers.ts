// Helpers shared by the tests of this package (not exported from index.ts).

import type { FloatArray, OptimParam } from '../src/types';

/** A parameter with a gradient buffer, in the precision of `ctor`. */
export function makeParam(values: readonly number[], ctor: Float32ArrayConstructor | Float64ArrayConstructor = Float64Array, shape?: readonly number[]): OptimParam & { grad: { data: FloatArray } } {
  const data = ctor.from(values);
  return { shape: shape ?? [values.length], data, grad: { data: new ctor(values.length) } };
}

/** Round to 12 significant digits, the precision the spec prints its vectors with. */
export function sig(x: number, digits = 12): number {
  return Number(x.toPrecision(digits));
}
