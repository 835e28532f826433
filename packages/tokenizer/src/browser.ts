// @apertus/tokenizer, browser entry (the package's `browser` export): exact byte-level BPE
// (Hugging Face tokenizer.json, given as text or parsed JSON), the Apertus chat template, and BPE
// training in the Apertus layout, with nothing from Node.

export { TokenizerError, type TokenizerErrorCode, type TokenizerErrorContext } from './errors.js';
export {
  Tokenizer,
  withSpecialTokensMap,
  SPECIAL_TOKEN_KEYS,
  type TokenizerJson,
  type TokenizerConfigJson,
  type ConfigToken,
  type Encoding,
  type EncodeOptions,
  type DecodeOptions,
  type LoadOptions,
} from './tokenizer.js';
export { DecodeStream, cleanUpTokenizationSpaces, type DecoderConfig } from './decoder.js';
export { BpeModel, type BpeModelConfig } from './bpe.js';
export { AddedVocabulary, type AddedTokenConfig } from './added-tokens.js';
export {
  PreTokenizer,
  APERTUS_PRETOKENIZER_PATTERN,
  GPT2_PRETOKENIZER_PATTERN,
  type PreTokenizerConfig,
  type SplitBehavior,
  type Pieces,
} from './pretokenizer.js';
export { Normalizer, type NormalizerConfig, type NormalizedText } from './normalizer.js';
export { PostProcessor, type PostProcessorConfig, type TemplatePiece } from './post-processor.js';
export { onigurumaToJs, compileOniguruma } from './regex.js';
export {
  buildApertus1p5TokenizerJson,
  APERTUS_1P5_NORMALIZER_RULES,
  APERTUS_1P5_RESERVED,
  APERTUS_1P5_VISUAL_TOKENS,
  APERTUS_1P5_AUDIO_TOKENS,
} from './apertus-1p5.js';
export { StringTable } from './string-table.js';
export { BYTE_TO_CHAR, bytesToByteLevel, byteLevelToBytes } from './byte-level.js';
export {
  APERTUS_TOKEN_IDS,
  APERTUS_BOS_ID,
  APERTUS_EOS_ID,
  APERTUS_PAD_ID,
  APERTUS_UNK_ID,
  APERTUS_ASSISTANT_END_ID,
  APERTUS_STOP_IDS,
  APERTUS_BYTE_OFFSET,
  APERTUS_FIRST_MERGE_ID,
  APERTUS_VOCAB_SIZE,
  APERTUS_SPECIAL_TOKENS,
  buildApertusTokenizerJson,
  buildApertusTokenizerConfig,
  createApertusTokenizer,
  type ApertusTokenizerOptions,
} from './apertus.js';
export {
  renderApertusChat,
  applyApertusChatTemplate,
  pyJson,
  type ChatMessage,
  type ChatToolCall,
  type ChatTool,
  type AssistantBlock,
  type JsonSchema,
  type ChatTemplateOptions,
  type RenderedChat,
  type TokenizedChat,
} from './chat-template.js';
export { trainApertusBpe, type TrainBpeOptions, type TrainedBpe } from './train.js';
