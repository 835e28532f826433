// The elementwise WGSL kernels against the reference kernels, within bounds derived from the
// float32 operations of each kernel (see webgpu/wgsl-math.ts for the functions' algorithms).
import { describe, expect, test } from 'vitest';
import { expectWithin, randomF32, SLACK, U32 } from '../../kernels/float-testing';
import { webgpuForSuite } from '../../webgpu/testing';
import type { BinaryOp, UnaryOp } from './args';
import * as reference from './reference';
import { binary, scaleBy, unary, unaryBackward } from './webgpu';

const UNARY_OPS: UnaryOp[] = ['neg', 'exp', 'log', 'expm1', 'log1p', 'softplus', 'sigmoid', 'silu', 'tanh', 'sqrt', 'rsqrt', 'square', 'abs', 'relu'];
const POSITIVE = new Set<UnaryOp>(['log', 'sqrt', 'rsqrt']);
const sigmoid = (v: number) => 1 / (1 + Math.exp(-v));

function inputFor(op: UnaryOp, n: number, seed: number): Float32Array {
  const x = randomF32(n, seed, -12, 12);
  if (POSITIVE.has(op)) return x.map((v) => Math.abs(v) * 10 + 1e-3);
  if (op === 'log1p') return x.map((v) => Math.abs(v) / 12 - 0.999);
  if (op === 'expm1') for (let i = 0; i < n; i += 3) x[i] = x[i]! / 1000;
  // Both branches of the overflow-safe forms, 0 and the sign boundary.
  x[0] = 30; x[1] = -30; x[2] = 0; x[3] = -0.5; x[4] = 0.6; x[5] = 1e-7;
  return x;
}

/**
 * Forward error in units of U32·|y| (the kernel's roundings and the reference's final one):
 * exp_ and log_ are Cephes' (≤ 1.5 ulp) plus the reduction's roundings; sigmoid = 1/(1 + e) with
 * WGSL's 2.5-ulp division; tanh's 1 − 2/(s + 1) branch; sqrt is WGSL's (1/inverseSqrt: 2 + 2.5
 * ulp). expm1 above |x| = ln2/2 is exp_ − 1: exp_'s error relative to e^x, not to y.
 */
const FORWARD_ULPS: Record<UnaryOp, number> = {
  neg: 0, abs: 0, relu: 0, square: 2, exp: 4, log: 4, expm1: 4, log1p: 9, softplus: 9, sigmoid: 9, silu: 10, tanh: 10, sqrt: 6, rsqrt: 3,
};

function unaryBound(op: UnaryOp, x: Float32Array, y0: Float32Array): Float64Array {
  return Float64Array.from(y0, (y, i) => {
    const v = x[i]!;
    let extra = 0;
    if (op === 'expm1' && Math.abs(v) >= 0.34657359) extra = 4 * Math.exp(v);
    if (op === 'softplus' && Math.abs(v) <= 30) extra = 4 * sigmoid(v) + 4 * Math.exp(-Math.abs(v));
    return SLACK * U32 * (FORWARD_ULPS[op] * Math.abs(y) + extra);
  });
}

/** Backward: the derivative's roundings (cancelling ones in absolute terms, as tanh's 1 − y² and silu's s·(1 + x(1 − s))) and g·. */
const BACKWARD_ULPS: Record<UnaryOp, number> = {
  neg: 0, abs: 0, relu: 0, exp: 2, square: 2, log: 5, expm1: 3, sqrt: 5, log1p: 6, sigmoid: 4, rsqrt: 5, softplus: 11, tanh: 2, silu: 2,
};

