// The data path of a run: read the corpus (UDHR, JSONL or a text folder) → compliance filters
// (robots opt-outs, toxicity, PII; training-recipe §7) → train/validation split → tokenizer (given
// or trained with BPE on the training split) → token shards with BoD/EoD under <out>/data. A
// Megatron `.bin/.idx` prefix is tokenized already: its documents go straight to the split and the
// shards (with the given tokenizer).
// A `prepared.json` fingerprint lets a rerun or a resume reuse the shards and the tokenizer.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '@apertus/atomic-file';
import {
  CompliancePipeline,
  DataError,
  DirectoryRobotsSource,
  PiiFilter,
  RobotsFilter,
  ShardWriter,
  ToxicityFilter,
  assignSplit,
  corpusFingerprint,
  megatronPrefix,
  readCorpus,
  readMegatronDocuments,
  type Document,
  type FilterStats,
} from '@apertus/data';
import { APERTUS_BOS_ID, APERTUS_EOS_ID, Tokenizer, loadTokenizerFromDirectory, saveTokenizer, trainApertusBpe } from '@apertus/tokenizer';
import { InputError, readTokenizerFiles } from '@apertus/trainer';
import type { PretrainConfig } from './config';

/** Version of the prepared-data layout; bump to invalidate old `prepared.json` files. */
const PREPARED_VERSION = 1;

/** Where the prepared data of a run lives. */
export interface DataPaths {
  /** `<out>/data`. */
  readonly root: string;
  /** `<out>/data/train/shard.manifest.json`. */
  readonly trainManifest: string;
  /** `<out>/data/validation/shard.manifest.json`. */
  readonly validationManifest: string;
  /** `<out>/data/prepared.json`. */
  readonly prepared: string;
  /** `<out>/tokenizer`. */
  readonly tokenizerDir: string;
}

/** Paths of the prepared data under `out`. */
export function dataPaths(out: string): DataPaths {
  const root = path.join(out, 'data');
  return {
    root,
    trainManifest: path.join(root, 'train', 'shard.manifest.json'),
    validationManifest: path.join(root, 'validation', 'shard.manifest.json'),
    prepared: path.join(root, 'prepared.json'),
    tokenizerDir: path.join(out, 'tokenizer'),
  };
}

/** Counts reported by {@link prepareData}. */
export interface DataStats {
  /** Documents read from the source. */
  readonly read: number;
  /** Documents removed by the compliance filters. */
  readonly removed: number;
  /** Training documents and tokens (BoD/EoD included). */
  readonly train: { readonly documents: number; readonly tokens: number };
  /** Validation documents and tokens. */
  readonly validation: { readonly documents: number; readonly tokens: number };
  /** Compliance statistics (per filter). */
  readonly filters: FilterStats | null;
}

/** Result of {@link prepareData}. */
export interface PreparedData {
  /** The tokenizer of the run (saved in `<out>/tokenizer`). */
  readonly tokenizer: Tokenizer;
  /** Files of the tokenizer, to copy into every checkpoint. */
  readonly tokenizerFiles: Readonly<Record<string, string>>;
  /** Paths of the shards. */
  readonly paths: DataPaths;
  /** Whether a validation split exists. */
  readonly hasValidation: boolean;
  /** Counts. */
  readonly stats: DataStats;
  /** True when the shards of an earlier run were reused. */
  readonly reused: boolean;
  /** Fingerprint of the inputs (stored in checkpoints; a resume requires the same). */
  readonly fingerprint: string;
}

function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

function statOrThrow(p: string, what: string): fs.Stats {
  try {
    return fs.statSync(p);
  } catch (cause) {
    throw new InputError(p, `${what} not found or not accessible (${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message})`, { cause });
  }
}

/** The data package's errors as InputError naming the data (their message names the file). */
function inputError(cfg: PretrainConfig, e: unknown): unknown {
  return e instanceof DataError ? new InputError(cfg.data, e.message, { cause: e }) : e;
}

/** The text documents of the configured corpus, streamed. */
async function* corpus(cfg: PretrainConfig): AsyncGenerator<Document> {
  try {
    yield* readCorpus({ source: cfg.data, languages: cfg.languages, maxDocumentChars: cfg.maxDocumentChars, limitName: '--max-document-chars' });
  } catch (e) {
    throw inputError(cfg, e);
  }
}

