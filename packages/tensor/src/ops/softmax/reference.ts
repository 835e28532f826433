import type { F32 } from '../../arrays';

export function softmax(x: F32, rows: number, n: number, out: F32): void {
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    let m = -Infinity;
    for (let j = 0; j < n; j++) if (x[o + j]! > m) m = x[o + j]!;
    let s = 0;
    for (let j = 0; j < n; j++) { const e = Math.exp(x[o + j]! - m); out[o + j] = e; s += e; }
    const inv = 1 / s;
    for (let j = 0; j < n; j++) out[o + j]! *= inv;
  }
}

export function softmaxBackward(y: F32, gy: F32, rows: number, n: number, gx: F32): void {
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    let dot = 0;
    for (let j = 0; j < n; j++) dot += gy[o + j]! * y[o + j]!;
    for (let j = 0; j < n; j++) gx[o + j] = y[o + j]! * (gy[o + j]! - dot);
  }
}

export function logSoftmax(x: F32, rows: number, n: number, out: F32): void {
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    let m = -Infinity;
    for (let j = 0; j < n; j++) if (x[o + j]! > m) m = x[o + j]!;
    let s = 0;
    for (let j = 0; j < n; j++) s += Math.exp(x[o + j]! - m);
    const lse = m + Math.log(s);
    for (let j = 0; j < n; j++) out[o + j] = x[o + j]! - lse;
  }
}

export function logSoftmaxBackward(y: F32, gy: F32, rows: number, n: number, gx: F32): void {
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    let s = 0;
    for (let j = 0; j < n; j++) s += gy[o + j]!;
    for (let j = 0; j < n; j++) gx[o + j] = gy[o + j]! - Math.exp(y[o + j]!) * s;
  }
}
