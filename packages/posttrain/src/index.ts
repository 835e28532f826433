// @apertus/posttrain — groundwork of the Apertus post-training stage (training-recipe.md §3, §5,
// §6): SFT chat data, the bundled UDHR translation task, QRPO preference pairs and rewards, the
// offline preference-data pipeline (reference samples, rewards, pairs, reference log-probs),
// sacreBLEU-exact chrF/BLEU, perplexity, and the evaluation report base → SFT → aligned.

export { PosttrainError } from './errors';
export type { PosttrainErrorCode, PosttrainErrorContext } from './errors';

export { corpusChrf, sentenceChrf } from './metrics/chrf';
export type { ChrfOptions, ChrfScore, References } from './metrics/chrf';
export { corpusBleu, sentenceBleu } from './metrics/bleu';
export type { BleuOptions, BleuScore, BleuSmoothing } from './metrics/bleu';
export { tokenize13a } from './metrics/tokenize-13a';
export { perplexity } from './metrics/perplexity';
export type { NllSum } from './metrics/perplexity';

export { buildUdhrTranslationTask, translationPrompt, UDHR_HELD_OUT, UDHR_LANGUAGE_NAMES } from './udhr-translation';
export type { TranslationExample, UdhrTranslationOptions, UdhrTranslationTask } from './udhr-translation';

export { parseSftRecord, parseSftRow, readSftJsonl, tokenizeSftConversation, tokenizeSftDataset, tokenizeSftRecord } from './sft-data';
export type { SftConversation, SftDatasetStats, SftExample, SftPromptCompletion, SftRecord, SftSource, SftText, SftTokenizeOptions } from './sft-data';
export { conversationsJsonl, prepareSftData } from './sft-prepare';
export type { SftData, SftDataConfig } from './sft-prepare';
export { collateSft, countLossTokens, packSft } from './sft-batch';
export type { CollateOptions, SftBatch, SftRow } from './sft-batch';

export { buildPreferencePairs, quantileRewards, selectPreferencePairs } from './preference';
export type { Branch, PreferenceDataset, PreferenceOptions, PreferencePair, PreferencePrompt, ScoredBranch } from './preference';
export { dataFiles, prepareAlignData, preparedFor, referenceLogProbs, sampleSeeds, sourceFingerprint } from './preference-data';
export type { AlignData, AlignDataStats, AlignPrompt, PairRecord, PairSide, PreferenceDataConfig, PrepareOptions, ReferenceModel, ScoredRow } from './preference-data';
export { loadPrompts, parsePromptRecord, readPromptFile } from './align-prompts';
export type { AlignPromptsConfig } from './align-prompts';
export { chrfReward, httpReward, jsReward, loadReward, modelReward, scoreCompletions } from './rewards';
export type { HttpRewardOptions, LoadRewardOptions, LoadedReward, LoadedRewardModel, ModelRewardOptions, RewardFunction } from './rewards';

export { evaluateMemorization, evaluatePerplexity, evaluateSuite, evaluateTranslation } from './eval';
export type {
  EvalSuite,
  MemorizationOptions,
  MemorizationProbe,
  MemorizationResult,
  PerplexityOptions,
  PerplexityResult,
  TranslationEvalOptions,
  TranslationEvalResult,
  TranslationOutput,
  TranslationPrompt,
} from './eval';
export { formatEvalReport } from './eval-report';
export type { EvalReport, EvalStage, ReportFormatOptions } from './eval-report';
