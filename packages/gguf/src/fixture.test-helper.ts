// Test fixtures (not exported): a small Apertus model with a BPE tokenizer trained in the Apertus
// layout, as a model object and as a Hugging Face checkpoint directory.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApertusModel, presetConfig, saveCheckpoint, type ApertusConfig } from '@apertus/model';
import { f32ToF16Bits, type Rng } from '@apertus/tensor';
import { trainApertusBpe, type TrainedBpe } from '@apertus/tokenizer';
import { openGgufFile } from './open';
import type { GgufValue } from './header';
import { quantize } from './quant/index';
import { GGML_TYPES, QK_K, type GgmlTypeName } from './types';
import { writeGguf, type GgufEntry } from './writer';

/** Hidden size 256 so every matrix row is a whole Q4_K super-block; vocabulary larger than the tokenizer (padding ids). */
export const CONFIG: ApertusConfig = presetConfig('tiny', {
  vocab_size: 1536, hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4,
  num_key_value_heads: 2, head_dim: 64, max_position_embeddings: 512, initializer_range: 0.08,
});

const CORPUS = [
  'Alle Menschen sind frei und gleich an Würde und Rechten geboren. Tous les êtres humains naissent libres.',
  'Tuts ils umans naschan libers ed eguals en dignitad ed en dretgs. Tutti gli esseri umani nascono liberi.',
  'All human beings are born free and equal in dignity and rights; they are endowed with reason and conscience.',
  'for (let i = 0; i < n; i++) { total += values[i] * weights[i]; } return total / n;',
  'The model reads GGUF files: blocks of 32 or 256 values, each with its own scale and sometimes a minimum.',
]

let trained: TrainedBpe | null = null;
/** The trained test tokenizer (once per process). */
export function fixtureTokenizer(): TrainedBpe {
  trained ??= trainApertusBpe(Array.from({ length: 6 }, () => CORPUS).flat(), { vocabSize: 1400 });
  return trained;
}

/** The fixture model: random init with a seed, xIELU parameters moved off their defaults per layer. */
export function fixtureModel(seed = 5): ApertusModel {
  const m = ApertusModel.init(CONFIG, seed);
  for (let l = 0; l < CONFIG.num_hidden_layers; l++) {
    m.params.get(`model.layers.${l}.mlp.act_fn.alpha_p`)!.data[0] = 0.6 + 0.1 * l;
    m.params.get(`model.layers.${l}.mlp.act_fn.alpha_n`)!.data[0] = 0.7 - 0.1 * l;
  }
  return m;
}

/** A temp directory and its remover. */
export function tempDir(prefix = 'apertus-gguf-'): { dir: string; remove: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Save the fixture model and tokenizer as an f32 Hugging Face checkpoint at `dir`. */
export function writeFixtureCheckpoint(dir: string, model = fixtureModel()): void {
  const t = fixtureTokenizer();
  saveCheckpoint(model, dir, { dtype: 'f32', files: { 'tokenizer.json': JSON.stringify(t.tokenizerJson), 'tokenizer_config.json': JSON.stringify(t.tokenizerConfig) } });
}

/** Copy a GGUF file with metadata patched (undefined deletes a key, new keys go last) and tensors optionally renamed or re-stored. */
export function rewrite(from: string, to: string, patch: Record<string, GgufEntry | undefined>, rename: Record<string, string> = {}, retype: Record<string, { type: GgmlTypeName; data: Uint8Array }> = {}): string {
  const f = openGgufFile(from);
  const meta: [string, GgufEntry][] = [];
  const toEntry = (type: string, value: GgufValue): GgufEntry => {
    const m = /^array<(.+)>$/.exec(type);
    return m ? { type: 'array', elem: m[1] as never, value: value as never } : { type: type as never, value: value as never };
  };
  for (const [k, v] of f.metadata) if (!(k in patch)) meta.push([k, toEntry(f.metadataTypes.get(k)!, v)]);
  for (const [k, e] of Object.entries(patch)) if (e) meta.push([k, e]);
  writeGguf(to, meta, f.tensors.map((t) => ({ name: rename[t.name] ?? t.name, type: retype[t.name]?.type ?? t.type.name, shape: t.shape, data: () => retype[t.name]?.data ?? f.read(t.name) })));
  f.close();
  return to;
}

/** Random Q6_K super-blocks (no quantizer is written for Q6_K): random quants and scales, d an f16 in [scale, 2·scale). */
export function randomQ6K(rng: Rng, n: number, scale = 1e-3): Uint8Array {
  const size = GGML_TYPES.Q6_K.typeSize, out = Uint8Array.from({ length: (n / QK_K) * size }, () => Math.floor(rng.uniform() * 256));
  const d = f32ToF16Bits(scale * (1 + rng.uniform()));
  for (let o = 0; o < out.length; o += size) { out[o + 208] = d & 255; out[o + 209] = d >> 8; }
  return out;
}

/** Stored bytes of a random [N, K] matrix of `type` (normal values × 0.05 through the quantizer; Q6_K random blocks). */
export function randomWeights(type: GgmlTypeName, rng: Rng, N: number, K: number): Uint8Array {
  if (type === 'Q6_K') return randomQ6K(rng, N * K);
  return quantize(type, Float32Array.from({ length: N * K }, () => rng.normal() * 0.05));
}
