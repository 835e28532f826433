// @apertus/serve/testing — fixtures for the tests of the server and of the apps built on it: a
// small BPE tokenizer trained in the Apertus layout and tiny Apertus checkpoints written to temp
// directories, so no test downloads anything.
//
// Two kinds of checkpoint:
// * random: a randomly initialised model; its LM-head rows of the ids below 1000 (control and
//   reserved tokens) are zeroed, so greedy decoding produces visible text and never a stop token.
// * scripted: a real Apertus network whose weights make it a lookup table. With o_proj and
//   down_proj zero, every layer adds nothing to the residual stream, so the final hidden state is
//   the token's embedding. Embedding rows are one-hot (dimension d(s) for a scripted source token
//   s, a shared fallback dimension otherwise) and LM-head row t carries 10 at d(s) whenever
//   t = next(s). The logit of the scripted successor is then 10·√H and every other logit is 0, so
//   any sampler picks the script; unscripted tokens lead to `fallback` (default `<|assistant_end|>`).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApertusModel, presetConfig, saveCheckpoint, type ApertusConfig } from '@apertus/model';
import { Tokenizer, trainApertusBpe, type TrainedBpe } from '@apertus/tokenizer';

/** A small corpus for the test tokenizer (English, German, code and the tool-call syntax). */
export const CORPUS: readonly string[] = [
  'The quick brown fox jumps over the lazy dog. Hello world! How are you today?',
  'Apertus is a fully open multilingual language model from Switzerland, trained on public data.',
  'Grüezi mitenand, wie gaht es? Das Wetter in Bern ist heute schön und sonnig.',
  'Let me check the weather for you. Sure! It is 20 degrees in Bern and 18 in Zurich.',
  '[{"get_weather":{"city":"Bern"}}] [{"get_weather":{"city":"Zurich"}}] {"temp": 20}',
  'function add(a, b) { return a + b; } const x = add(2, 2); console.log(x);',
  'Once upon a time there was a small model that learned to write stories about mountains.',
  'The capital of Switzerland is Bern. Geneva, Basel, Lausanne and Lugano are other cities.',
  'Numbers: 1 2 3 4 5 6 7 8 9 10 100 1000 2024 2025. Dates like 2025-09-21 are common.',
  'Think step by step: first read the question, then reason, and finally answer clearly.',
];

let trained: TrainedBpe | null = null;

/** The trained test tokenizer files (trained once per process, deterministic). */
export function testTokenizerFiles(): TrainedBpe {
  if (!trained) {
    const corpus: string[] = [];
    for (let r = 0; r < 8; r++) corpus.push(...CORPUS);
    trained = trainApertusBpe(corpus, { vocabSize: 1400 });
  }
  return trained;
}

/** A fresh Tokenizer built from {@link testTokenizerFiles}. */
export function testTokenizer(): Tokenizer {
  const t = testTokenizerFiles();
  return Tokenizer.fromJSON(t.tokenizerJson, t.tokenizerConfig);
}

