// @apertus/trainer — the training-loop machinery shared by the pretraining, SFT and alignment
// apps: micro-batches with gradient accumulation and a token-normalised (Goldfish-masked) loss,
// clipping, optimizer and schedule steps, validation loss, atomic resumable checkpoints, a JSONL
// metrics log, a progress bar and the loss-curve plot.

export { TrainerError, TrainerOptionError, NonFiniteLossError, CheckpointWriteError, CheckpointReadError, OutputWriteError, isDiskFull } from './errors';
export { writeFileAtomic, fsyncDirectory, fsyncTree, tempSibling } from './atomic';
export { collateLm, type TrainingSample, type LmBatch, type CollateOptions } from './batch';
export { causalLmLoss, summedLmLoss, type CausalLm } from './loss';
export { trainStep, type TrainStepOptions, type TrainStepResult, type StepOptimizer } from './train-step';
export { evaluateLm, type EvalResult } from './evaluate';
export { parseTrainerState, type TrainerState, type MetricRecord, type Json } from './trainer-state';
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
export { renderLossCurve, writeLossCurve, svgLineChart, niceTicks, smooth, escapeXml, CHART_MARGIN, type Series, type ChartOptions, type LossCurveOptions } from './plot';
export { ConfigField, flagName, readConfigLayer, mergeConfigLayers, configFailure, type ConfigErrorFactory, type ConfigLayer, type RawConfig } from './config-layers';
export { TOKENIZER_FILES, isModelDir, findModelDir, missingModelReason, readTokenizerFiles } from './model-dir';
