import { record } from '../../autograd';
import { ShapeError } from '../../errors';
import { contiguousStrides, normAxis, numel, type Shape } from '../../shape';
import { Tensor } from '../../tensor';
import { f32, out, zerosF32 } from '../util';
import { copyStridedKernel } from './kernel';

function view(t: Tensor, shape: Shape, strides: readonly number[], offset: number): Tensor {
  return new Tensor(t.raw, shape, t.dtype, strides, offset);
}

/** Same elements, new shape (one axis may be -1). A view when `t` is contiguous, else a copy. */
export function reshape(t: Tensor, shape: Shape): Tensor {
  const s = shape.slice();
  const neg = s.indexOf(-1);
  if (neg >= 0) s[neg] = t.size / numel(s.filter((_, i) => i !== neg));
  if (numel(s) !== t.size || !s.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new ShapeError(`reshape: cannot view [${t.shape}] (${t.size} elements) as [${shape}]`);
  }
  const src = t.materialize();
  const res = src === t ? view(t, s, contiguousStrides(s), t.offset) : new Tensor(src.raw, s, t.dtype);
  return record(res, 'reshape', [t], (g) => [reshape(g, t.shape)]);
}

/** Reorder axes (a view). */
export function permute(t: Tensor, axes: readonly number[]): Tensor {
  if (axes.length !== t.rank || new Set(axes.map((a) => normAxis(a, t.rank, 'permute'))).size !== t.rank) {
    throw new ShapeError(`permute: [${axes}] is not a permutation of ${t.rank} axes`);
  }
  const ax = axes.map((a) => normAxis(a, t.rank, 'permute'));
  const res = view(t, ax.map((a) => t.shape[a]!), ax.map((a) => t.strides[a]!), t.offset);
  const inverse = new Array<number>(ax.length);
  ax.forEach((a, i) => (inverse[a] = i));
  return record(res, 'permute', [t], (g) => [permute(g, inverse)]);
}

/** Swap two axes (a view). */
export function transpose(t: Tensor, a = -2, b = -1): Tensor {
  const axes = t.shape.map((_, i) => i);
  const i = normAxis(a, t.rank, 'transpose'), j = normAxis(b, t.rank, 'transpose');
  [axes[i], axes[j]] = [axes[j]!, axes[i]!];
  return permute(t, axes);
}

/** Elements `start … start+length-1` along `axis` (a view). */
export function narrow(t: Tensor, axis: number, start: number, length: number): Tensor {
  const a = normAxis(axis, t.rank, 'narrow');
  if (start < 0 || length < 0 || start + length > t.shape[a]!) {
    throw new ShapeError(`narrow: [${start}, ${start + length}) outside axis ${a} of size ${t.shape[a]}`);
  }
  const shape = t.shape.slice();
  shape[a] = length;
  const res = view(t, shape, t.strides, t.offset + start * t.strides[a]!);
  return record(res, 'narrow', [t], (g) => {
    const full = zerosF32(t.size);
    const gv = new Tensor(full, t.shape, 'f32');
    const dst = narrow(gv, a, start, length);
    scatterInto(dst, f32(g, 'narrow'));
    return [gv];
  });
}

/** Write contiguous `values` into the (possibly strided) view `dst`. */
function scatterInto(dst: Tensor, values: Float32Array): void {
  const r = dst.rank, n = dst.size, s = dst.storage as Float32Array;
  if (r === 0) { s[dst.offset] = values[0]!; return; }
  const idx = new Array<number>(r).fill(0);
  let o = dst.offset;
  for (let i = 0; i < n; i++) {
    s[o] = values[i]!;
    for (let ax = r - 1; ax >= 0; ax--) {
      idx[ax]!++;
      o += dst.strides[ax]!;
      if (idx[ax]! < dst.shape[ax]!) break;
      o -= dst.strides[ax]! * dst.shape[ax]!;
      idx[ax] = 0;
    }
  }
}

/** Insert an axis of size 1. */
export function unsqueeze(t: Tensor, axis: number): Tensor {
  const a = axis < 0 ? axis + t.rank + 1 : axis;
  const shape = t.shape.slice();
  shape.splice(a, 0, 1);
  return reshape(t, shape);
}

/** Remove an axis of size 1. */
export function squeeze(t: Tensor, axis: number): Tensor {
  const a = normAxis(axis, t.rank, 'squeeze');
  if (t.shape[a] !== 1) throw new ShapeError(`squeeze: axis ${a} has size ${t.shape[a]}`);
  return reshape(t, t.shape.filter((_, i) => i !== a));
}

/** A contiguous copy that keeps the autograd link. */
export function contiguous(t: Tensor): Tensor {
  if (t.isContiguous()) return t;
  const res = t.materialize();
  return record(new Tensor(res.raw, res.shape, res.dtype), 'contiguous', [t], (g) => [g]);
}

/** Concatenate float tensors along `axis`. */
export function cat(ts: readonly Tensor[], axis = 0): Tensor {
  if (ts.length === 0) throw new ShapeError('cat: no tensors');
  const a = normAxis(axis, ts[0]!.rank, 'cat');
  for (const t of ts) {
    if (t.rank !== ts[0]!.rank || t.shape.some((d, i) => i !== a && d !== ts[0]!.shape[i])) {
      throw new ShapeError(`cat: shapes [${ts[0]!.shape}] and [${t.shape}] differ off axis ${a}`);
    }
  }
  const shape = ts[0]!.shape.slice();
  shape[a] = ts.reduce((s, t) => s + t.shape[a]!, 0);
  const res = out(shape);
  const outer = numel(shape.slice(0, a)), inner = numel(shape.slice(a + 1));
  let off = 0;
  for (const t of ts) {
    const src = f32(t, 'cat'), len = t.shape[a]! * inner;
    for (let o = 0; o < outer; o++) res.data.set(src.subarray(o * len, o * len + len), o * shape[a]! * inner + off);
    off += len;
  }
  return record(res, 'cat', ts, (g) => {
    let start = 0;
    return ts.map((t) => {
      const part = narrow(g, a, start, t.shape[a]!).materialize();
      start += t.shape[a]!;
      return new Tensor(part.raw, part.shape, 'f32');
    });
  });
}
