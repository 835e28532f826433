// @apertus/eval — the `apertus-eval` command. Its suite (held-out text, the held-out translation
// direction, memorization probes), per-stage evaluation, side-by-side table and option parser are
// @apertus/trainer's evaluation module, re-exported here.

export { DEFAULT_SUITE, DEFAULT_STAGES, evaluateStage, formatStages, loadSuiteTexts, parseEvalFlags, parseStage, probeSequences } from '@apertus/trainer';
export type { RawEvalFlags, Stage, StageResult, SuiteOptions, SuiteTexts } from '@apertus/trainer';
