// GELU on every device: the golden values and derivatives are torch's
// (`torch.nn.functional.gelu(x, approximate='tanh')` in float64, and its autograd gradient, in the
// Python peers: torch 2.13), the backward also against central finite differences, and the
// webgpu kernels (WGSL on SwiftShader) against the reference within float32 bounds.
import { afterAll, describe, expect, test } from 'vitest';
import { backward } from '../../autograd';
import { useDevice } from '../../device';
import { useSwiftshaderUnlessDriverNamed } from '../../webgpu/testing';
import { Rng } from '../../random';
import { kernelInfo } from '../../registry';
import { Tensor } from '../../tensor';
import { sum } from '../reduce';
import { expectGrads, param } from '../test-util';
import { gelu } from '.';

const X = [-3, -1.5, -0.5, 0, 0.25, 1, 2.5, 6];
const Y = [-0.0036373920817729943, -0.10042842301976707, -0.15428599017485606, 0, 0.149675350701685, 0.8411919906082768, 2.484915733910001, 5.9999999999156035];
const DY = [-0.011584166630969648, -0.12771079315143308, 0.13263009646535764, 0.5, 0.6953540951510604, 1.0829640838457826, 1.037951576212666, 1.0000000007709977];

useSwiftshaderUnlessDriverNamed();
afterAll(() => useDevice('cpu'));

/** y and dy/dx of gelu at X on the current device. */
function run(): { y: number[]; dy: number[] } {
  const x = Tensor.from(X).requireGrad();
  const y = gelu(x);
  backward(sum(y));
  return { y: Array.from(y.data), dy: Array.from(x.grad!.data) };
}

describe('gelu (tanh form) on every device', () => {
  test('cpu: torch\'s values and derivatives (float64 math rounded once: within one float32 rounding)', () => {
    expect(kernelInfo('gelu')).toEqual({ device: 'cpu', impl: 'reference' });
    const { y, dy } = run();
    y.forEach((v, i) => expect(Math.abs(v - Y[i]!)).toBeLessThanOrEqual(2 ** -24 * Math.abs(Y[i]!)));
    dy.forEach((v, i) => expect(Math.abs(v - DY[i]!)).toBeLessThanOrEqual(2 ** -24 * Math.abs(DY[i]!)));
  });

  test('cpu: the backward matches central finite differences', () => {
    expectGrads(([x]) => sum(gelu(x!)), [param([3, 7], new Rng(5))]);
  });

  test('webgpu: the WGSL kernels give the reference values within float32 error', async () => {
    const want = run();
    await useDevice('webgpu');
    expect(kernelInfo('gelu')).toEqual({ device: 'webgpu', impl: 'wgsl' });
    const got = run();
    // Six float32 operations around tanh_ (Cephes' tanhf, within 10 ulp of t ≤ 1 counting its
    // exp_): at most 2⁻²⁰ of 1 + |value| (the derivative's 1 − t² loses t's relative error).
    for (const [g, w] of [[got.y, want.y], [got.dy, want.dy]] as const) g.forEach((v, i) => expect(Math.abs(v - w[i]!)).toBeLessThanOrEqual(2 ** -20 * (1 + Math.abs(w[i]!))));
    await useDevice('cpu');
  }, 300_000);
});
