// Preference data for QRPO / DPO (training-recipe.md §3.5, Apertus `prepare_train_dataset`):
// quantile rewards against the reference completions and the chosen/rejected pair selection.
//
// Per prompt, the candidate pool ("branches") is the dataset's offline completions plus n
// completions sampled from the reference policy (flagged `isReference`). Every branch gets
//   R_q = #{ reference rewards ≤ its reward } / n        (a reference completion counts itself).
// Pair selection, with a per-prompt seeded stream:
//   1. shuffle the branches, then sort by R_q descending (stable: ties keep the shuffled order);
//   2. buckets: best R_q ≥ 1, worst R_q ≤ max(0.2, 1/n), middle the rest (each in sorted order);
//   3. first pair: chosen = first of best, else of middle, else of worst; rejected = first of
//      worst, else of middle, else of best ("first" = highest R_q in the bucket);
//   4. each further pair: the remaining branches (best, middle, worst order) split into R_q ≥ 0.5
//      and R_q < 0.5, each shuffled once; chosen = next of the ≥ 0.5 list (else of the < 0.5 list),
//      rejected = next of the < 0.5 list (else of the ≥ 0.5 list); the two are ordered by R_q
//      descending.
// Prompts with fewer than `minRefRewards` (default 2) reference rewards, or fewer than
// 2 · numPairs branches, are dropped and counted.

import { Xoshiro128 } from '@apertus/data';
import { quantileReward } from '@apertus/qrpo';
import { checkOption, PosttrainError } from './errors';

/** One completion of a prompt with its reward. */
export interface Branch<T = string> {
  /** The completion (text, messages, ids — anything). */
  readonly completion: T;
  /** Its reward R(x, y). */
  readonly reward: number;
  /** True for completions sampled from the reference policy π_ref (their rewards define R_q). */
  readonly isReference: boolean;
}

/** A branch with its quantile reward. */
export interface ScoredBranch<T = string> extends Branch<T> {
  /** R_q ∈ [0, 1]. */
  readonly quantileReward: number;
}

/** A prompt with its candidate completions. */
export interface PreferencePrompt<T = string, P = string> {
  /** The prompt (text, messages, …). */
  readonly prompt: P;
  /** Offline and reference completions with rewards. */
  readonly branches: readonly Branch<T>[];
}

/** One training pair. */
export interface PreferencePair<T = string, P = string> {
  /** Index of the prompt in the input. */
  readonly promptIndex: number;
  /** The prompt, as given. */
  readonly prompt: P;
  /** The branch with the higher R_q (first pair: the best branch). */
  readonly chosen: ScoredBranch<T>;
  /** The other branch. */
  readonly rejected: ScoredBranch<T>;
  /** The prompt's reference rewards (n of them). */
  readonly refRewards: readonly number[];
}

/** Options of {@link buildPreferencePairs}. */
export interface PreferenceOptions {
  /** Pairs per prompt. Default 1 (the Apertus sweeps used 1 or 2; the reference config default is 3). */
  readonly numPairs?: number;
  /** Seed of the shuffles. Default 0. Prompt i uses the stream (seed, i), independent of the others. */
  readonly seed?: number;
  /** Prompts with fewer reference rewards are dropped. Default 2; must be ≥ 2. */
  readonly minRefRewards?: number;
}

/** Result of {@link buildPreferencePairs}. */
export interface PreferenceDataset<T = string, P = string> {
  /** `numPairs` pairs for each kept prompt, prompt by prompt. */
  readonly pairs: PreferencePair<T, P>[];
  /** Prompts dropped for having fewer than `minRefRewards` reference rewards. */
  readonly droppedFewReferences: number;
  /** Prompts dropped for having fewer than 2 · numPairs branches. */
  readonly droppedFewBranches: number;
}

/** R_q of every branch against the reference branches' rewards (throws when there is none). */
export function quantileRewards<T>(branches: readonly Branch<T>[]): ScoredBranch<T>[] {
  const refs = branches.filter((b) => b.isReference).map((b) => b.reward);
  if (refs.length === 0) throw new PosttrainError('InvalidPreference', 'no reference completion among the branches', { field: 'branches' });
  return branches.map((b) => ({ ...b, quantileReward: quantileReward(b.reward, refs) }));
}

function shuffle<X>(xs: X[], rng: Xoshiro128): void {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = rng.nextBelow(i + 1);
    const t = xs[i]!;
    xs[i] = xs[j]!;
    xs[j] = t;
  }
}

