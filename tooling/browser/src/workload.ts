// The work a browser tab must do exactly as Node does, written once: run in Node by the test and,
// bundled, in the page. Greedy generation from a checkpoint read from bytes, greedy generation
// from a GGUF file read from bytes, and a few AdEMAMix training steps of the tiny preset on a
// fixed batch.

import { AdEMAMix, constantSchedule, LrScheduler } from '@apertus/ademamix';
import { GgufFile, loadGgufFile } from '@apertus/gguf';
import { ApertusModel, generate, hfCheckpointFiles, initParameters, modelFromHfFiles, presetConfig, type ApertusConfig } from '@apertus/model';
import { readSafetensors } from '@apertus/safetensors';
import { gemmKernelInfo } from '@apertus/tensor';
import { causalLmLoss, collateLm, trainStep, type LmBatch } from '@apertus/trainer';

/** The tiny preset (4 layers, hidden 128, GQA 4/2, vocabulary 8192). */
export const TINY: ApertusConfig = presetConfig('tiny');

/** The prompt every generation starts from. */
export const PROMPT = [1, 523, 77, 4100, 12, 8000, 345];

/** The tiny model with seeded weights, as the bytes of a single-file Hugging Face checkpoint (bf16). */
export function tinyCheckpoint(seed: number): { config: string; weights: Uint8Array } {
  const files = hfCheckpointFiles(new ApertusModel(TINY, initParameters(TINY, seed)));
  return { config: files.get('config.json') as string, weights: files.get('model.safetensors') as Uint8Array };
}

/** Greedy generation of `tokens` tokens (no stop token) from the checkpoint held by `config` and `weights`. */
export async function greedyTokens(config: unknown, weights: ArrayBuffer | Uint8Array | Response, tokens: number): Promise<number[]> {
  const model = modelFromHfFiles(config, await readSafetensors(weights));
  return generate(model, PROMPT, { temperature: 0, maxTokens: tokens, stopTokenIds: [] }).tokens;
}

/** The tiny preset widened to 256 (FFN 512, 4 heads of 64): every matrix takes Q4_K's 256-value super-blocks. */
export const TINY_256: ApertusConfig = presetConfig('tiny', { hidden_size: 256, intermediate_size: 512, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64 });

/** Greedy generation of `tokens` tokens (no stop token) from the GGUF file held in `bytes` (its weights; no tokenizer needed). */
export function ggufGreedyTokens(bytes: Uint8Array, tokens: number): number[] {
  const { model } = loadGgufFile(GgufFile.fromBytes(bytes, 'model.gguf'), { tokenizer: false });
  return generate(model, PROMPT, { temperature: 0, maxTokens: tokens, stopTokenIds: [] }).tokens;
}

/** A fixed batch of B rows of T tokens (deterministic, every target kept). */
export function fixedBatch(B: number, T: number, seed: number): LmBatch {
  let x = seed;
  const next = () => (x = (x * 1103515245 + 12345) % 2147483648) % (TINY.vocab_size - 4) + 4;
  return collateLm(Array.from({ length: B }, () => {
    const row = Array.from({ length: T + 1 }, next);
    return { tokens: row.slice(0, T), labels: row.slice(1), lossMask: row.slice(1).map(() => 1) };
  }));
}

/** Losses of `steps` AdEMAMix steps (lr 1e-3, clipping 1.0) of the seeded tiny model on one fixed batch. */
export function trainingLosses(steps: number, seed: number): number[] {
  const model = new ApertusModel(TINY, initParameters(TINY, seed));
  const optimizer = new AdEMAMix(model.parameters(), { lr: 1e-3 });
  const scheduler = new LrScheduler(constantSchedule(1e-3));
  const batch = fixedBatch(2, 32, seed);
  const losses: number[] = [];
  for (let s = 1; s <= steps; s++) {
    const r = trainStep({ params: model.parameters(), optimizer, scheduler, microBatches: [batch], weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(model, b, { normalizer: n }), clip: 1, step: s });
    losses.push(r.loss);
  }
  return losses;
}

/** What the GEMM ran on (threads, started workers). */
export function gemmThreadsUsed(): { threads: number; workers: number } {
  const info = gemmKernelInfo();
  return { threads: info.threads, workers: info.workers };
}
