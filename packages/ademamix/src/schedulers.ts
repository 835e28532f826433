// AdEMAMix warm-up schedulers for alpha and beta3 (training-recipe.md §1.2).
//
// alpha:  linear from alpha_start = 0 to alpha over T_alpha steps.
// beta3:  linear in half-life space from beta_start = beta1 to beta3 over T_beta3 steps, with
//         h(b) = ln(0.5)/ln(b + 1e-8) - 1 and h^-1(x) = 0.5^(1/(x+1)). The 1e-8 inside the log is
//         what the PyTorch reference (and Megatron) compute; the closed form of the paper has none.
// Both are evaluated at the 1-based step t (the counter is incremented before use).

/** Linear warm-up of AdEMAMix's alpha: `(1 - t/T)·alphaStart + (t/T)·alpha` for `t < T`, else `alpha`. */
export function alphaWarmup(t: number, alpha: number, warmup: number, alphaStart = 0): number {
  if (t < warmup) {
    const a = t / warmup;
    return (1 - a) * alphaStart + a * alpha;
  }
  return alpha;
}

/** Half-life of an EMA coefficient, `ln(0.5)/ln(beta + eps) - 1` (the reference uses eps = 1e-8). */
function halfLife(beta: number, eps: number): number {
  return Math.log(0.5) / Math.log(beta + eps) - 1;
}

/** Inverse of {@link halfLife} (without the 1e-8): `0.5^(1/(x+1))`. */
function halfLifeInverse(x: number): number {
  return Math.pow(0.5, 1 / (x + 1));
}

/**
 * Warm-up of AdEMAMix's beta3, linear in half-life space from `betaStart` (= beta1 in AdEMAMix) to
 * `beta3` over `warmup` steps, exactly as the PyTorch reference computes it (1e-8 inside the log).
 * At `t = 0` this returns `betaStart + 1e-8` up to rounding (e.g. 0.90000001), as the reference does.
 * `logEps` is the constant inside the log: 1e-8 for PyTorch/Megatron, 0 for the optax version.
 */
export function beta3Warmup(t: number, beta3: number, warmup: number, betaStart: number, logEps = 1e-8): number {
  if (t < warmup) {
    const a = t / warmup;
    return halfLifeInverse((1 - a) * halfLife(betaStart, logEps) + a * halfLife(beta3, logEps));
  }
  return beta3;
}

/**
 * Closed form of the beta3 warm-up used by the paper, bitsandbytes and pytorch_optimizer (no 1e-8):
 * `min(exp(ln(b1)·ln(b3) / ((1 - t/T)·ln(b3) + (t/T)·ln(b1))), b3)`. Algebraically equal to
 * {@link beta3Warmup}; numerically ~1e-7 apart. Provided for comparison; the optimizer uses the
 * reference form.
 */
export function beta3WarmupClosedForm(t: number, beta3: number, warmup: number, betaStart: number): number {
  const a = t / warmup;
  const lb1 = Math.log(betaStart);
  const lb3 = Math.log(beta3);
  return Math.min(Math.exp((lb1 * lb3) / ((1 - a) * lb3 + a * lb1)), beta3);
}
