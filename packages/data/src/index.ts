/**
 * `@apertus/data`: compliant pretraining data for Apertus.ts — robots.txt, PII
 * and toxicity filters in the Apertus order, document readers (JSONL, text
 * folders, the bundled UDHR corpus), BoD/EoD packing with Megatron's
 * cross-document masks, token shards, a resumable data loader and Megatron
 * `.bin`/`.idx` export.
 */

export * from './errors';
export type { Document, DocumentSource, MetadataValue, TokenEncoder, TextEncoder } from './document';
export { unitHash, Xoshiro128 } from './hash';

export {
  RobotsTxt,
  normalizeRobotsPath,
  robotsPatternMatches,
  type RobotsDecision,
  type RobotsRule,
} from './robots/robots-txt';
export { DirectoryRobotsSource, MapRobotsSource, type RobotsSource } from './robots/sources';
export {
  APERTUS_AI_USER_AGENTS,
  RobotsFilter,
  type RobotsCounters,
  type RobotsFilterOptions,
  type RobotsMode,
} from './robots/robots-filter';

export {
  KEPT,
  addToStats,
  emptyFilterStats,
  type DocumentFilter,
  type FilterChange,
  type FilterReport,
  type FilterResult,
  type FilterStats,
} from './filters/report';
export {
  EMAIL_REGEX,
  IBAN_REGEX,
  IPV4_REGEX,
  PII_PATTERNS,
  PiiFilter,
  replacePii,
  type PiiKind,
  type PiiOptions,
  type PiiPattern,
  type PiiResult,
} from './filters/pii';
export {
  APERTUS_TOXICITY_THRESHOLDS,
  DEFAULT_TOXIC_WORDS,
  ToxicityFilter,
  WordListToxicityScorer,
  type ToxicityFilterOptions,
  type ToxicityScorer,
  type WordListScorerOptions,
} from './filters/toxicity';
export { SamplerFilter, type SamplerOptions } from './filters/sampler';
export { CompliancePipeline, PIPELINE_ORDER, type PipelineSteps } from './filters/pipeline';

export { JsonlReader, readJsonl, type JsonlOptions, type JsonlStats } from './readers/jsonl';
export { listTextFiles, readTextFolder, type TextFolderOptions } from './readers/text-folder';
export { corpusFingerprint, megatronPrefix, readCorpus, readMegatronDocuments, type CorpusOptions } from './readers/corpus';
export {
  parseUdhrHtml,
  readUdhr,
  readUdhrDeclarations,
  udhrDirectory,
  type UdhrDeclaration,
  type UdhrOptions,
  type UdhrSection,
} from './readers/udhr';
export { decodeHtmlEntities, parseHtml, textContent, type HtmlElement } from './readers/html';
export { assignSplit, selectSplit, type SplitName, type SplitOptions } from './split';

export { buildAttentionMask, buildSample, type PackedSample, type SampleOptions } from './packing/sample';
export { Packer, packDocuments, type PackInput, type PackingOptions } from './packing/packer';

export {
  MANIFEST_FORMAT,
  SHARD_FORMAT,
  SHARD_HEADER_BYTES,
  SHARD_MAGIC,
  dtypeForVocab,
  type ManifestShard,
  type ShardDType,
  type ShardHeader,
  type ShardManifest,
} from './shards/format';
export { ShardWriter, writeShards, type ShardWriterOptions } from './shards/writer';
export { ShardedTokens, TokenShard } from './shards/reader';
export { PackedDataset, type PackedDatasetOptions, type SampleSource } from './shards/dataset';

export { samplePermutation } from './loader/shuffle';
export {
  DataLoader,
  parseLoaderState,
  type DataLoaderOptions,
  type LoadedSample,
  type LoaderState,
} from './loader/data-loader';

export {
  MEGATRON_DTYPE_CODES,
  MEGATRON_INDEX_MAGIC,
  MegatronDatasetWriter,
  MegatronIndexedDataset,
  megatronDTypeForVocab,
  writeMegatronDataset,
  type MegatronArray,
  type MegatronDType,
  type MegatronTokenDType,
  type MegatronWriterOptions,
  type WriteMegatronOptions,
} from './megatron/indexed-dataset';
