// Shared test fixtures: a small Apertus-layout BPE tokenizer trained on part of the UDHR and a
// tiny randomly initialised Apertus model whose vocabulary matches it.

import { readUdhrDeclarations } from '@apertus/data';
import { ApertusModel } from '@apertus/model';
import { testModelConfig } from '@apertus/model/testing';
import { Tokenizer, trainApertusBpe } from '@apertus/tokenizer';

let tokenizer: Promise<Tokenizer> | undefined;

/** Article texts of a few declarations (German, Romansh, English, French, Italian). */
export async function udhrTexts(): Promise<string[]> {
  const out: string[] = [];
  for await (const d of readUdhrDeclarations({ languages: ['deu_1996', 'roh_rumgr', 'eng', 'fra', 'ita'] })) {
    for (const a of d.articles) out.push(a.paragraphs.join('\n'));
  }
  return out;
}

/** A 1,600-id Apertus-layout tokenizer (1,000 specials, 256 bytes, 344 merges), trained once per test file. */
export function tinyTokenizer(): Promise<Tokenizer> {
  tokenizer ??= udhrTexts().then((texts) => {
    const trained = trainApertusBpe([...texts, 'Translate from German to Romansh:', 'Hello! How can I help you?'], { vocabSize: 1600 });
    return Tokenizer.fromJSON(trained.tokenizerJson, trained.tokenizerConfig);
  });
  return tokenizer;
}

/** A 2-layer Apertus model (hidden 32) with the given vocabulary and context, seeded. */
export function tinyModel(vocabSize: number, seed = 5, maxPositions = 512): ApertusModel {
  return ApertusModel.init(testModelConfig({ vocab_size: vocabSize, max_position_embeddings: maxPositions, initializer_range: 0.2 }), seed);
}

/** log-softmax of one row of logits in float64 (independent of @apertus/tensor's kernels). */
export function logSoftmax64(row: ArrayLike<number>): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) max = Math.max(max, row[i]!);
  let sum = 0;
  for (let i = 0; i < row.length; i++) sum += Math.exp(row[i]! - max);
  const lse = max + Math.log(sum);
  const out = new Float64Array(row.length);
  for (let i = 0; i < row.length; i++) out[i] = row[i]! - lse;
  return out;
}
