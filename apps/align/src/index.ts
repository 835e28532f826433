// @apertus/align — the alignment app as a library: configuration, prompts, rewards, the offline
// preference-data pipeline and the QRPO / DPO run on @apertus/trainer's loop (the CLI is `apertus-align`).

export { DEFAULT_CONFIG, DEFAULT_ALIGN_LANGUAGES, DATA_KEYS, TRAINING_KEYS, SCHEMA, resolveConfig, effectiveBeta, type AlignConfig } from './config';
export { loadPrompts, readPromptFile, parsePromptRecord, type AlignPrompt } from './prompts';
export { loadReward, type LoadedReward } from './rewards';
export {
  prepareAlignData,
  preparedFor,
  referenceLogProbs,
  sourceFingerprint,
  sampleSeeds,
  dataFiles,
  type PrepareOptions,
  type AlignData,
  type AlignDataStats,
  type PairRecord,
  type PairSide,
  type ScoredRow,
} from './preference-data';
export { runAlignment, collatePairs, pairLoss, type AlignRunOptions, type PairBatch, type PairStats } from './align';
