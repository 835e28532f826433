// @apertus/ademamix — AdEMAMix and AdamW with Megatron-style parameter groups, global-norm
// clipping, bit-exact resumable state, and the Warmup-Stable-Decay learning-rate schedule.

export type { FloatArray, OptimParam, NamedParams } from './types';
export { OptimizerError } from './errors';
export type { OptimizerErrorCode, OptimizerErrorContext } from './errors';
export { Optimizer } from './optimizer';
export type { BaseHyperparameters, ParamGroupInput, GroupingOptions, ArithmeticOptions, Arithmetic, OptimizerGroup, ParamState } from './optimizer';
export { AdEMAMix, ADEMAMIX_DEFAULTS, APERTUS_PRETRAINING_ADEMAMIX, ademamixCoefficients } from './ademamix';
export type { AdEMAMixHyperparameters, AdEMAMixOptions, SchedulerConvention } from './ademamix';
export { AdamW, ADAMW_DEFAULTS } from './adamw';
export type { AdamWHyperparameters, AdamWOptions } from './adamw';
export { alphaWarmup, beta3Warmup, beta3WarmupClosedForm } from './schedulers';
export { isNoWeightDecay, splitWeightDecay } from './param-groups';
export type { WeightDecaySplit } from './param-groups';
export { clipGradNorm, gradNorm } from './clip';
export { fmaF32, fmaF64 } from './fma';
export { powInt } from './pow';
export { dtypeOf } from './state-dict';
export type { JsonValue, StateDtype, StateTensor, StateGroupMeta, OptimizerStateMeta, OptimizerStateDict } from './state-dict';
export {
  wsdSchedule,
  linearWarmupDecaySchedule,
  constantSchedule,
  warmupStepsFromRatio,
  cooldownCoefficient,
  LrScheduler,
  APERTUS_8B_WSD,
} from './wsd';
export type { LrSchedule, CooldownStyle, WsdOptions, LinearWarmupDecayOptions } from './wsd';
