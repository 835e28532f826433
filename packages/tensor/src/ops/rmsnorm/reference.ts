import type { F32 } from '../../arrays';

export function rmsnorm(x: F32, w: F32, rows: number, n: number, eps: number, out: F32, rstd: F32): void {
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    let ss = 0;
    for (let j = 0; j < n; j++) ss += x[o + j]! * x[o + j]!;
    // HF normalises in float32: round the reciprocal to f32 like torch.rsqrt does.
    const rs = Math.fround(1 / Math.sqrt(ss / n + eps));
    rstd[r] = rs;
    for (let j = 0; j < n; j++) out[o + j] = w[j]! * Math.fround(x[o + j]! * rs);
  }
}

// y_j = w_j x_j r, r = (mean(x^2) + eps)^-1/2
// dx_j = r (w_j gy_j) - x_j r^3 / n * sum_k(w_k gy_k x_k);  dw_j = sum over rows of gy_j x_j r
export function rmsnormBackward(x: F32, w: F32, rstd: F32, gy: F32, rows: number, n: number, gx: F32, gw: F32): void {
  gw.fill(0);
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    const rs = rstd[r]!;
    let dot = 0;
    for (let j = 0; j < n; j++) dot += w[j]! * gy[o + j]! * x[o + j]!;
    const c = (dot * rs * rs * rs) / n;
    for (let j = 0; j < n; j++) {
      gx[o + j] = rs * w[j]! * gy[o + j]! - x[o + j]! * c;
      gw[j]! += gy[o + j]! * x[o + j]! * rs;
    }
  }
}
