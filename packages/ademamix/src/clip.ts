// Global-norm gradient clipping, as Megatron / torch.nn.utils.clip_grad_norm_ do it
// (training-recipe.md §1.3): total L2 norm over every gradient, coef = maxNorm / (norm + 1e-6),
// gradients multiplied by coef only when coef < 1.

import { OptimizerError } from './errors';
import type { OptimParam } from './types';

function paramOf(x: OptimParam | readonly [string, OptimParam]): OptimParam {
  return Array.isArray(x) ? (x as readonly [string, OptimParam])[1] : (x as OptimParam);
}

/**
 * Total L2 norm of all gradients: `sqrt(Σ_params Σ_i g_i²)`, accumulated in double.
 * Parameters whose `grad` is `null` are skipped.
 */
export function gradNorm(params: Iterable<OptimParam | readonly [string, OptimParam]>): number {
  let sum = 0;
  for (const x of params) {
    const p = paramOf(x);
    if (p.grad === null) continue;
    const g = p.grad.data;
    let s = 0;
    for (let i = 0; i < g.length; i++) s += g[i]! * g[i]!;
    sum += s;
  }
  return Math.sqrt(sum);
}

/**
 * Clip gradients in place to a global L2 norm of at most `maxNorm` and return the norm measured
 * **before** clipping. With `norm` the total norm, `coef = maxNorm / (norm + 1e-6)`; when
 * `coef < 1` every gradient value is multiplied by `coef` (rounded to float32 first for Float32Array
 * gradients, as torch multiplies by a float32 tensor). A non-finite norm is returned unchanged and
 * nothing is scaled; callers should then skip the step.
 * @param params - parameters, or `[name, param]` pairs (e.g. a Map's entries)
 * @param maxNorm - clipping threshold (> 0); Apertus pretraining uses 0.1, SFT 1.0, alignment 20
 * @throws OptimizerError `InvalidClip` when `maxNorm` is not a positive finite number
 */
export function clipGradNorm(params: Iterable<OptimParam | readonly [string, OptimParam]>, maxNorm: number): number {
  if (typeof maxNorm !== 'number' || !Number.isFinite(maxNorm) || maxNorm <= 0) {
    throw new OptimizerError('InvalidClip', `maxNorm must be a positive finite number, got ${String(maxNorm)}`, { field: 'maxNorm' });
  }
  const list = [...params].map(paramOf);
  const norm = gradNorm(list);
  if (!Number.isFinite(norm)) return norm;
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) {
    for (const p of list) {
      if (p.grad === null) continue;
      const g = p.grad.data;
      const c = g instanceof Float32Array ? Math.fround(coef) : coef;
      for (let i = 0; i < g.length; i++) g[i] = g[i]! * c;
    }
  }
  return norm;
}
