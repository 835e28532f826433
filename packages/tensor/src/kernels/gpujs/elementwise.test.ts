// gpu.js unary / unaryBackward / binary kernels against the JS reference kernels.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { kernelSet } from '../types';
import type { BinaryOp, UnaryOp } from '../types';
import { coalesce } from './elementwise';
import { createGpujsKernels } from './index';
import { expectAllRanIn, expectClose, expectWithin, randomF32, SLACK, U32 } from './testing';

const jsKernels = kernelSet('reference');

const UNARY_OPS: UnaryOp[] = ['neg', 'exp', 'log', 'expm1', 'log1p', 'softplus', 'sigmoid', 'silu', 'tanh', 'sqrt', 'rsqrt', 'square', 'abs', 'relu'];
const BINARY_OPS: BinaryOp[] = ['add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'pow'];
/** Ops defined only for positive inputs get |x| + 0.05. */
const POSITIVE = new Set<UnaryOp>(['log', 'sqrt', 'rsqrt']);

function inputFor(op: UnaryOp, n: number, seed: number): Float32Array {
  const x = randomF32(n, seed, -6, 6);
  if (POSITIVE.has(op)) return x.map((v) => Math.abs(v) + 0.05);
  if (op === 'log1p') return x.map((v) => Math.abs(v) - 0.9);
  if (op === 'softplus' || op === 'sigmoid' || op === 'silu') {
    // cover the overflow-safe branches: |x| > 20 and both signs
    x[0] = 30; if (n > 1) x[1] = -30; if (n > 2) x[2] = 0;
  }
  return x;
}

const sigmoid = (v: number) => 1 / (1 + Math.exp(-v));

/**
 * Forward: the kernel's float32 roundings of y = f(x) (see elementwise.ts: each Math function is
 * evaluated in float64 and rounded once, each + − · / rounds once) plus the reference's final
 * rounding, as multiples of U32·|y|. softplus (max(v, 0) + 2s·p(s²), s = u/(2 + u), u = e^(−|v|),
 * see elementwise.ts): 2 roundings in s, ~1.3 in the Horner sum p, 1 in 2s·p, 1 in the final add,
 * 1 in the reference; and it inherits exp's rounding through log1p: U32·u/(1 + u) ≤ U32·σ(x).
 */
const FORWARD_ROUNDINGS: Record<UnaryOp, number> = {
  neg: 0, abs: 0, relu: 0, exp: 2, log: 2, expm1: 2, log1p: 2, tanh: 2, sqrt: 2, square: 2, rsqrt: 3, softplus: 7, sigmoid: 5, silu: 6,
};

function unaryBound(op: UnaryOp, x: Float32Array, y0: Float32Array): Float64Array {
  return Float64Array.from(y0, (y, i) => {
    const v = x[i]!;
    const inherited = op === 'softplus' && Math.abs(v) <= 20 ? sigmoid(v) : 0;
    return SLACK * U32 * (FORWARD_ROUNDINGS[op] * Math.abs(y) + inherited);
  });
}

/**
 * Backward gx = g·f'(v): roundings of the derivative expression and of g·, and the reference's,
 * as multiples of U32·|gx|, except where the derivative cancels: tanh's 1 − y² (y·y rounds by
 * U32·y², relative to a small 1 − y² when |y| → 1) and silu's s·(1 + x·(1 − s)), which crosses 0
 * at x ≈ −1.28 (each intermediate's rounding, carried through in absolute terms).
 */
const BACKWARD_ROUNDINGS: Record<UnaryOp, number> = {
  neg: 0, abs: 0, relu: 0, exp: 2, square: 2, log: 3, expm1: 3, sqrt: 3, log1p: 4, sigmoid: 4, rsqrt: 5, softplus: 6, tanh: 2, silu: 2,
};

function unaryBackwardBound(op: UnaryOp, x: Float32Array, y0: Float32Array, gy: Float32Array, gx0: Float32Array): Float64Array {
  return Float64Array.from(gx0, (gx, i) => {
    const g = Math.abs(gy[i]!);
    let inner = 0; // absolute error of f'(v) beyond the final roundings
    if (op === 'tanh') {
      const y = y0[i]!;
      inner = U32 * (y * y + Math.abs(1 - y * y));
    } else if (op === 'silu') {
      const v = x[i]!;
      const s = sigmoid(v);
      const eS = 4 * U32 * s; // sigmoid: exp, 1 +, / (and exp again for v < 0)
      const a = v * (1 - s);
      const eA = Math.abs(v) * (eS + U32 * (1 - s)) + U32 * Math.abs(a);
      const b = 1 + a;
      const eB = eA + U32 * Math.abs(b);
      inner = Math.abs(b) * eS + s * eB + U32 * Math.abs(s * b);
    }
    return SLACK * (g * inner + U32 * BACKWARD_ROUNDINGS[op] * Math.abs(gx));
  });
}

/** add, sub, mul, div and pow round once in the kernel and once in the reference; max/min are exact. */
const BINARY_ROUNDINGS: Record<BinaryOp, number> = { add: 2, sub: 2, mul: 2, div: 2, pow: 2, maximum: 0, minimum: 0 };

for (const mode of ['webasm', 'cpu'] as const) {
  describe(`elementwise kernels (${mode})`, () => {
    const ks = createGpujsKernels(mode);
    afterAll(() => ks.dispose());

    it.each(UNARY_OPS)('unary %s and its backward match the reference on an odd size', (op) => {
      const n = 37;
      const x = inputFor(op, n, 11);
      const y = new Float32Array(n);
      const y0 = new Float32Array(n);
      ks.unary(op, x, y);
      jsKernels.unary(op, x, y0);
      expectWithin(y, y0, unaryBound(op, x, y0), `unary ${op}`);
      const gy = randomF32(n, 12);
      const gx = new Float32Array(n);
      const gx0 = new Float32Array(n);
      ks.unaryBackward(op, x, y0, gy, gx);
      jsKernels.unaryBackward(op, x, y0, gy, gx0);
      expectWithin(gx, gx0, unaryBackwardBound(op, x, y0, gy, gx0), `unaryBackward ${op}`);
    });

    it('unary: random ops and sizes (property)', () => {
      fc.assert(fc.property(fc.constantFrom(...UNARY_OPS), fc.integer({ min: 1, max: 300 }), fc.nat(), (op, n, seed) => {
        const x = inputFor(op, n, seed);
        const y = new Float32Array(n);
        const y0 = new Float32Array(n);
        ks.unary(op, x, y);
        jsKernels.unary(op, x, y0);
        expectWithin(y, y0, unaryBound(op, x, y0), `unary ${op}`);
      }), { numRuns: mode === 'cpu' ? 5 : 12 });
    });

    it('binary: random broadcast shapes of rank 0..5, ops and strides (property)', () => {
      const shapeArb = fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 0, maxLength: 5 });
      fc.assert(fc.property(
        fc.constantFrom(...BINARY_OPS), shapeArb, fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }), fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }), fc.nat(),
        (op, shape, bcastA, bcastB, seed) => {
          // Operand shapes: the output shape with some axes broadcast (size 1, stride 0).
          const stridesOf = (bc: boolean[]) => {
            const st = new Array<number>(shape.length).fill(0);
            let s = 1;
            for (let i = shape.length - 1; i >= 0; i--) {
              if (!bc[i]) { st[i] = s; s *= shape[i]!; }
            }
            return { st, n: s };
          };
          const A = stridesOf(bcastA);
          const B = stridesOf(bcastB);
          let a = randomF32(A.n, seed, -3, 3);
          const b = randomF32(B.n, seed + 1, -3, 3);
          if (op === 'pow') a = a.map((v) => Math.abs(v) + 0.1);
          const n = shape.reduce((p, d) => p * d, 1);
          const out = new Float32Array(n);
          const out0 = new Float32Array(n);
          ks.binary(op, a, A.st, b, B.st, shape, out);
          jsKernels.binary(op, a, A.st, b, B.st, shape, out0);
          expectWithin(out, out0, Float64Array.from(out0, (o) => SLACK * BINARY_ROUNDINGS[op] * U32 * Math.abs(o)), `binary ${op} [${shape}]`);
        },
      ), { numRuns: mode === 'cpu' ? 8 : 25 });
    });

    it('binary: transposed (non-contiguous) operand and a rank-5 pattern that needs the host loop', () => {
      // a is [3, 5] read transposed as [5, 3]; b broadcast along axis 0.
      const a = randomF32(15, 21);
      const b = randomF32(3, 22);
      const out = new Float32Array(15);
      const out0 = new Float32Array(15);
      ks.binary('sub', a, [1, 5], b, [0, 1], [5, 3], out);
      jsKernels.binary('sub', a, [1, 5], b, [0, 1], [5, 3], out0);
      expectClose(out, out0, 'transposed sub', 0, 0);
      // Alternating broadcast axes survive coalescing as 5 axes -> 2 outer axes walked on the host.
      const shape = [2, 3, 2, 3, 2];
      const x = randomF32(2 * 2 * 2, 23); // broadcast on axes 1 and 3
      const y = randomF32(3 * 3, 24); // broadcast on axes 0, 2, 4
      const xs = [4, 0, 2, 0, 1];
      const ys = [0, 3, 0, 1, 0];
      expect(coalesce(shape, xs, ys)).toHaveLength(5);
      const o = new Float32Array(72);
      const o0 = new Float32Array(72);
      ks.binary('mul', x, xs, y, ys, shape, o);
      jsKernels.binary('mul', x, xs, y, ys, shape, o0);
      expectClose(o, o0, 'rank-5 mul', 0, 0);
    });

    it(`ran every kernel in ${mode} (no silent fallback)`, () => expectAllRanIn(ks, mode, 29));
  });
}

describe('coalesce', () => {
  it('merges contiguous axes and drops size-1 axes', () => {
    expect(coalesce([2, 3, 4], [12, 4, 1], [12, 4, 1])).toEqual([{ n: 24, sa: 1, sb: 1 }]);
    expect(coalesce([2, 3, 4], [12, 4, 1], [0, 0, 1])).toEqual([{ n: 6, sa: 4, sb: 0 }, { n: 4, sa: 1, sb: 1 }]);
    expect(coalesce([1, 5, 1], [5, 1, 1], [0, 1, 0])).toEqual([{ n: 5, sa: 1, sb: 1 }]);
    expect(coalesce([], [], [])).toEqual([]);
  });
});
