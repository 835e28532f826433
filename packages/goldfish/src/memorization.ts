// Memorization metrics on token ids (training-recipe.md §2.6): exact match (Goldfish paper),
// and Rouge-L / normalised longest common substring / type-token ratio (Apertus memorization
// evaluation), with the same edge-case conventions as the reference.

type Tokens = ArrayLike<number>;

/** True iff `generated` and `reference` have the same length and equal ids everywhere (Goldfish "exact match" of a 50-token suffix). */
export function exactMatch(generated: Tokens, reference: Tokens): boolean {
  if (generated.length !== reference.length) return false;
  for (let i = 0; i < reference.length; i++) if (generated[i] !== reference[i]) return false;
  return true;
}

/** Length of the longest common contiguous run of ids (longest common substring), O(|a|·|b|) time, O(|b|) memory. */
export function longestCommonSubstring(a: Tokens, b: Tokens): number {
  const m = b.length;
  let prev = new Int32Array(m + 1);
  let cur = new Int32Array(m + 1);
  let best = 0;
  for (let i = 1; i <= a.length; i++) {
    const x = a[i - 1];
    for (let j = 1; j <= m; j++) {
      const v = x === b[j - 1] ? prev[j - 1]! + 1 : 0;
      cur[j] = v;
      if (v > best) best = v;
    }
    [prev, cur] = [cur, prev];
  }
  return best;
}

/** Length of the longest common subsequence (not necessarily contiguous), O(|a|·|b|) time, O(|b|) memory. */
export function longestCommonSubsequence(a: Tokens, b: Tokens): number {
  const m = b.length;
  let prev = new Int32Array(m + 1);
  let cur = new Int32Array(m + 1);
  for (let i = 1; i <= a.length; i++) {
    const x = a[i - 1];
    for (let j = 1; j <= m; j++) cur[j] = x === b[j - 1] ? prev[j - 1]! + 1 : Math.max(prev[j]!, cur[j - 1]!);
    [prev, cur] = [cur, prev];
  }
  return prev[m]!;
}

/** Rouge-L F1 on ids: P = LCS/|candidate|, R = LCS/|reference|, F1 = 2PR/(P+R); 0 when either is empty or nothing matches. */
export function rougeL(reference: Tokens, candidate: Tokens): number {
  if (reference.length === 0 || candidate.length === 0) return 0;
  const lcs = longestCommonSubsequence(reference, candidate);
  const p = lcs / candidate.length;
  const r = lcs / reference.length;
  return p + r === 0 ? 0 : (2 * p * r) / (p + r);
}

/** `lcs_norm`: longest common substring / |reference|; 0 when either is empty. */
export function lcsNorm(reference: Tokens, candidate: Tokens): number {
  if (reference.length === 0 || candidate.length === 0) return 0;
  return longestCommonSubstring(reference, candidate) / reference.length;
}

/** Type-token ratio: distinct ids / ids; 0 for an empty sequence. */
export function typeTokenRatio(tokens: Tokens): number {
  if (tokens.length === 0) return 0;
  return new Set(Array.from(tokens)).size / tokens.length;
}
