import { record } from '../../autograd';
import { normAxis, numel } from '../../shape';
import type { Tensor } from '../../tensor';
import { f32, kernelF32, mapF32, out, zerosF32 } from '../util';
import { maxKernel, sumKernel, sumSquaresKernel } from './kernel';

function split(t: Tensor, axis: number, op: string): [number, number, number, number] {
  const a = normAxis(axis, t.rank, op);
  return [a, numel(t.shape.slice(0, a)), t.shape[a]!, numel(t.shape.slice(a + 1))];
}

function reducedShape(t: Tensor, a: number, keepdim: boolean): number[] {
  return keepdim ? t.shape.map((d, i) => (i === a ? 1 : d)) : t.shape.filter((_, i) => i !== a);
}

/** Sum over `axis` (all elements when omitted). */
export function sum(t: Tensor, axis?: number, keepdim = false): Tensor {
  if (axis === undefined) {
    const xs = kernelF32(t, 'sum');
    const res = out([]);
    sumKernel.run(xs, 1, xs.length, 1, res.data);
    return record(res, 'sum', [t], (g) => [out(t.shape, zerosF32(t.size).fill(g.item()))]);
  }
  const [a, outer, n, inner] = split(t, axis, 'sum');
  const res = out(reducedShape(t, a, keepdim));
  sumKernel.run(kernelF32(t, 'sum'), outer, n, inner, res.data);
  return record(res, 'sum', [t], (g) => {
    const gs = f32(g, 'sum'), gx = zerosF32(t.size);
    for (let o = 0; o < outer; o++) for (let j = 0; j < n; j++) gx.set(gs.subarray(o * inner, o * inner + inner), (o * n + j) * inner);
    return [out(t.shape, gx)];
  });
}

/** Mean over `axis` (all elements when omitted). */
export function mean(t: Tensor, axis?: number, keepdim = false): Tensor {
  const n = axis === undefined ? t.size : t.shape[normAxis(axis, t.rank, 'mean')]!;
  const s = sum(t, axis, keepdim);
  const res = out(s.shape, mapF32(s.data, (v) => v / n));
  return record(res, 'mean', [s], (g) => [out(s.shape, mapF32(f32(g, 'mean'), (v) => v / n))]);
}

/** Maximum over `axis`; the gradient flows to the first maximal element. */
export function max(t: Tensor, axis: number, keepdim = false): Tensor {
  const [a, outer, n, inner] = split(t, axis, 'max');
  const res = out(reducedShape(t, a, keepdim));
  const arg = new Int32Array(outer * inner);
  maxKernel.run(kernelF32(t, 'max'), outer, n, inner, res.data, arg);
  return record(res, 'max', [t], (g) => {
    const gs = f32(g, 'max'), gx = zerosF32(t.size);
    for (let o = 0; o < outer; o++) for (let i = 0; i < inner; i++) gx[(o * n + arg[o * inner + i]!) * inner + i] = gs[o * inner + i]!;
    return [out(t.shape, gx)];
  });
}

/** Index of the maximum over the last axis (no gradient), as plain numbers. */
export function argmax(t: Tensor): Int32Array {
  const n = t.shape[t.rank - 1]!;
  const outer = t.size / n;
  const arg = new Int32Array(outer);
  maxKernel.run(kernelF32(t, 'argmax'), outer, n, 1, new Float32Array(outer), arg);
  return arg;
}

/** out[0] = acc[0] + Σ x[i]² (acc null: 0) on the current device; `out` may be `acc` (squared norms of many arrays summed in one value). */
export function sumSquares(x: Float32Array, acc: Float32Array | null, out: Float32Array): void {
  sumSquaresKernel.run(x, acc, out);
}
