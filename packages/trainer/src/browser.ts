// @apertus/trainer, browser entry (the package's `browser` export): the step logic of the shared
// training loop — micro-batches from packed rows (with the Goldfish mask), one optimizer step with
// gradient accumulation, clipping and the non-finite checks, the token-normalised causal-LM loss —
// and SVG line charts, with nothing from Node. Run directories, checkpoints, metrics files and the
// command line are in the Node entry.

export {
  TrainerError,
  TrainerOptionError,
  NonFiniteLossError,
  NonFiniteWeightError,
} from './errors';
export { collateLm, type TrainingSample, type LmBatch, type CollateOptions } from './batch';
export { causalLmLoss, summedLmLoss, type CausalLm } from './loss';
export { trainStep, type TrainStepOptions, type TrainStepResult, type StepOptimizer } from './train-step';
export { assertFiniteParameters, nonFiniteGradient } from './finite';
export { svgLineChart, niceTicks, smooth, escapeXml, CHART_MARGIN, type Series, type ChartOptions } from './chart';
