// @apertus/sft — the SFT app as a library: configuration, data preparation and the training loop
// (the CLI is `apertus-sft`).

export { SftError, SftConfigError, SftInputError, SftResumeError } from './errors';
export {
  DEFAULT_CONFIG,
  DEFAULT_SFT_LANGUAGES,
  TRAINING_KEYS,
  resolveConfig,
  readConfigFile,
  changedTrainingKeys,
  flagName,
  type SftConfig,
  type ConfigKey,
  type ConfigLayer,
  type RawConfig,
} from './config';
export { TOKENIZER_FILES, isModelDir } from '@apertus/trainer';
export { resolveModelDir, loadModel, loadModelTokenizer, chatGenerationConfig } from './base-model';
export { prepareSftData, conversationsJsonl, collate, toLmBatch, type SftData } from './data';
export { ExampleOrder } from './loader';
export {
  runSft,
  sftPaths,
  checkpointConfig,
  globalBatchSize,
  totalSteps,
  buildOptimizer,
  buildScheduler,
  sftLoss,
  type SftRunOptions,
  type SftResult,
  type TranslationScores,
} from './sft';
