/**
 * The `.tokens` shard format of this package (little-endian throughout):
 *
 * ```
 * offset 0      8 bytes   magic "APTSHARD"
 * offset 8      u32       byte length J of the JSON header
 * offset 12     J bytes   JSON header (UTF-8, {@link ShardHeader}); space-padded up to byte 4096
 * offset 4096   tokens    numTokens × (2 bytes if dtype "uint16", 4 bytes if "uint32")
 * ...           zeros     up to the next multiple of 8
 * indexOffset   u64 × (numDocuments + 1)   document start offsets (local token
 *                                           index); the last entry is numTokens
 * ```
 *
 * The token stream of a shard is whole documents, each `BoD + text + EoD`; the
 * shards of a dataset concatenate into the corpus stream. A manifest
 * (`<prefix>.manifest.json`, {@link ShardManifest}) lists the shards in order.
 * Every file is written to a temporary name and renamed when complete.
 */

/** 8-byte magic at the start of every shard. */
export const SHARD_MAGIC = 'APTSHARD';
/** Bytes reserved for magic + length + JSON header; tokens start here. */
export const SHARD_HEADER_BYTES = 4096;
/** `format` field of shard headers. */
export const SHARD_FORMAT = 'apertus-token-shard';
/** `format` field of manifests. */
export const MANIFEST_FORMAT = 'apertus-token-shards';

/** Token storage type: `uint16` when every id fits (vocabSize ≤ 65536), else `uint32`. */
export type ShardDType = 'uint16' | 'uint32';

/** JSON header of one shard. */
export interface ShardHeader {
  /** Always {@link SHARD_FORMAT}. */
  readonly format: typeof SHARD_FORMAT;
  /** Format version (1). */
  readonly version: 1;
  /** Token storage type. */
  readonly dtype: ShardDType;
  /** Vocabulary size the ids were checked against. */
  readonly vocabSize: number;
  /** Beginning-of-document id. */
  readonly bodId: number;
  /** End-of-document id. */
  readonly eodId: number;
  /** Tokens in this shard. */
  readonly numTokens: number;
  /** Documents in this shard. */
  readonly numDocuments: number;
  /** Byte offset of the token array ({@link SHARD_HEADER_BYTES}). */
  readonly tokensOffset: number;
  /** Byte offset of the document index. */
  readonly indexOffset: number;
  /** 0-based position of this shard in its dataset. */
  readonly shardIndex: number;
  /** Corpus-wide offset of this shard's first token. */
  readonly firstToken: number;
  /** Corpus-wide ordinal of this shard's first document. */
  readonly firstDocument: number;
}

/** One entry of a manifest. */
export interface ManifestShard {
  /** Shard file name, relative to the manifest's directory. */
  readonly file: string;
  /** Tokens in the shard. */
  readonly numTokens: number;
  /** Documents in the shard. */
  readonly numDocuments: number;
  /** Corpus-wide offset of the shard's first token. */
  readonly firstToken: number;
  /** Corpus-wide ordinal of the shard's first document. */
  readonly firstDocument: number;
}

/** `<prefix>.manifest.json`: the shards of a dataset, in order. */
export interface ShardManifest {
  /** Always {@link MANIFEST_FORMAT}. */
  readonly format: typeof MANIFEST_FORMAT;
  /** Format version (1). */
  readonly version: 1;
  /** Token storage type of every shard. */
  readonly dtype: ShardDType;
  /** Vocabulary size. */
  readonly vocabSize: number;
  /** Beginning-of-document id. */
  readonly bodId: number;
  /** End-of-document id. */
  readonly eodId: number;
  /** Total tokens. */
  readonly numTokens: number;
  /** Total documents. */
  readonly numDocuments: number;
  /** Shards in corpus order. */
  readonly shards: readonly ManifestShard[];
}

/** Storage type for a vocabulary size. */
export function dtypeForVocab(vocabSize: number): ShardDType {
  return vocabSize <= 65536 ? 'uint16' : 'uint32';
}

/** Bytes per token of a storage type. */
export function itemSize(dtype: ShardDType): 2 | 4 {
  return dtype === 'uint16' ? 2 : 4;
}

/** Round `n` up to a multiple of 8. */
export function align8(n: number): number {
  return Math.ceil(n / 8) * 8;
}

/** Whether this machine stores typed arrays little-endian (all supported Node targets do). */
export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
