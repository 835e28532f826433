import { ShapeError } from '../../errors';
import type { F32 } from '../../arrays';

/**
 * The checks every backend's `copyStrided` shares: matching ranks, `out` of the view's size, and
 * every element of the view inside `x` (strides ≥ 0). Returns the view's size.
 */
export function checkStrided(x: F32, offset: number, shape: readonly number[], strides: readonly number[], out: F32): number {
  if (shape.length !== strides.length) throw new ShapeError(`copyStrided: shape [${shape}] and strides [${strides}] differ in rank`);
  let n = 1, last = offset;
  for (let k = 0; k < shape.length; k++) {
    const d = shape[k]!, s = strides[k]!;
    if (!Number.isInteger(d) || d < 0 || !Number.isInteger(s) || s < 0) throw new ShapeError(`copyStrided: bad shape [${shape}] or strides [${strides}]`);
    n *= d;
    last += (d - 1) * s;
  }
  if (out.length !== n) throw new ShapeError(`copyStrided: out has ${out.length} elements, shape [${shape}] needs ${n}`);
  if (n > 0 && (!Number.isInteger(offset) || offset < 0 || last >= x.length)) {
    throw new ShapeError(`copyStrided: the view (offset ${offset}, shape [${shape}], strides [${strides}]) reaches past x (${x.length} elements)`);
  }
  return n;
}

/**
 * out = the strided view of x (any typed array), row-major: an odometer over the leading axes,
 * the last axis copied as a block where it is contiguous. Unchecked (see `checkStrided`).
 */
export function gatherStrided<T extends Float32Array | Uint16Array | Int32Array>(x: T, offset: number, shape: readonly number[], strides: readonly number[], out: T): void {
  const r = shape.length;
  const n = shape.reduce((p, d) => p * d, 1);
  if (n === 0) return;
  if (r === 0) { out[0] = x[offset]!; return; }
  const last = shape[r - 1]!, ls = strides[r - 1]!;
  const idx = new Array<number>(r).fill(0);
  let so = offset;
  for (let o = 0; o < n; o += last) {
    if (ls === 1) out.set(x.subarray(so, so + last) as never, o);
    else for (let j = 0; j < last; j++) out[o + j] = x[so + j * ls]!;
    for (let ax = r - 2; ax >= 0; ax--) {
      idx[ax]!++;
      so += strides[ax]!;
      if (idx[ax]! < shape[ax]!) break;
      so -= strides[ax]! * shape[ax]!;
      idx[ax] = 0;
    }
  }
}

/** `KernelSet.copyStrided`: out = the strided view (offset, shape, strides) of x, row-major. */
export function copyStrided(x: F32, offset: number, shape: readonly number[], strides: readonly number[], out: F32): void {
  checkStrided(x, offset, shape, strides, out);
  gatherStrided(x, offset, shape, strides, out);
}