/** A temp directory removed by the returned function. */
export function tempDir(prefix = 'apertus-serve-'): { dir: string; remove: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

function tokenizerFiles(): Record<string, string> {
  const t = testTokenizerFiles();
  return { 'tokenizer.json': JSON.stringify(t.tokenizerJson), 'tokenizer_config.json': JSON.stringify(t.tokenizerConfig) };
}

/** Config of the test models: tiny dimensions, the test tokenizer's vocabulary (or more). */
export function testConfig(overrides: Partial<ApertusConfig> = {}): ApertusConfig {
  return presetConfig('tiny', {
    vocab_size: testTokenizerFiles().vocabSize, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2,
    num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, max_position_embeddings: 512, ...overrides,
  });
}

/** Write a random-weight checkpoint (with tokenizer files) to `dir/name`; returns its path. */
export function writeRandomCheckpoint(dir: string, name = 'tiny-random', seed = 11, overrides: Partial<ApertusConfig> = {}): string {
  const model = ApertusModel.init(testConfig(overrides), seed);
  const head = model.params.get('lm_head.weight')!.storage as Float32Array;
  const H = model.config.hidden_size;
  head.fill(0, 0, 1000 * H);
  // Larger logits for the visible tokens, so sampling at temperature 1 is not uniform noise.
  for (let i = 1000 * H; i < head.length; i++) head[i]! *= 20;
  const out = path.join(dir, name);
  saveCheckpoint(model, out, { files: tokenizerFiles(), generationConfig: { bos_token_id: 1, eos_token_id: [2, 68, 72], pad_token_id: 3 } });
  return out;
}

/** A lookup-table script: after token `from`, the model emits each id of `then` in turn. */
export interface Script {
  /** The token the script starts after (e.g. 67 `<|assistant_start|>`, the last token of a chat prompt). */
  from: number;
  /** The ids that follow, in order; every id may occur once across all scripts (except as the last one). */
  then: readonly number[];
}

/** Write a scripted checkpoint (see the file header) to `dir/name`; returns its path. */
export function writeScriptedCheckpoint(dir: string, name: string, scripts: readonly Script[], opts: { fallback?: number; vocabSize?: number } = {}): string {
  const H = 64;
  const config = testConfig({ hidden_size: H, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 32, ...(opts.vocabSize ? { vocab_size: opts.vocabSize } : {}) });
  const model = ApertusModel.init(config, 5);
  const V = config.vocab_size;
  const next = new Map<number, number>();
  for (const s of scripts) {
    const seq = [s.from, ...s.then];
    for (let i = 0; i + 1 < seq.length; i++) {
      if (next.has(seq[i]!) && next.get(seq[i]!) !== seq[i + 1]) throw new Error(`script conflict: token ${seq[i]} has two successors`);
      next.set(seq[i]!, seq[i + 1]!);
    }
  }
  if (next.size > H - 1) throw new Error(`at most ${H - 1} scripted tokens, got ${next.size}`);
  const fallbackDim = H - 1;
  const E = model.params.get('model.embed_tokens.weight')!.storage as Float32Array;
  const head = model.params.get('lm_head.weight')!.storage as Float32Array;
  E.fill(0);
  head.fill(0);
  for (let t = 0; t < V; t++) E[t * H + fallbackDim] = 1;
  let d = 0;
  for (const [src, dst] of next) {
    E[src * H + fallbackDim] = 0;
    E[src * H + d] = 1;
    head[dst * H + d] = 10;
    d++;
  }
  head[(opts.fallback ?? 68) * H + fallbackDim] = 10;
  for (let l = 0; l < model.config.num_hidden_layers; l++) {
    for (const m of ['self_attn.o_proj', 'mlp.down_proj']) (model.params.get(`model.layers.${l}.${m}.weight`)!.storage as Float32Array).fill(0);
  }
  (model.norm.storage as Float32Array).fill(1);
  const out = path.join(dir, name);
  saveCheckpoint(model, out, { files: tokenizerFiles(), generationConfig: { bos_token_id: 1, eos_token_id: [2, 68, 72], pad_token_id: 3 } });
  return out;
}

/** Ids of `text` without BOS, checked to be distinct (scripts need distinct sources). */
export function scriptIds(tok: Tokenizer, text: string): number[] {
  const ids = tok.encodeIds(text, { addSpecialTokens: false });
  if (new Set(ids).size !== ids.length) throw new Error(`script text ${JSON.stringify(text)} repeats a token: ${ids.join(' ')}`);
  return ids;
}

/** Parse Prometheus exposition text into `name{labels}` → value (independent of metrics.ts). */
export function parsePrometheus(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.length === 0 || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (!m) throw new Error(`bad metrics line: ${line}`);
    out.set(m[1]!, m[2] === '+Inf' ? Infinity : Number(m[2]));
  }
  return out;
}

/** Read an SSE response body into its `data:` payloads. */
export async function readSse(res: Response): Promise<string[]> {
  const text = await res.text();
  const events: string[] = [];
  for (const block of text.split('\n\n')) {
    if (block.trim().length === 0) continue;
    for (const line of block.split('\n')) if (line.startsWith('data: ')) events.push(line.slice(6));
  }
  return events;
}

/** The parsed JSON body of a response, loosely typed for assertions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function json(res: Response | Promise<Response>): Promise<any> {
  return (await res).json();
}
