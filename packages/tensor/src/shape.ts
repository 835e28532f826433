import { ShapeError } from './errors';

/** A tensor shape. */
export type Shape = readonly number[];

/** Number of elements of a shape (1 for a scalar). */
export function numel(shape: Shape): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Row-major (C order) strides of a shape. */
export function contiguousStrides(shape: Shape): number[] {
  const s = new Array<number>(shape.length);
  let st = 1;
  for (let i = shape.length - 1; i >= 0; i--) { s[i] = st; st *= shape[i]!; }
  return s;
}

/** NumPy broadcasting of two shapes; throws ShapeError naming `op`. */
export function broadcastShapes(a: Shape, b: Shape, op: string): number[] {
  const r = Math.max(a.length, b.length);
  const out = new Array<number>(r);
  for (let i = 0; i < r; i++) {
    const da = a[a.length - r + i] ?? 1, db = b[b.length - r + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) throw new ShapeError(`${op}: shapes [${a}] and [${b}] do not broadcast`);
    out[i] = da === 1 ? db : da;
  }
  return out;
}

/** Normalise a possibly negative axis for a tensor of rank `rank`. */
export function normAxis(axis: number, rank: number, op: string): number {
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank || !Number.isInteger(a)) throw new ShapeError(`${op}: axis ${axis} out of range for rank ${rank}`);
  return a;
}

/** Are two shapes equal? */
export function sameShape(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** One broadcast axis after coalescing: its size and the two operands' strides. */
export interface Axis { n: number; sa: number; sb: number }

/**
 * Drop size-1 axes and merge neighbours that are contiguous in both operands, so typical
 * broadcasts ([B,T,H] + [H], same-shape ops) become one to three axes.
 */
export function coalesce(outShape: readonly number[], aStrides: readonly number[], bStrides: readonly number[]): Axis[] {
  const axes: Axis[] = [];
  for (let i = 0; i < outShape.length; i++) {
    const n = outShape[i]!;
    if (n === 1) continue;
    const ax = { n, sa: aStrides[i]!, sb: bStrides[i]! };
    const prev = axes[axes.length - 1];
    if (prev !== undefined && prev.sa === ax.sa * ax.n && prev.sb === ax.sb * ax.n) {
      prev.n *= ax.n;
      prev.sa = ax.sa;
      prev.sb = ax.sb;
    } else {
      axes.push(ax);
    }
  }
  return axes;
}
