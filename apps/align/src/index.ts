// @apertus/align — the alignment app as a library: configuration and the QRPO / DPO run on @apertus/trainer's loop (the CLI is `apertus-align`).

export { DEFAULT_CONFIG, DEFAULT_ALIGN_LANGUAGES, DATA_KEYS, TRAINING_KEYS, dataSettings, SCHEMA, resolveConfig, effectiveBeta, type AlignConfig } from './config';
export { runAlignment, collatePairs, pairLoss, type AlignRunOptions, type PairBatch, type PairStats } from './align';
