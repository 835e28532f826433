// @apertus/pretrain — the pretraining app as a library: configuration, data preparation, the run
// on @apertus/trainer's loop and the Goldfish memorization experiment (the CLI is `apertus-pretrain`).

export { DEFAULT_CONFIG, DEFAULT_UDHR_LANGUAGES, TRAINING_KEYS, SCHEMA, resolveConfig, type PretrainConfig } from './config';
export { prepareData, dataFingerprint, dataPaths, type PreparedData, type DataPaths, type DataStats } from './data';
export { buildModelConfig, buildSchedule } from './setup';
export { runPretraining, type RunOptions } from './pretrain';
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