function buildPipeline(cfg: PretrainConfig): CompliancePipeline {
  return new CompliancePipeline({
    ...(cfg.robots !== null ? { robots: new RobotsFilter({ source: new DirectoryRobotsSource(cfg.robots) }) } : {}),
    toxicity: new ToxicityFilter(),
    pii: new PiiFilter(),
  });
}

/** Compliant documents with their split. */
async function* compliantDocuments(cfg: PretrainConfig, pipeline: CompliancePipeline, counts: { read: number; removed: number }): AsyncGenerator<{ doc: Document; split: 'train' | 'validation' }> {
  for await (const raw of corpus(cfg)) {
    counts.read++;
    const { document, report } = await pipeline.apply(raw);
    if (!report.kept) {
      counts.removed++;
      continue;
    }
    yield { doc: document, split: assignSplit(document, { fraction: cfg.validationFraction, seed: cfg.seed }) };
  }
}

/** Encoder for the packer: no `<s>` from the template (the shard writer adds BoD/EoD), special tokens kept literal. */
function encoderOf(tokenizer: Tokenizer): { encode(text: string): number[] } {
  return { encode: (text) => tokenizer.encodeIds(text, { addSpecialTokens: false, splitSpecialTokens: false }) };
}

/**
 * The fingerprint of a run's data: the corpus files (paths, sizes, modification times), the split,
 * the filters and the tokenizer source. Computed without writing anything (a resume compares it
 * with its checkpoint's before the data is prepared).
 */
export async function dataFingerprint(cfg: PretrainConfig): Promise<string> {
  let tokenizerSource: unknown;
  if (cfg.tokenizer !== null) {
    const file = path.join(cfg.tokenizer, 'tokenizer.json');
    statOrThrow(file, 'tokenizer.json');
    tokenizerSource = { given: path.resolve(cfg.tokenizer), sha256: sha256(fs.readFileSync(file)) };
  } else {
    tokenizerSource = { trained: { vocabSize: cfg.vocabSize, sampleChars: cfg.tokenizerSampleChars } };
  }
  return JSON.stringify({
    version: PREPARED_VERSION,
    source: await corpusFingerprint({ source: cfg.data, languages: cfg.languages }).catch((e: unknown) => Promise.reject(inputError(cfg, e))),
    validationFraction: cfg.validationFraction,
    seed: cfg.seed,
    maxDocumentChars: cfg.maxDocumentChars,
    robots: cfg.robots === null ? null : path.resolve(cfg.robots),
    tokenizer: tokenizerSource,
  });
}

/**
 * Prepare (or reuse) the tokenizer and the token shards of a run under `cfg.out`.
 * @throws InputError for missing/unreadable/empty/oversized data
 */
