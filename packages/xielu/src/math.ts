/**
 * xIELU in scalar float64 form, exactly as the reference implements it (HF `_xielu_python`):
 *
 *   αp = softplus(a_p),  αn = β + softplus(a_n)
 *   f(x) = αp·x² + β·x                       x > 0
 *   f(x) = αn·(expm1(min(x, ε)) − x) + β·x    x ≤ 0
 *
 * Each branch is evaluated only for its own x, so αp·x² never overflows for large negative x
 * and expm1 never sees large positive x.
 */

/** softplus(a) = ln(1 + eᵃ) (= a above 20, as the reference kernels do). */
export function softplus(a: number): number {
  return a > 20 ? a : Math.log1p(Math.exp(a));
}

/** σ(a) = 1 / (1 + e⁻ᵃ), the derivative of softplus. */
export function sigmoid(a: number): number {
  return a >= 0 ? 1 / (1 + Math.exp(-a)) : Math.exp(a) / (1 + Math.exp(a));
}

/** f(x) for raw parameters a_p, a_n and buffers β, ε. */
export function xieluValue(x: number, a_p: number, a_n: number, beta: number, eps: number): number {
  if (x > 0) return softplus(a_p) * x * x + beta * x;
  const alpha_n = beta + softplus(a_n);
  return alpha_n * (Math.expm1(Math.min(x, eps)) - x) + beta * x;
}

/** All partial derivatives of f at x (table of spec §3.3). */
export interface XieluGrads {
  /** ∂f/∂x */ dx: number;
  /** ∂f/∂a_p */ da_p: number;
  /** ∂f/∂a_n */ da_n: number;
  /** ∂f/∂β */ dbeta: number;
}

/** Partial derivatives of f at x; on (ε, 0] the clamped expm1 term is constant, so ∂f/∂x = β − αn. */
export function xieluGrads(x: number, a_p: number, a_n: number, beta: number, eps: number): XieluGrads {
  if (x > 0) return { dx: 2 * softplus(a_p) * x + beta, da_p: x * x * sigmoid(a_p), da_n: 0, dbeta: x };
  const alpha_n = beta + softplus(a_n);
  const m = Math.min(x, eps);
  const em1 = Math.expm1(m);
  return {
    dx: x <= eps ? alpha_n * em1 + beta : beta - alpha_n,
    da_p: 0,
    da_n: (em1 - x) * sigmoid(a_n),
    dbeta: em1,
  };
}
