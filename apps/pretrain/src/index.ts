// @apertus/pretrain — the pretraining app as a library: configuration, data preparation, the
// training loop and the Goldfish memorization experiment (the CLI is `apertus-pretrain`).

export { PretrainError, PretrainConfigError, DataInputError, ResumeError } from './errors';
export {
  DEFAULT_CONFIG,
  DEFAULT_UDHR_LANGUAGES,
  TRAINING_KEYS,
  resolveConfig,
  readConfigFile,
  changedTrainingKeys,
  flagName,
  type PretrainConfig,
  type ConfigKey,
  type ConfigLayer,
  type RawConfig,
} from './config';
export { prepareData, dataPaths, type PreparedData, type DataPaths, type DataStats } from './data';
export { buildModelConfig, buildOptimizer, buildScheduler, globalBatchSize } from './setup';
export { runPretraining, runPaths, checkpointConfig, type RunOptions, type RunResult } from './pretrain';
export {
  runGoldfishExperiment,
  type GoldfishExperimentOptions,
  type GoldfishExperimentResult,
  type RecallSummary,
  type DocumentRecall,
} from './goldfish-experiment';
export {
  runAblation,
  trainArm,
  ablationMarkdown,
  ABLATION_ARMS,
  PAPER_GOLDFISH,
  type AblationArm,
  type AblationOptions,
  type AblationResult,
  type ArmResult,
  type ArmRun,
  type Spread,
} from './ablate';