export async function prepareData(cfg: PretrainConfig, log: (message: string) => void = () => {}, fingerprint?: string): Promise<PreparedData> {
  const paths = dataPaths(cfg.out);
  fingerprint ??= await dataFingerprint(cfg);

  // Reuse an earlier preparation with the same fingerprint.
  if (fs.existsSync(paths.prepared) && fs.existsSync(path.join(paths.tokenizerDir, 'tokenizer.json'))) {
    try {
      const prev = JSON.parse(fs.readFileSync(paths.prepared, 'utf8')) as { fingerprint: string; stats: DataStats; hasValidation: boolean };
      if (prev.fingerprint === fingerprint && fs.existsSync(paths.trainManifest)) {
        const tokenizer = loadTokenizerFromDirectory(paths.tokenizerDir);
        log(`data: reusing ${paths.root} (${prev.stats.train.tokens} training tokens, ${prev.stats.validation.tokens} validation tokens)`);
        return { tokenizer, tokenizerFiles: readTokenizerFiles(paths.tokenizerDir), paths, hasValidation: prev.hasValidation, stats: prev.stats, reused: true, fingerprint };
      }
    } catch {
      // unreadable or stale: prepare again
    }
  }
  fs.rmSync(paths.root, { recursive: true, force: true });
  fs.mkdirSync(paths.tokenizerDir, { recursive: true });

  // 1. Tokenizer: the given one, or BPE trained on (a prefix of) the compliant training split.
  const megatron = megatronPrefix(cfg.data);
  if (megatron !== null && cfg.tokenizer === null) throw new InputError(`${megatron}.idx`, 'a Megatron dataset holds token ids: give the tokenizer that wrote them (--tokenizer <dir>)');
  let tokenizer: Tokenizer;
  if (cfg.tokenizer !== null) {
    tokenizer = loadTokenizerFromDirectory(cfg.tokenizer);
    for (const [name, text] of Object.entries(readTokenizerFiles(cfg.tokenizer))) writeFileAtomic(path.join(paths.tokenizerDir, name), text);
    log(`tokenizer: ${cfg.tokenizer} (${tokenizer.vocabSize} ids)`);
  } else {
    const texts: string[] = [];
    let chars = 0;
    const counts = { read: 0, removed: 0 };
    for await (const { doc, split } of compliantDocuments(cfg, buildPipeline(cfg), counts)) {
      if (split !== 'train') continue;
      texts.push(doc.text);
      chars += doc.text.length;
      if (chars >= cfg.tokenizerSampleChars) break;
    }
    if (texts.length === 0) throw new InputError(cfg.data, `no training document to train the tokenizer on (${counts.read} read, ${counts.removed} removed by the compliance filters, the rest held out for validation)`);
    const t0 = performance.now();
    // A base model: EOS </s> (id 2) in tokenizer_config.json, as in config.json and generation_config.json.
    const trained = trainApertusBpe(texts, { vocabSize: cfg.vocabSize, instruct: false });
    saveTokenizer(paths.tokenizerDir, trained.tokenizerJson, trained.tokenizerConfig);
    tokenizer = loadTokenizerFromDirectory(paths.tokenizerDir);
    log(`tokenizer: trained byte-level BPE on ${chars} characters in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${trained.merges.length} merges, ${trained.vocabSize} ids (Apertus layout, <s>=1, </s>=2)`);
  }
  if (tokenizer.vocabSize <= Math.max(APERTUS_BOS_ID, APERTUS_EOS_ID)) throw new InputError(paths.tokenizerDir, `tokenizer has only ${tokenizer.vocabSize} ids`);

  // 2. Shards: BoD + tokens + EoD per document, streamed into the split's shard set.
  const common = { vocabSize: tokenizer.vocabSize, bodId: APERTUS_BOS_ID, eodId: APERTUS_EOS_ID };
  const writers = {
    train: new ShardWriter({ ...common, directory: path.dirname(paths.trainManifest) }),
    validation: new ShardWriter({ ...common, directory: path.dirname(paths.validationManifest) }),
  };
  const encoder = encoderOf(tokenizer);
  const counts = { read: 0, removed: 0 };
  const pipeline = buildPipeline(cfg);
  try {
    // Token documents are taken as they are (the compliance filters read text).
    if (megatron !== null) {
      // Document d is split as a text document with id `d`; <s>/</s> are added by the shard writer.
      for (const tokens of readMegatronDocuments(megatron, { bodId: APERTUS_BOS_ID, eodId: APERTUS_EOS_ID })) {
        writers[assignSplit({ id: String(counts.read++) }, { fraction: cfg.validationFraction, seed: cfg.seed })].addDocument(tokens);
      }
    } else for await (const { doc, split } of compliantDocuments(cfg, pipeline, counts)) writers[split].addDocument(encoder.encode(doc.text));
    if (writers.train.numDocuments === 0) {
      throw new InputError(cfg.data, `empty training corpus: ${counts.read} documents read, ${counts.removed} removed by the compliance filters, ${writers.validation.numDocuments} held out for validation`);
    }
    writers.train.close();
    if (writers.validation.numDocuments > 0) writers.validation.close();
    else writers.validation.abort();
  } catch (e) {
    writers.train.abort();
    writers.validation.abort();
    fs.rmSync(paths.root, { recursive: true, force: true });
    throw inputError(cfg, e);
  }
  const stats: DataStats = {
    read: counts.read,
    removed: counts.removed,
    train: { documents: writers.train.numDocuments, tokens: writers.train.numTokens },
    validation: { documents: writers.validation.numDocuments, tokens: writers.validation.numTokens },
    filters: megatron === null ? pipeline.stats : null,
  };
  const hasValidation = writers.validation.numDocuments > 0;
  writeFileAtomic(paths.prepared, `${JSON.stringify({ fingerprint, stats, hasValidation }, null, 1)}\n`);
  log(`data: ${stats.read} documents read, ${stats.removed} removed by compliance filters; train ${stats.train.documents} docs / ${stats.train.tokens} tokens, validation ${stats.validation.documents} docs / ${stats.validation.tokens} tokens`);
  return { tokenizer, tokenizerFiles: readTokenizerFiles(paths.tokenizerDir), paths, hasValidation, stats, reused: false, fingerprint };
}
