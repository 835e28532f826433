import { DTypeError } from '../errors';
import { heapF32, heapView } from '../memory/heap';
import { numel, type Shape } from '../shape';
import { Tensor } from '../tensor';

/** Contiguous float32 values of `t` on the host (a view when already contiguous f32, else a converted copy). */
export function f32(t: Tensor, op: string): Float32Array {
  if (t.dtype === 'i32') throw new DTypeError(`${op}: expected a float tensor, got i32 ${t}`);
  return t.dtype === 'f32' ? t.materialize().data : t.toFloat32();
}

/**
 * `t`'s contiguous float32 storage as a kernel argument: like `f32`, but a contiguous f32 tensor
 * is passed as it is, without a copy back from a device that holds its values (the kernels of
 * that device read them there; the other backends' kernels get host copies, see `backend.ts`).
 * A custom op (`defineOp`) passes its tensors to `kernel(op)` this way; `op` names it in errors.
 */
export function kernelF32(t: Tensor, op: string): Float32Array {
  if (t.dtype !== 'f32' || !t.isContiguous()) return f32(t, op);
  return heapView(t.raw as Float32Array, t.offset, t.offset + t.size);
}

/** Contiguous int32 values of an id tensor. */
export function i32(t: Tensor, op: string): Int32Array {
  if (t.dtype !== 'i32') throw new DTypeError(`${op}: expected an i32 tensor of ids, got ${t.dtype} ${t}`);
  return t.materialize().ints;
}

/** `n` zeroed floats of op output, in the cpu device memory (recycled through its pool). */
export function zerosF32(n: number): Float32Array {
  return heapF32(n);
}

/** A new float32 tensor of `shape` wrapping `data` (allocated on the cpu device when omitted). */
export function out(shape: Shape, data: Float32Array = heapF32(numel(shape))): Tensor {
  return new Tensor(data, shape, 'f32');
}

/** out[i] = f(x[i]) into new op output (what `Float32Array.map` does, on the cpu device). */
export function mapF32(x: Float32Array, f: (v: number) => number): Float32Array {
  const res = heapF32(x.length);
  for (let i = 0; i < x.length; i++) res[i] = f(x[i]!);
  return res;
}

/** Sum a gradient of broadcast shape `from` down to `to` (the inverse of broadcasting). */
export function sumTo(g: Float32Array, from: Shape, to: Shape): Float32Array {
  if (from.length === to.length && from.every((d, i) => d === to[i])) return g;
  const r = from.length;
  const padded = new Array<number>(r - to.length).fill(1).concat(to);
  const res = heapF32(numel(to));
  // Strides of the target inside the broadcast index space (0 on broadcast axes).
  const st = new Array<number>(r);
  let s = 1;
  for (let i = r - 1; i >= 0; i--) { st[i] = padded[i] === 1 ? 0 : s; s *= padded[i]!; }
  const idx = new Array<number>(r).fill(0);
  let o = 0;
  for (let i = 0; i < g.length; i++) {
    res[o]! += g[i]!;
    for (let ax = r - 1; ax >= 0; ax--) {
      idx[ax]!++;
      o += st[ax]!;
      if (idx[ax]! < from[ax]!) break;
      o -= st[ax]! * from[ax]!;
      idx[ax] = 0;
    }
  }
  return res;
}