/**
 * The §3.5 selection for one prompt: `numPairs` `[chosen, rejected]` pairs from branches with
 * quantile rewards, given the number n of reference rewards. Needs ≥ 2 · numPairs branches.
 */
export function selectPreferencePairs<T>(branches: readonly ScoredBranch<T>[], numRefRewards: number, numPairs: number, rng: Xoshiro128): [ScoredBranch<T>, ScoredBranch<T>][] {
  checkOption(Number.isInteger(numPairs) && numPairs >= 1, 'numPairs', `expected a positive integer, got ${numPairs}`);
  checkOption(Number.isInteger(numRefRewards) && numRefRewards >= 1, 'numRefRewards', `expected a positive integer, got ${numRefRewards}`);
  if (branches.length < 2 * numPairs) {
    throw new PosttrainError('InvalidPreference', `${numPairs} pair(s) need ${2 * numPairs} branches, got ${branches.length}`, { field: 'branches' });
  }
  const sorted = [...branches];
  shuffle(sorted, rng);
  sorted.sort((a, b) => b.quantileReward - a.quantileReward);
  const worstValue = Math.max(0.2, 1 / numRefRewards);
  const best = sorted.filter((b) => b.quantileReward >= 1);
  const middle = sorted.filter((b) => b.quantileReward < 1 && b.quantileReward > worstValue);
  const worst = sorted.filter((b) => b.quantileReward <= worstValue);
  const take = (...lists: ScoredBranch<T>[][]): ScoredBranch<T> => lists.find((l) => l.length > 0)!.shift()!;
  const pairs: [ScoredBranch<T>, ScoredBranch<T>][] = [];
  const chosen = take(best, middle, worst);
  const rejected = take(worst, middle, best);
  pairs.push([chosen, rejected]);
  if (numPairs > 1) {
    const remaining = [...best, ...middle, ...worst];
    const top = remaining.filter((b) => b.quantileReward >= 0.5);
    const bottom = remaining.filter((b) => b.quantileReward < 0.5);
    shuffle(top, rng);
    shuffle(bottom, rng);
    for (let k = 1; k < numPairs; k++) {
      const c = take(top, bottom);
      const r = take(bottom, top);
      pairs.push(r.quantileReward > c.quantileReward ? [r, c] : [c, r]);
    }
  }
  return pairs;
}

/**
 * Quantile rewards and §3.5 pairs for a whole dataset. Deterministic for a seed; each prompt's
 * shuffles use their own stream, so the pairs of one prompt do not depend on the others.
 */
export function buildPreferencePairs<T, P>(prompts: readonly PreferencePrompt<T, P>[], options: PreferenceOptions = {}): PreferenceDataset<T, P> {
  const numPairs = options.numPairs ?? 1;
  const seed = options.seed ?? 0;
  const minRefRewards = options.minRefRewards ?? 2;
  checkOption(Number.isInteger(numPairs) && numPairs >= 1, 'numPairs', `expected a positive integer, got ${numPairs}`);
  checkOption(Number.isSafeInteger(seed) && seed >= 0, 'seed', `expected a non-negative integer, got ${seed}`);
  // with a single reference reward, 1/n = 1 puts R_q = 1 in both the best and worst buckets
  checkOption(Number.isInteger(minRefRewards) && minRefRewards >= 2, 'minRefRewards', `expected an integer ≥ 2, got ${minRefRewards}`);
  const pairs: PreferencePair<T, P>[] = [];
  let droppedFewReferences = 0;
  let droppedFewBranches = 0;
  prompts.forEach((p, i) => {
    p.branches.forEach((b, k) => {
      if (!Number.isFinite(b.reward)) throw new PosttrainError('InvalidPreference', `reward ${b.reward} is not finite`, { field: `prompts[${i}].branches[${k}].reward` });
    });
    if (p.branches.length < 2 * numPairs) {
      droppedFewBranches++;
      return;
    }
    const refRewards = p.branches.filter((b) => b.isReference).map((b) => b.reward);
    if (refRewards.length < minRefRewards) {
      droppedFewReferences++;
      return;
    }
    const scored = quantileRewards(p.branches);
    for (const [chosen, rejected] of selectPreferencePairs(scored, refRewards.length, numPairs, new Xoshiro128(seed, i))) {
      pairs.push({ promptIndex: i, prompt: p.prompt, chosen, rejected, refRewards });
    }
  });
  return { pairs, droppedFewReferences, droppedFewBranches };
}
