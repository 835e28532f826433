// @apertus/recipes — the Apertus recipes on @apertus/trainer's loop, one folder each:
//   pretrain/  pretraining (data preparation, WSD, Goldfish), the paper's ablations in miniature and
//              the Goldfish memorization experiment (`apertus-pretrain`)
//   sft/       supervised fine-tuning on chat conversations (`apertus-sft`)
//   align/     offline QRPO / DPO alignment (`apertus-align`)
//   eval/      the evaluation suite base → SFT → aligned (`apertus-eval`) and the held-out
//              translation record the post-training recipes log
//   tab/       training on a text in a browser tab (the studio; also in the `browser` entry)
// The apps are the command lines of these recipes.

export { PRETRAIN_DEFAULTS, DEFAULT_UDHR_LANGUAGES, PRETRAIN_TRAINING_KEYS, PRETRAIN_SCHEMA, resolvePretrainConfig, type PretrainConfig } from './pretrain/config';
export { prepareData, dataFingerprint, dataPaths, type PreparedData, type DataPaths, type DataStats } from './pretrain/data';
export { buildModelConfig, buildPretrainSchedule } from './pretrain/setup';
export { runPretraining, type RunOptions } from './pretrain/pretrain';
export { runGoldfishExperiment, type GoldfishExperimentOptions, type GoldfishExperimentResult, type RecallSummary, type DocumentRecall } from './pretrain/goldfish-experiment';
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
} from './pretrain/ablation';

export { SFT_DEFAULTS, DEFAULT_SFT_LANGUAGES, SFT_TRAINING_KEYS, SFT_SCHEMA, resolveSftConfig, type SftConfig } from './sft/config';
export { runSft, sftLoss, type SftRunOptions } from './sft/sft';
export { lmBatchOfSft, sftBatches } from './sft/batches';

export { ALIGN_DEFAULTS, DEFAULT_ALIGN_LANGUAGES, ALIGN_DATA_KEYS, ALIGN_TRAINING_KEYS, dataSettings, ALIGN_SCHEMA, resolveAlignConfig, effectiveBeta, type AlignConfig } from './align/config';
export { runAlignment, collatePairs, pairLoss, type AlignRunOptions, type PairBatch, type PairStats } from './align/align';

export { translationRecord, translationScores, chrfTrend, chrfSummary, type TranslationScores } from './eval/translation';
export {
  DEFAULT_SUITE,
  PRETRAIN_UDHR_LANGUAGES,
  loadSuiteTexts,
  probeSequences,
  evaluateStage,
  formatStages,
  type SuiteOptions,
  type SuiteTexts,
  type Stage,
  type StageResult,
} from './eval/suite';
export { DEFAULT_STAGES, parseStage, parseEvalFlags, type RawEvalFlags } from './eval/options';

export { trainOnText, windowsOf, type TextTraining, type TextTrainee } from './tab/train-on-text';
