// Weight-decay parameter groups as Megatron builds them for Apertus (training-recipe.md §1.3):
// no decay (wd_mult = 0) for biases, 1-D tensors (norm weights) and the xIELU scalars.

import type { OptimParam } from './types';

/** xIELU parameter names (HF layout `mlp.act_fn.*`) that never get weight decay. */
const XIELU_SUFFIXES = ['act_fn.alpha_p', 'act_fn.alpha_n', 'act_fn.beta', 'act_fn.eps'] as const;
/** Substrings Megatron checks for its own xIELU parameter names. */
const MEGATRON_NO_DECAY_SUBSTRINGS = ['alpha_p', 'alpha_n', 'power'] as const;

/**
 * Whether a parameter is excluded from weight decay: its name ends with `.bias`, it has rank ≤ 1
 * (norm weights, scalars), its name ends with one of the xIELU parameters (`act_fn.alpha_p`,
 * `act_fn.alpha_n`, `act_fn.beta`, `act_fn.eps`), or it contains `alpha_p`, `alpha_n` or `power`
 * (Megatron's rule for its xIELU names).
 */
export function isNoWeightDecay(name: string, shape: readonly number[]): boolean {
  if (shape.length <= 1) return true;
  if (name.endsWith('.bias') || name === 'bias') return true;
  if (XIELU_SUFFIXES.some((s) => name === s || name.endsWith(`.${s}`))) return true;
  return MEGATRON_NO_DECAY_SUBSTRINGS.some((s) => name.includes(s));
}

/** The two Megatron-style groups of a model's parameters. */
export interface WeightDecaySplit {
  /** Parameters that get the configured weight decay. */
  readonly decay: Array<[string, OptimParam]>;
  /** Parameters with weight decay 0 (see {@link isNoWeightDecay}). */
  readonly noDecay: Array<[string, OptimParam]>;
}

/**
 * Split named parameters into a decay and a no-decay list, keeping the input order.
 * @param params - named parameters
 * @param noDecay - predicate deciding which parameters get no weight decay (default {@link isNoWeightDecay})
 */
export function splitWeightDecay(
  params: Iterable<readonly [string, OptimParam]>,
  noDecay: (name: string, shape: readonly number[]) => boolean = isNoWeightDecay,
): WeightDecaySplit {
  const decay: Array<[string, OptimParam]> = [];
  const none: Array<[string, OptimParam]> = [];
  for (const [name, p] of params) (noDecay(name, p.shape) ? none : decay).push([name, p]);
  return { decay, noDecay: none };
}
