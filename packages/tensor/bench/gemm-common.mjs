// What gemm-tfjs.mjs and gemm-profile.mjs share: the GEMM products of
// the target (#18): square 1024 and the products of a `small` training step (hidden 768,
// intermediate 3072, 4 KV heads of 64, vocabulary 32768; T = 256 tokens).

/** [name, M, N, K, transA, transB] of each product. */
export const GEMM_TARGET_SHAPES = [
  ['square 1024', 1024, 1024, 1024, false, false],
  ['small q/o x·Wᵀ', 256, 768, 768, false, true],
  ['small k/v x·Wᵀ', 256, 256, 768, false, true],
  ['small up x·Wᵀ', 256, 3072, 768, false, true],
  ['small down x·Wᵀ', 256, 768, 3072, false, true],
  ['small up dY·W', 256, 768, 3072, false, false],
  ['small up dWᵀ = dYᵀ·X', 3072, 768, 256, true, false],
  ['small LM head x·Wᵀ', 256, 32768, 768, false, true],
];

/** The shapes whose name contains one of `words` (all when `words` is null). */
export const pickShapes = (words) => GEMM_TARGET_SHAPES.filter(([n]) => words === null || words.some((w) => n.includes(w)));