function unaryBackwardBound(op: UnaryOp, x: Float32Array, y0: Float32Array, gy: Float32Array, gx0: Float32Array): Float64Array {
  return Float64Array.from(gx0, (gx, i) => {
    const g = Math.abs(gy[i]!);
    let inner = 0;
    if (op === 'tanh') { const y = y0[i]!; inner = U32 * (y * y + Math.abs(1 - y * y)); }
    if (op === 'silu') {
      const v = x[i]!, s = sigmoid(v), eS = 9 * U32 * s;
      const a = v * (1 - s), eA = Math.abs(v) * (eS + U32 * (1 - s)) + U32 * Math.abs(a);
      const b = 1 + a, eB = eA + U32 * Math.abs(b);
      inner = Math.abs(b) * eS + s * eB + U32 * Math.abs(s * b);
    }
    return SLACK * (g * inner + U32 * BACKWARD_ULPS[op] * Math.abs(gx));
  });
}


describe('elementwise WGSL kernels', { timeout: 600_000 }, () => {
  const { run, host, ctx } = webgpuForSuite();

  test('every unary op and its backward, on sizes around the workgroup', () => {
    for (const n of [1, 255, 257, 3000]) {
      for (const op of UNARY_OPS) {
        const x = inputFor(op, Math.max(n, 8), n + op.length).subarray(0, n).slice();
        const y = new Float32Array(n), y0 = new Float32Array(n);
        run(unary)(op, x, y);
        host(y);
        reference.unary(op, x, y0);
        expectWithin(y, y0, unaryBound(op, x, y0), `${op} n=${n}`);
        const gy = randomF32(n, 7), gx = new Float32Array(n), gx0 = new Float32Array(n);
        run(unaryBackward)(op, x, y0, gy, gx);
        host(gx);
        reference.unaryBackward(op, x, y0, gy, gx0);
        expectWithin(gx, gx0, unaryBackwardBound(op, x, y0, gy, gx0), `${op} backward n=${n}`);
      }
    }
  });

  test('binary ops with broadcasting over up to six merged axes', () => {
    const cases: [number[], number[], number[]][] = [
      [[2, 3, 4, 5], [60, 20, 5, 1], [0, 5, 0, 1]],
      [[7, 300], [300, 1], [0, 1]],
      [[2, 2, 2, 2, 2, 3], [48, 24, 12, 6, 3, 1], [0, 12, 0, 6, 0, 1]],
      [[1000], [1], [0]],
    ];
    for (const [shape, aS, bS] of cases) {
      const n = shape.reduce((p, d) => p * d, 1);
      const span = (s: number[]) => 1 + s.reduce((p, st, i) => p + st * (shape[i]! - 1), 0);
      const a = randomF32(span(aS), n, 0.5, 3), b = randomF32(span(bS), n + 1, -3, 3);
      for (const op of ['add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'pow'] as BinaryOp[]) {
        const bb = op === 'pow' ? b.map((v, i) => (i % 2 === 0 ? Math.round(v * 3) : v)) : b;
        const out = new Float32Array(n), out0 = new Float32Array(n);
        run(binary)(op, a, aS, bb, bS, shape, out);
        host(out);
        reference.binary(op, a, aS, bb, bS, shape, out0);
        // add/sub/mul round once (+ the reference's rounding); div is WGSL's 2.5 ulp; max/min are exact;
        // pow: an integer exponent k by squaring (≤ 2·log2|k| + 2 roundings, + the reciprocal), else exp_(w·log_(u)).
        const bound = Float64Array.from(out0, (y, i) => {
          const ulps = op === 'maximum' || op === 'minimum' ? 0 : op === 'div' ? 4 : op !== 'pow' ? 2 : 0;
          if (op !== 'pow') return SLACK * U32 * ulps * Math.abs(y);
          let ia = 0, ib = 0, r = i;
          for (let ax = shape.length - 1; ax >= 0; ax--) { const c = r % shape[ax]!; r = Math.floor(r / shape[ax]!); ia += c * aS[ax]!; ib += c * bS[ax]!; }
          const u = a[ia]!, w = bb[ib]!;
          const k = Number.isInteger(w) ? 2 * Math.log2(Math.abs(w) + 1) + 6 : 8 + 5 * Math.abs(w * Math.log(u));
          return SLACK * U32 * k * Math.abs(y);
        });
        expectWithin(out, out0, bound, `${op} [${shape}]`);
      }
    }
  });

});
