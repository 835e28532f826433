// @apertus/sft — the SFT app as a library: configuration, data preparation and the run on
// @apertus/trainer's loop (the CLI is `apertus-sft`).

export { DEFAULT_CONFIG, DEFAULT_SFT_LANGUAGES, TRAINING_KEYS, SCHEMA, resolveConfig, type SftConfig } from './config';
export { prepareSftData, conversationsJsonl, type SftData } from './data';
export { runSft, sftLoss, type SftRunOptions } from './sft';
