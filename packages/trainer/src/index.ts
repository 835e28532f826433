// @apertus/trainer — the training loop shared by the pretraining, SFT and alignment apps
// (`runTraining`): run directory with its lock, resume / overwrite, micro-batches with gradient
// accumulation and a token-normalised (Goldfish-masked) loss, clipping, optimizer and schedule
// steps, validation loss, atomic checksummed checkpoints, a JSONL metrics log, a progress bar, the
// loss-curve plot; the settings the apps share (one validator) and their command-line scaffold.
// The recipes that run on it (pretraining, SFT, alignment, evaluation) are @apertus/recipes.

export {
  TrainerError,
  TrainerOptionError,
  NonFiniteLossError,
  NonFiniteWeightError,
  CheckpointWriteError,
  CheckpointReadError,
  OutputWriteError,
  ConfigError,
  InputError,
  ResumeError,
  RunLockedError,
  InterruptedError,
  isDiskFull,
} from './errors';
export { collateLm, type TrainingSample, type LmBatch, type CollateOptions } from './batch';
export { causalLmLoss, summedLmLoss, type CausalLm } from './loss';
export { trainStep, type TrainStepOptions, type TrainStepResult, type StepOptimizer } from './train-step';
export { evaluateLm, type EvalResult } from './evaluate';
export { parseTrainerState, type TrainerState, type MetricRecord, type Json } from './trainer-state';
export { assertFiniteParameters, nonFiniteGradient } from './finite';
export { CHECKSUM_FILE, writeChecksums, verifyChecksums } from './checksums';
export { RunLock, LOCK_FILE } from './run-lock';
export { EpochOrder } from './epoch-order';
export {
  CheckpointManager,
  LATEST_FILE,
  CHECKPOINT_FILES,
  writeTrainingCheckpoint,
  readTrainingCheckpoint,
  readOptimizerState,
  readTrainerState,
  type CheckpointRef,
  type CheckpointManagerOptions,
  type TrainingCheckpoint,
  type LoadedTrainingCheckpoint,
} from './checkpoint';
export { MetricsLogger, readMetrics } from './metrics';
export { ProgressReporter, formatDuration, formatRate, type ProgressMode, type ProgressOptions, type ProgressUpdate } from './progress';
export { renderLossCurve, writeLossCurve, type LossCurveOptions } from './plot';
export { svgLineChart, niceTicks, smooth, escapeXml, CHART_MARGIN, type Series, type ChartOptions } from './chart';
export { ConfigField, field, flagName, readConfigLayer, mergeConfigLayers, configFailure, changedKeys, type FieldSpec, type ConfigSchema, type ConfigLayer, type RawConfig, type Resolved } from './config';
export {
  OPTIMIZER_FIELDS,
  BATCH_FIELDS,
  EPOCH_SCHEDULE_FIELDS,
  CHAT_TASK_FIELDS,
  RUN_FIELDS,
  trainingKeys,
  LORA_FIELDS,
  POST_TRAINING_OPTIMIZER_DEFAULTS,
  POST_TRAINING_RUN_DEFAULTS,
  POST_TRAINING_FIELDS,
  globalBatchSize,
  epochSteps,
  linearDecaySchedule,
  buildOptimizer,
  type OptimizerConfig,
  type BatchConfig,
  type EpochScheduleConfig,
  type ChatTaskConfig,
  type RunConfig,
  type LoraRunConfig,
  type PostTrainingConfig,
} from './run-config';
export { TOKENIZER_FILES, readTokenizerFiles, chatGenerationConfig } from './base-model';
export {
  runTraining,
  runPaths,
  checkpointLayer,
  validationTrend,
  type RunPaths,
  type RunTrainingOptions,
  type TrainingSetup,
  type SetupContext,
  type ResumePoint,
  type StepBatches,
  type TrainingOptimizer,
  type TrainingResult,
} from './run-training';
export { runTrainingCli, trainingProgram, addConfigFlags, reportError, withStopSignals, type TrainingCliSpec, type RunControl } from './cli';
