// @apertus/goldfish — the Goldfish loss mask exactly as Apertus applies it, plus the
// memorization metrics shared by the Goldfish experiment and the evaluation.

export { GoldfishError } from './errors';
export type { GoldfishErrorCode } from './errors';
export { MT19937 } from './mt19937';
export { goldfishHashTable, GOLDFISH_TABLE_SIZE, GOLDFISH_TABLE_SEED } from './hash-table';
export { goldfishMask, combineMasks, keptCount, toFloatMask, APERTUS_GOLDFISH } from './mask';
export type { GoldfishOptions, GoldfishStrategy, GoldfishLabels, MaskLike } from './mask';
export { exactMatch, longestCommonSubstring, longestCommonSubsequence, rougeL, lcsNorm, typeTokenRatio } from './memorization';
