/**
 * xIELU, the reference kernels (each element in float64, rounded once to f32):
 *
 *   y  = αp·x² + β·x                          x > 0
 *   y  = αn·(expm1(min(x, ε)) − x) + β·x       x ≤ 0
 *   gx = g·(2αp·x + β) | g·(αn·expm1(x) + β) (x ≤ ε) | g·(β − αn) (ε < x ≤ 0)
 *
 * The element loops take αp and αn as numbers; `xielu` / `xieluBackward` are the reference kernels
 * of the ops (αp and softplus(a_n) as one-element arrays, αn = β + softplus(a_n)).
 */
import { ShapeError } from '@apertus/tensor';

type F32 = Float32Array;

/** y[i] = f(x[i]) with αp, αn, β, ε. */
export function xieluForwardJs(xs: F32, y: F32, alpha_p: number, alpha_n: number, beta: number, eps: number): void {
  for (let i = 0; i < xs.length; i++) {
    const v = xs[i]!;
    y[i] = v > 0 ? v * (alpha_p * v + beta) : alpha_n * (Math.expm1(v < eps ? v : eps) - v) + beta * v;
  }
}

/**
 * gx[i] = gy[i]·f′(x[i]); returns [Σ gy·x² over x > 0, Σ gy·(expm1(min(x, ε)) − x) over x ≤ 0]
 * (float64 sums), the parts of ∂/∂a_p and ∂/∂a_n before the softplus derivative.
 */
export function xieluBackwardJs(xs: F32, gy: F32, gx: F32, alpha_p: number, alpha_n: number, beta: number, eps: number): [number, number] {
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

/** The shared argument checks of every backend's xIELU kernels. */
export function checkXielu(op: string, x: F32, alpha_p: F32, softplus_n: F32, outs: Record<string, F32>): void {
  expectLength(op, 'alpha_p', alpha_p, 1);
  expectLength(op, 'softplus_n', softplus_n, 1);
  for (const name in outs) expectLength(op, name, outs[name]!, name.startsWith('sum') ? 1 : x.length);
}

/** Throw unless `a` has `n` elements (no arrays built: the check runs on every decode step's activations). */
function expectLength(op: string, name: string, a: F32, n: number): void {
  if (a.length !== n) throw new ShapeError(`${op}: ${name} has ${a.length} elements, expected ${n}`);
}

/** The reference `xielu` kernel. */
export function xielu(x: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, out: F32): void {
  checkXielu('xielu', x, alpha_p, softplus_n, { out });
  xieluForwardJs(x, out, alpha_p[0]!, beta + softplus_n[0]!, beta, eps);
}

/** The reference `xieluBackward` kernel. */
export function xieluBackward(x: F32, gy: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, gx: F32, sumP: F32, sumN: F32): void {
  checkXielu('xieluBackward', x, alpha_p, softplus_n, { gy, gx, sumP, sumN });
  [sumP[0], sumN[0]] = xieluBackwardJs(x, gy, gx, alpha_p[0]!, beta + softplus_n[0]!, beta, eps);
}
