/**
 * @apertus/qrpo — Quantile Reward Policy Optimization (QRPO) and DPO losses on @apertus/tensor.
 * @packageDocumentation
 */
export { quantileReward, normalIcdf, transformReward, apertusBeta, type QuantileTransform } from './quantile';
export { qrpoLoss, dpoLoss, type Completions, type QrpoOptions, type DpoOptions } from './losses';
export { sequenceLogProbs } from './logprobs';
