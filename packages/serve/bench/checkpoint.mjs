// The benchmarks' model: a BPE tokenizer trained on a small corpus and random weights of a preset,
// saved as a checkpoint directory the server and the engine load as they would a real one.

import { ApertusModel, presetConfig, saveCheckpoint } from '@apertus/model';
import { Tokenizer, trainApertusBpe } from '@apertus/tokenizer';

/** Text of the tokenizer's training corpus (and of the benchmarks' conversations). */
export const CORPUS = [
  'The quick brown fox jumps over the lazy dog. Hello world! How are you today?',
  'Apertus is a fully open multilingual language model from Switzerland, trained on public data.',
  'Grüezi mitenand, wie gaht es? Das Wetter in Bern ist heute schön und sonnig.',
  'function add(a, b) { return a + b; } const x = add(2, 2); console.log(x);',
  'Once upon a time there was a small model that learned to write stories about mountains.',
  'The capital of Switzerland is Bern. Geneva, Basel, Lausanne and Lugano are other cities.',
  'Numbers: 1 2 3 4 5 6 7 8 9 10 100 1000 2024 2025. Dates like 2025-09-21 are common.',
  'Think step by step: first read the question, then reason, and finally answer clearly.',
];

/**
 * Write a checkpoint of `preset` (vocabulary: ≈1.4k BPE tokens trained on CORPUS) to `dir`;
 * returns its tokenizer. Control/reserved ids (< 1000) get zero LM-head rows, so greedy output is
 * visible text.
 */
export function makeCheckpoint(dir, preset = 'tiny') {
  const corpus = [];
  for (let i = 0; i < 8; i++) corpus.push(...CORPUS);
  const t = trainApertusBpe(corpus, { vocabSize: 1400 });
  const model = ApertusModel.init(presetConfig(preset, { vocab_size: t.vocabSize }), 7);
  model.lmHead.storage.fill(0, 0, 1000 * model.config.hidden_size);
  saveCheckpoint(model, dir, {
    files: { 'tokenizer.json': JSON.stringify(t.tokenizerJson), 'tokenizer_config.json': JSON.stringify(t.tokenizerConfig) },
    generationConfig: { bos_token_id: 1, eos_token_id: [2, 68, 72], pad_token_id: 3 },
  });
  return Tokenizer.fromJSON(t.tokenizerJson, t.tokenizerConfig);
}
