import { record } from '../../autograd';
import type { BinaryOp, UnaryOp } from './kernel';
import { broadcastShapes, numel, sameShape } from '../../shape';
import { Tensor } from '../../tensor';
import { f32, kernelF32, mapF32, out, sumTo, zerosF32 } from '../util';
import { binaryKernel, scaleByKernel, unaryBackwardKernel, unaryKernel } from './kernel';

/** A tensor or a plain number (broadcast as a scalar). */
export type TensorLike = Tensor | number;

function lift(x: TensorLike): Tensor {
  return typeof x === 'number' ? Tensor.scalar(x) : x;
}

/** Element strides of `shape` broadcast into `outShape` (0 on broadcast axes). */
function broadcastStrides(shape: readonly number[], outShape: readonly number[]): number[] {
  const r = outShape.length;
  const st = new Array<number>(r).fill(0);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    st[r - shape.length + i] = shape[i] === 1 ? 0 : s;
    s *= shape[i]!;
  }
  return st;
}

function binaryRaw(op: BinaryOp, a: Tensor, b: Tensor, shape: number[]): Float32Array {
  const res = zerosF32(numel(shape));
  binaryKernel.run(op, kernelF32(a, op), broadcastStrides(a.shape, shape), kernelF32(b, op), broadcastStrides(b.shape, shape), shape, res);
  return res;
}

function binaryOp(op: BinaryOp, x: TensorLike, y: TensorLike, grads: (a: Tensor, b: Tensor, res: Tensor, g: Tensor) => [Tensor | null, Tensor | null]): Tensor {
  const a = lift(x), b = lift(y);
  const shape = broadcastShapes(a.shape, b.shape, op);
  const res = out(shape, binaryRaw(op, a, b, shape));
  return record(res, op, [a, b], (g) => {
    const [ga, gb] = grads(a, b, res, g);
    // A gradient over a broadcast input is summed on the host; one of the output's shape is passed on as it is.
    const reduce = (gx: Tensor | null, x: Tensor): Tensor | null => {
      if (gx === null || !x.requiresGrad) return null;
      return sameShape(x.shape, shape) ? gx : out(x.shape, sumTo(f32(gx, op), shape, x.shape));
    };
    return [reduce(ga, a), reduce(gb, b)];
  });
}

/** a + b with broadcasting. */
export function add(a: TensorLike, b: TensorLike): Tensor {
  return binaryOp('add', a, b, (_a, _b, _r, g) => [g, g]);
}

/** a − b with broadcasting. */
export function sub(a: TensorLike, b: TensorLike): Tensor {
  return binaryOp('sub', a, b, (_a, _b, _r, g) => [g, neg(g)]);
}

/** a · b elementwise with broadcasting. */
export function mul(a: TensorLike, b: TensorLike): Tensor {
  return binaryOp('mul', a, b, (x, y, _r, g) => [mul(g, y), mul(g, x)]);
}

/** a / b elementwise with broadcasting. */
export function div(a: TensorLike, b: TensorLike): Tensor {
  return binaryOp('div', a, b, (_x, y, r, g) => [div(g, y), neg(div(mul(g, r), y))]);
}

/** max(a, b) elementwise; the gradient goes to a where a ≥ b. */
export function maximum(a: TensorLike, b: TensorLike): Tensor {
  return binaryOp('maximum', a, b, (x, y, _r, g) => {
    const shape = g.shape as number[];
    const pick = mapF32(binaryRaw('sub', x, y, shape), (d) => (d >= 0 ? 1 : 0));
    const mask = out(shape, pick);
    return [mul(g, mask), mul(g, sub(1, mask))];
  });
}

/** min(a, b) elementwise; the gradient goes to a where a ≤ b. */
export function minimum(a: TensorLike, b: TensorLike): Tensor {
  return binaryOp('minimum', a, b, (x, y, _r, g) => {
    const shape = g.shape as number[];
    const mask = out(shape, mapF32(binaryRaw('sub', x, y, shape), (d) => (d <= 0 ? 1 : 0)));
    return [mul(g, mask), mul(g, sub(1, mask))];
  });
}

/** a ** b elementwise (a > 0 where b needs a gradient). */
export function pow(a: TensorLike, b: TensorLike): Tensor {
  return binaryOp('pow', a, b, (x, y, r, g) => [mul(g, mul(y, pow(x, sub(y, 1)))), mul(g, mul(r, log(x)))]);
}

function unaryOp(op: UnaryOp, x: Tensor): Tensor {
  const xs = kernelF32(x, op);
  const y = zerosF32(xs.length);
  unaryKernel.run(op, xs, y);
  const res = out(x.shape, y);
  return record(res, op, [x], (g) => {
    const gx = zerosF32(xs.length);
    unaryBackwardKernel.run(op, xs, y, kernelF32(g, op), gx);
    return [out(x.shape, gx)];
  });
}

/** −x. */ export const neg = (x: Tensor): Tensor => unaryOp('neg', x);
/** eˣ. */ export const exp = (x: Tensor): Tensor => unaryOp('exp', x);
/** ln x. */ export const log = (x: Tensor): Tensor => unaryOp('log', x);
/** eˣ − 1, accurate near 0. */ export const expm1 = (x: Tensor): Tensor => unaryOp('expm1', x);
/** ln(1 + x), accurate near 0. */ export const log1p = (x: Tensor): Tensor => unaryOp('log1p', x);
/** ln(1 + eˣ), overflow-safe. */ export const softplus = (x: Tensor): Tensor => unaryOp('softplus', x);
/** 1 / (1 + e⁻ˣ). */ export const sigmoid = (x: Tensor): Tensor => unaryOp('sigmoid', x);
/** x · sigmoid(x). */ export const silu = (x: Tensor): Tensor => unaryOp('silu', x);
/** tanh x. */ export const tanh = (x: Tensor): Tensor => unaryOp('tanh', x);
/** √x. */ export const sqrt = (x: Tensor): Tensor => unaryOp('sqrt', x);
/** 1/√x. */ export const rsqrt = (x: Tensor): Tensor => unaryOp('rsqrt', x);
/** x². */ export const square = (x: Tensor): Tensor => unaryOp('square', x);
/** |x|. */ export const abs = (x: Tensor): Tensor => unaryOp('abs', x);
/** max(x, 0). */ export const relu = (x: Tensor): Tensor => unaryOp('relu', x);

/** x · c for a constant c (cheaper than mul with a scalar tensor). */
export function scale(x: Tensor, c: number): Tensor {
  const xs = f32(x, 'scale');
  const res = out(x.shape, mapF32(xs, (v) => v * c));
  return record(res, 'scale', [x], (g) => [scale(g, c)]);
}

/** out[i] = x[i]·s on the current device; in place by default (`out` = `x`). */
export function scaleBy(x: Float32Array, s: number, out: Float32Array = x): void {
  scaleByKernel.run(x, s, out);
}
