import { add, backward, gradcheck, linear, mul, Rng, scale, Tensor } from '@apertus/tensor';
import { describe, expect, test } from 'vitest';
import { AdapterError } from './errors';
import { loraLinear } from './lora-linear';

const M = 7, IN = 6, OUT = 5, R = 3, S = 1.5;

function operands(seed: number) {
  const rng = new Rng(seed);
  return {
    x: Tensor.randn([M, IN], rng).requireGrad(),
    W: Tensor.randn([OUT, IN], rng),
    A: Tensor.randn([R, IN], rng).requireGrad(),
    B: Tensor.randn([OUT, R], rng).requireGrad(),
    G: Tensor.randn([M, OUT], rng),
  };
}

/** The dropout mask the op draws for `seed` (one Rng stream, 0 with probability p, else 1/(1 − p)). */
function mask(n: number, p: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: n }, () => (rng.uniform() < p ? 0 : 1 / (1 - p)));
}

/** y, ∂L/∂x, ∂L/∂A, ∂L/∂B for L = Σ G ⊙ y, in float64 from the definition (no shared code). */
function reference64(o: ReturnType<typeof operands>, d: Float32Array) {
  const x = o.x.data, W = o.W.data, A = o.A.data, B = o.B.data, G = o.G.data;
  const xd = Array.from(x, (v, i) => v * d[i]!);
  const u = new Float64Array(M * R), y = new Float64Array(M * OUT);
  for (let m = 0; m < M; m++) for (let j = 0; j < R; j++) for (let k = 0; k < IN; k++) u[m * R + j] += xd[m * IN + k]! * A[j * IN + k]!;
  for (let m = 0; m < M; m++) for (let o2 = 0; o2 < OUT; o2++) {
    let v = 0;
    for (let k = 0; k < IN; k++) v += x[m * IN + k]! * W[o2 * IN + k]!;
    for (let j = 0; j < R; j++) v += S * u[m * R + j]! * B[o2 * R + j]!;
    y[m * OUT + o2] = v;
  }
  const gu = new Float64Array(M * R);
  for (let m = 0; m < M; m++) for (let j = 0; j < R; j++) for (let o2 = 0; o2 < OUT; o2++) gu[m * R + j] += S * G[m * OUT + o2]! * B[o2 * R + j]!;
  const gB = new Float64Array(OUT * R), gA = new Float64Array(R * IN), gx = new Float64Array(M * IN);
  for (let o2 = 0; o2 < OUT; o2++) for (let j = 0; j < R; j++) for (let m = 0; m < M; m++) gB[o2 * R + j] += S * G[m * OUT + o2]! * u[m * R + j]!;
  for (let j = 0; j < R; j++) for (let k = 0; k < IN; k++) for (let m = 0; m < M; m++) gA[j * IN + k] += gu[m * R + j]! * xd[m * IN + k]!;
  for (let m = 0; m < M; m++) for (let k = 0; k < IN; k++) {
    let v = 0;
    for (let o2 = 0; o2 < OUT; o2++) v += G[m * OUT + o2]! * W[o2 * IN + k]!;
    for (let j = 0; j < R; j++) v += d[m * IN + k]! * gu[m * R + j]! * A[j * IN + k]!;
    gx[m * IN + k] = v;
  }
  return { y, gx, gA, gB };
}

function expectClose(got: Float32Array, want: ArrayLike<number>, rel: number): void {
  let scaleMax = 0, err = 0;
  for (let i = 0; i < got.length; i++) { scaleMax = Math.max(scaleMax, Math.abs(want[i]!)); err = Math.max(err, Math.abs(got[i]! - want[i]!)); }
  expect(got.length).toBe(want.length);
  expect(err).toBeLessThanOrEqual(rel * scaleMax);
}

describe('loraLinear: y = x·Wᵀ + s·dropout(x)·Aᵀ·Bᵀ as one op', () => {
  for (const p of [0, 0.3]) {
    test(`output and gradients of x, A, B against a float64 computation from the definition (dropout ${p})`, () => {
      const o = operands(1), seed = 77;
      const y = loraLinear(o.x, o.W, o.A, o.B, S, p, seed);
      backward(y, o.G);
      const ref = reference64(o, p > 0 ? mask(M * IN, p, seed) : new Float32Array(M * IN).fill(1));
      expectClose(y.data, ref.y, 1e-6);
      expectClose(o.x.grad!.data, ref.gx, 1e-6);
      expectClose(o.A.grad!.data, ref.gA, 1e-6);
      expectClose(o.B.grad!.data, ref.gB, 1e-6);
      expect(o.W.grad).toBeNull();
    });

    test(`gradients of x, A, B by central finite differences (dropout ${p}: the same mask in every evaluation)`, () => {
      const o = operands(2);
      const r = gradcheck(([x, A, B]) => loraLinear(x!, o.W, A!, B!, S, p, 5), [o.x, o.A, o.B], { eps: 1e-2 });
      expect(r.maxError).toBeLessThan(1e-2);
    });
  }

  test('equals the unfused composition add(linear(x, W), s·linear(linear(d ⊙ x, A), B)), forward and backward', () => {
    const p = 0.25, seed = 9;
    const fused = operands(3), plain = operands(3);
    const yf = loraLinear(fused.x, fused.W, fused.A, fused.B, S, p, seed);
    backward(yf, fused.G);
    const d = Tensor.from(mask(M * IN, p, seed), [M, IN]);
    const yp = add(linear(plain.x, plain.W), scale(linear(linear(mul(plain.x, d), plain.A), plain.B), S));
    backward(yp, plain.G);
    expectClose(yf.data, yp.data, 1e-6);
    for (const k of ['x', 'A', 'B'] as const) expectClose(fused[k].grad!.data, plain[k].grad!.data, 1e-6);
  });

  test('one node on the tape with inputs x, A, B: the frozen W is not an input and gets no gradient buffer', () => {
    const o = operands(4);
    const y = loraLinear(o.x, o.W, o.A, o.B, S);
    expect(y.node!.op).toBe('loraLinear');
    expect(y.node!.inputs).toEqual([o.x, o.A, o.B]);
    backward(y, o.G);
    expect(o.W.grad).toBeNull();
  });

  test('a bf16 base weight gives what its float32 values give', () => {
    const o = operands(5), p = operands(5);
    const Wb = o.W.to('bf16'), Wf = Tensor.from(Wb.toFloat32(), Wb.shape);
    const y1 = loraLinear(o.x, Wb, o.A, o.B, S), y2 = loraLinear(p.x, Wf, p.A, p.B, S);
    backward(y1, o.G); backward(y2, p.G);
    expectClose(y1.data, y2.data, 1e-6);
    expectClose(o.x.grad!.data, p.x.grad!.data, 1e-6);
  });

  test('a base weight that requires a gradient, or factors that do not fit, are refused with AdapterError', () => {
    const o = operands(6);
    expect(() => loraLinear(o.x, o.W.requireGrad(), o.A, o.B, S)).toThrow(AdapterError);
    o.W.requireGrad(false);
    expect(() => loraLinear(o.x, o.W, o.B, o.A, S)).toThrow(AdapterError);
  });
});
