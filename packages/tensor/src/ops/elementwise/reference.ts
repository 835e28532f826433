import { ShapeError } from '../../errors';
import type { F32 } from '../../arrays';
import type { BinaryOp, UnaryOp } from './args';

/** softplus(x) = log(1 + e^x), computed without overflow for large |x|. */
export function softplus(x: number): number {
  return x > 20 ? x : x < -20 ? Math.exp(x) : Math.log1p(Math.exp(x));
}

/** sigmoid(x) = 1 / (1 + e^-x), computed without overflow for large |x|. */
export function sigmoid(x: number): number {
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
}

function unaryFn(op: UnaryOp): (x: number) => number {
  switch (op) {
    case 'neg': return (x) => -x;
    case 'exp': return Math.exp;
    case 'log': return Math.log;
    case 'expm1': return Math.expm1;
    case 'log1p': return Math.log1p;
    case 'softplus': return softplus;
    case 'sigmoid': return sigmoid;
    case 'silu': return (x) => x * sigmoid(x);
    case 'tanh': return Math.tanh;
    case 'sqrt': return Math.sqrt;
    case 'rsqrt': return (x) => 1 / Math.sqrt(x);
    case 'square': return (x) => x * x;
    case 'abs': return Math.abs;
    case 'relu': return (x) => (x > 0 ? x : 0);
  }
}

/** f'(x) given x and y = f(x). */
function unaryDerivative(op: UnaryOp): (x: number, y: number) => number {
  switch (op) {
    case 'neg': return () => -1;
    case 'exp': return (_x, y) => y;
    case 'log': return (x) => 1 / x;
    case 'expm1': return (_x, y) => y + 1;
    case 'log1p': return (x) => 1 / (1 + x);
    case 'softplus': return (x) => sigmoid(x);
    case 'sigmoid': return (_x, y) => y * (1 - y);
    case 'silu': return (x) => { const s = sigmoid(x); return s * (1 + x * (1 - s)); };
    case 'tanh': return (_x, y) => 1 - y * y;
    case 'sqrt': return (_x, y) => 0.5 / y;
    case 'rsqrt': return (_x, y) => -0.5 * y * y * y;
    case 'square': return (x) => 2 * x;
    case 'abs': return (x) => (x > 0 ? 1 : x < 0 ? -1 : 0);
    case 'relu': return (x) => (x > 0 ? 1 : 0);
  }
}

export function unary(op: UnaryOp, x: F32, out: F32): void {
  const f = unaryFn(op);
  for (let i = 0; i < x.length; i++) out[i] = f(x[i]!);
}

export function unaryBackward(op: UnaryOp, x: F32, y: F32, gy: F32, gx: F32): void {
  const df = unaryDerivative(op);
  for (let i = 0; i < x.length; i++) gx[i] = gy[i]! * df(x[i]!, y[i]!);
}

function binaryFn(op: BinaryOp): (a: number, b: number) => number {
  switch (op) {
    case 'add': return (a, b) => a + b;
    case 'sub': return (a, b) => a - b;
    case 'mul': return (a, b) => a * b;
    case 'div': return (a, b) => a / b;
    case 'maximum': return (a, b) => (a >= b ? a : b);
    case 'minimum': return (a, b) => (a <= b ? a : b);
    case 'pow': return Math.pow;
  }
}

export function binary(
  op: BinaryOp,
  a: F32, aStrides: readonly number[],
  b: F32, bStrides: readonly number[],
  outShape: readonly number[], out: F32,
): void {
  const f = binaryFn(op);
  const r = outShape.length;
  const n = out.length;
  if (r === 0) { out[0] = f(a[0]!, b[0]!); return; }
  // Fast paths: same layout, or b a scalar / row vector broadcast over the leading axes.
  const contiguous = (s: readonly number[]) => { let st = 1; for (let i = r - 1; i >= 0; i--) { if (outShape[i] !== 1 && s[i] !== st) return false; st *= outShape[i]!; } return true; };
  if (contiguous(aStrides) && contiguous(bStrides)) {
    switch (op) {
      case 'add': for (let i = 0; i < n; i++) out[i] = a[i]! + b[i]!; return;
      case 'mul': for (let i = 0; i < n; i++) out[i] = a[i]! * b[i]!; return;
      case 'sub': for (let i = 0; i < n; i++) out[i] = a[i]! - b[i]!; return;
      default: for (let i = 0; i < n; i++) out[i] = f(a[i]!, b[i]!); return;
    }
  }
  // General case: walk the output index with an odometer over the last axis.
  const last = outShape[r - 1]!;
  const as = aStrides[r - 1]!, bs = bStrides[r - 1]!;
  const idx = new Array<number>(r).fill(0);
  let ao = 0, bo = 0;
  for (let o = 0; o < n; o += last) {
    for (let j = 0; j < last; j++) out[o + j] = f(a[ao + j * as]!, b[bo + j * bs]!);
    for (let ax = r - 2; ax >= 0; ax--) {
      idx[ax]!++;
      ao += aStrides[ax]!; bo += bStrides[ax]!;
      if (idx[ax]! < outShape[ax]!) break;
      ao -= aStrides[ax]! * outShape[ax]!; bo -= bStrides[ax]! * outShape[ax]!;
      idx[ax] = 0;
    }
  }
}

/** ShapeError unless `out` has `x`'s length. */
export function checkScaleBy(x: F32, out: F32): void {
  if (out.length !== x.length) throw new ShapeError(`scaleBy: out has ${out.length} elements, x has ${x.length}`);
}

/** out[i] = x[i]·s (the product in double, rounded once); `out` may be `x`. */
export function scaleBy(x: F32, s: number, out: F32): void {
  checkScaleBy(x, out);
  for (let i = 0; i < x.length; i++) out[i] = x[i]! * s;
}
