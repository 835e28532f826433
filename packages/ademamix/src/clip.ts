// Global-norm gradient clipping, as Megatron / torch.nn.utils.clip_grad_norm_ do it
// (training-recipe.md §1.3): total L2 norm over every gradient, coef = maxNorm / (norm + 1e-6),
// gradients multiplied by coef only when coef < 1.
//
// Gradients that live on a device (`deviceStorage`: backend webgpu) are reduced there: their
// squared norms add up in one device value, parameter by parameter, and only that one number is
// read back; the scale by coef runs there too. Host gradients are summed here in double.

import { deviceStorage, readBack, scaleBy, sumSquares } from '@apertus/tensor';
import { OptimizerError } from './errors';
import type { FloatArray, OptimParam } from './types';

function paramOf(x: OptimParam | readonly [string, OptimParam]): OptimParam {
  return Array.isArray(x) ? (x as readonly [string, OptimParam])[1] : (x as OptimParam);
}

/** The gradients of `params` (those that have one), split by where they live. */
function gradients(params: Iterable<OptimParam | readonly [string, OptimParam]>): { host: FloatArray[]; device: Float32Array[] } {
  const host: FloatArray[] = [];
  const device: Float32Array[] = [];
  for (const x of params) {
    const p = paramOf(x);
    if (p.grad === null) continue;
    const d = deviceStorage(p.grad);
    if (d !== null) device.push(d);
    else host.push(p.grad.data);
  }
  return { host, device };
}

/** sqrt(Σ g²) over both kinds: host gradients in double, device ones on the device (one value read back). */
function norm({ host, device }: { host: FloatArray[]; device: Float32Array[] }): number {
  let sum = 0;
  for (const g of host) {
    let s = 0;
    for (let i = 0; i < g.length; i++) s += g[i]! * g[i]!;
    sum += s;
  }
  if (device.length > 0) {
    const acc = new Float32Array(1);
    device.forEach((g, i) => sumSquares(g, i === 0 ? null : acc, acc));
    readBack(acc, { readOnly: true });
    sum += acc[0]!;
  }
  return Math.sqrt(sum);
}

/**
 * Total L2 norm of all gradients: `sqrt(Σ_params Σ_i g_i²)`, accumulated in double on the host
 * (in float32 on a device, for gradients that live there). Parameters whose `grad` is `null` are skipped.
 */
export function gradNorm(params: Iterable<OptimParam | readonly [string, OptimParam]>): number {
  return norm(gradients(params));
}

/**
 * Clip gradients in place to a global L2 norm of at most `maxNorm` and return the norm measured
 * **before** clipping. With `norm` the total norm, `coef = maxNorm / (norm + 1e-6)`; when
 * `coef < 1` every gradient value is multiplied by `coef` (rounded to float32 first for Float32Array
 * gradients, as torch multiplies by a float32 tensor). A non-finite norm is returned unchanged and
 * nothing is scaled; callers should then skip the step. Gradients on a device stay there: only
 * the norm is read back.
 * @param params - parameters, or `[name, param]` pairs (e.g. a Map's entries)
 * @param maxNorm - clipping threshold (> 0); Apertus pretraining uses 0.1, SFT 1.0, alignment 20
 * @throws OptimizerError `InvalidClip` when `maxNorm` is not a positive finite number
 */
export function clipGradNorm(params: Iterable<OptimParam | readonly [string, OptimParam]>, maxNorm: number): number {
  if (typeof maxNorm !== 'number' || !Number.isFinite(maxNorm) || maxNorm <= 0) {
    throw new OptimizerError('InvalidClip', `maxNorm must be a positive finite number, got ${String(maxNorm)}`, { field: 'maxNorm' });
  }
  const grads = gradients(params);
  const total = norm(grads);
  if (!Number.isFinite(total)) return total;
  const coef = maxNorm / (total + 1e-6);
  if (coef < 1) {
    for (const g of grads.host) {
      const c = g instanceof Float32Array ? Math.fround(coef) : coef;
      for (let i = 0; i < g.length; i++) g[i] = g[i]! * c;
    }
    for (const g of grads.device) scaleBy(g, Math.fround(coef));
  }
  return total;
}
