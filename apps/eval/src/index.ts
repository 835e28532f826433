// @apertus/eval — the evaluation app as a library: the suite (held-out text, the held-out
// translation direction, memorization probes), per-stage evaluation and the side-by-side table
// (the CLI is `apertus-eval`).

export { EvalError, EvalOptionError } from './errors';
export { DEFAULT_SUITE, PRETRAIN_UDHR_LANGUAGES, loadSuiteTexts, probeSequences, type SuiteOptions, type SuiteTexts } from './suite';
export { evaluateStage, formatStages, type Stage, type StageResult } from './evaluate';
export { DEFAULT_STAGES, parseStage, parseEvalFlags, type RawEvalFlags } from './options';
