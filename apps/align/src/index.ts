// @apertus/align — the alignment app as a library: configuration, prompts, rewards, the offline
// preference-data pipeline and the QRPO / DPO training loop (the CLI is `apertus-align`).

export { AlignError, AlignConfigError, AlignInputError, AlignResumeError, AlignInterruptedError } from './errors';
export {
  DEFAULT_CONFIG,
  DEFAULT_ALIGN_LANGUAGES,
  DATA_KEYS,
  TRAINING_KEYS,
  resolveConfig,
  readConfigFile,
  changedKeys,
  effectiveBeta,
  flagName,
  type AlignConfig,
  type ConfigKey,
  type ConfigLayer,
  type RawConfig,
} from './config';
export { TOKENIZER_FILES, isModelDir } from '@apertus/trainer';
export { resolveModelDir, loadModel, loadModelTokenizer, chatGenerationConfig } from './base-model';
export { loadPrompts, readPromptFile, parsePromptRecord, type AlignPrompt } from './prompts';
export { loadReward, type LoadedReward } from './rewards';
export {
  prepareAlignData,
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
export { PairOrder } from './loader';
export {
  runAlignment,
  alignPaths,
  checkpointConfig,
  globalBatchSize,
  totalSteps,
  buildOptimizer,
  buildScheduler,
  collatePairs,
  pairLoss,
  type AlignRunOptions,
  type AlignResult,
  type PairBatch,
  type PairStats,
  type TranslationScores,
} from './align';
