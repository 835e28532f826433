// @apertus/sft — the SFT app as a library: configuration and the run on
// @apertus/trainer's loop (the CLI is `apertus-sft`).

export { DEFAULT_CONFIG, DEFAULT_SFT_LANGUAGES, TRAINING_KEYS, SCHEMA, resolveConfig, type SftConfig } from './config';
export { runSft, sftLoss, type SftRunOptions } from './sft';
