import { ShapeError } from '../../errors';
import type { F32, I32 } from '../../arrays';

export function sum(x: F32, outer: number, n: number, inner: number, out: F32): void {
  for (let o = 0; o < outer; o++) {
    const base = o * n * inner;
    if (inner === 1) {
      let s = 0;
      for (let j = 0; j < n; j++) s += x[base + j]!;
      out[o] = s;
      continue;
    }
    const acc = new Float64Array(inner);
    for (let j = 0; j < n; j++) {
      const row = base + j * inner;
      for (let i = 0; i < inner; i++) acc[i]! += x[row + i]!;
    }
    for (let i = 0; i < inner; i++) out[o * inner + i] = acc[i]!;
  }
}

export function max(x: F32, outer: number, n: number, inner: number, out: F32, arg: I32): void {
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      let best = -Infinity, bi = 0;
      for (let j = 0; j < n; j++) {
        const v = x[(o * n + j) * inner + i]!;
        if (v > best || (j === 0 && Number.isNaN(v))) { best = v; bi = j; }
      }
      out[o * inner + i] = best;
      arg[o * inner + i] = bi;
    }
  }
}

/** ShapeError unless `acc` (when given) and `out` hold one value each. */
export function checkSumSquares(acc: F32 | null, out: F32): void {
  if (out.length !== 1 || (acc !== null && acc.length !== 1)) throw new ShapeError('sumSquares: acc and out hold one value each');
}

/** out[0] = acc[0] + Σ x[i]², summed in double. */
export function sumSquares(x: F32, acc: F32 | null, out: F32): void {
  checkSumSquares(acc, out);
  let s = acc === null ? 0 : acc[0]!;
  for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
  out[0] = s;
}

