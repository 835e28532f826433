// Pretraining on the shared loop: configuration, data preparation, the run itself, the Goldfish
// memorization experiment and the paper's ablations in miniature (`apertus-pretrain` is their CLI).

export { PRETRAIN_DEFAULTS, DEFAULT_UDHR_LANGUAGES, PRETRAIN_TRAINING_KEYS, PRETRAIN_SCHEMA, resolvePretrainConfig, type PretrainConfig } from './config';
export { prepareData, dataFingerprint, dataPaths, type PreparedData, type DataPaths, type DataStats } from './data';
export { buildModelConfig, buildPretrainSchedule } from './setup';
export { runPretraining, type RunOptions } from './pretrain';
export { runGoldfishExperiment, type GoldfishExperimentOptions, type GoldfishExperimentResult, type RecallSummary, type DocumentRecall } from './goldfish-experiment';
export {
  runAblation,
  trainArm,
  ablationMarkdown,
  ABLATION_ARMS,
  ABLATION_BASE,
  DEFAULT_GOLDFISH,
  PAPER_GOLDFISH,
  type AblationArm,
  type AblationOptions,
  type AblationResult,
  type ArmResult,
  type ArmRun,
  type Spread,
} from './ablation';
