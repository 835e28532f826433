/**
 * The elementwise xIELU kernels of the `xielu` op: WebAssembly SIMD (`simd.ts`, f32 lanes) where
 * it is available, else the reference below (each element in float64, rounded once to f32).
 */
import { xieluBackwardSimd, xieluSimdAvailable } from './simd';

/** y[i] = f(x[i]) with αp, αn, β, ε (reference, float64). */
export function xieluForwardJs(xs: Float32Array, y: Float32Array, alpha_p: number, alpha_n: number, beta: number, eps: number): void {
  for (let i = 0; i < xs.length; i++) {
    const v = xs[i]!;
    y[i] = v > 0 ? v * (alpha_p * v + beta) : alpha_n * (Math.expm1(v < eps ? v : eps) - v) + beta * v;
  }
}

/**
 * gx[i] = gy[i]·f′(x[i]); returns [Σ gy·x² over x > 0, Σ gy·(expm1(min(x, ε)) − x) over x ≤ 0]
 * (float64 sums), the parts of ∂/∂a_p and ∂/∂a_n before the softplus derivative (reference).
 */
export function xieluBackwardJs(xs: Float32Array, gy: Float32Array, gx: Float32Array, alpha_p: number, alpha_n: number, beta: number, eps: number): [number, number] {
  let sp = 0, sn = 0;
  const em1eps = Math.expm1(eps);
  for (let i = 0; i < xs.length; i++) {
    const v = xs[i]!, gi = gy[i]!;
    if (v > 0) {
      gx[i] = gi * (2 * alpha_p * v + beta);
      sp += gi * v * v;
    } else if (v <= eps) {
      const em1 = Math.expm1(v);
      gx[i] = gi * (alpha_n * em1 + beta);
      sn += gi * (em1 - v);
    } else {
      gx[i] = gi * (beta - alpha_n);
      sn += gi * (em1eps - v);
    }
  }
  return [sp, sn];
}

const simd = xieluSimdAvailable();

/**
 * The forward kernel in use: the reference. The SIMD forward (`xieluForwardSimd`, tested against it
 * to 12u) matches it element for element, yet with it the tiny model's gradients on backend
 * `webgpu` drift from the cpu backend's by up to 5e-3 relative in the first two layers (with the
 * reference forward: below 1e-4); until that interaction is understood, the forward stays scalar.
 */
export const xieluForward = xieluForwardJs;
/** The backward kernel in use (SIMD where available). */
export const xieluBackward = simd ? xieluBackwardSimd : xieluBackwardJs;
