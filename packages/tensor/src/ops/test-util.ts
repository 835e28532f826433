import { expect } from 'vitest';
import { gradcheck } from '../gradcheck';
import { Rng } from '../random';
import { Tensor } from '../tensor';

/** Random float32 tensor requiring grad. */
export function param(shape: number[], rng: Rng, std = 1): Tensor {
  return Tensor.randn(shape, rng, std).requireGrad();
}

/** Assert two arrays agree to `tol` relative to max(1, |expected|). */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-5): void {
  expect(actual.length).toBe(expected.length);
  let worst = 0, at = -1;
  for (let i = 0; i < expected.length; i++) {
    const e = Math.abs(actual[i]! - expected[i]!) / Math.max(1, Math.abs(expected[i]!));
    if (!(e <= worst)) { worst = e; at = i; }
  }
  if (!(worst <= tol)) expect.fail(`max relative error ${worst} at ${at}: ${actual[at]} vs ${expected[at]}`);
}

/** Assert autograd matches central finite differences. */
export function expectGrads(f: (xs: Tensor[]) => Tensor, inputs: Tensor[], tol = 2e-2, eps = 1e-2): void {
  const r = gradcheck(f, inputs, { eps });
  if (!(r.maxError <= tol)) expect.fail(`gradcheck: error ${r.maxError} at input ${r.worst.input}[${r.worst.index}]: analytic ${r.worst.analytic}, numeric ${r.worst.numeric}`);
}
