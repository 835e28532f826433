import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { presetConfig, swigluMatched, toHfConfig, type ApertusConfig } from '../src/config';
import type { ApertusModel } from '../src/model';
import { parameterShapes } from '../src/params';
import { peerPython } from '@apertus/peers';

const REFERENCE = path.join(__dirname, 'reference.py');

/** Output of reference.py. */
export interface RefOut { logits: number[]; loss: number; grads: Record<string, number[]> }

/** head_dim 16 with θ = 1e4 and original context 256 puts RoPE frequencies in all three llama3 bands. */
export const PARITY_CONFIG: ApertusConfig = presetConfig('tiny', {
  vocab_size: 64, hidden_size: 64, intermediate_size: 96, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 16,
  rope_theta: 10000, rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 256 },
  max_position_embeddings: 4096, initializer_range: 0.2,
});

/** Inputs: two rows of 12 tokens; the packed case has three documents in row 0 (positions reset after EoD = 2). */
export function parityInputs(packed: boolean): { ids: number[][]; positions: number[][]; doc_ids: number[][] | null; targets: number[][] } {
  const ids = [[1, 11, 12, 2, 1, 13, 14, 2, 1, 15, 16, 17], [1, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30]];
  const targets = ids.map((r, b) => r.slice(1).concat([b === 0 ? 18 : -100]));
  if (!packed) return { ids, positions: ids.map((r) => r.map((_, t) => t + 700)), doc_ids: null, targets };
  return { ids, positions: [[0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3], [...Array(12).keys()]], doc_ids: [[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2], Array(12).fill(0)], targets };
}

/** The same model with the SwiGLU MLP of matched size (intermediate 96 → 64). */
export const PARITY_SWIGLU_CONFIG: ApertusConfig = swigluMatched(PARITY_CONFIG);

/** Which gradients the golden file keeps (a spread over every kind of tensor). */
export const GRAD_NAMES = ['model.embed_tokens.weight', 'model.layers.0.self_attn.q_proj.weight', 'model.layers.0.self_attn.k_norm.weight', 'model.layers.1.mlp.down_proj.weight', 'model.layers.1.mlp.act_fn.alpha_p', 'model.layers.1.mlp.act_fn.alpha_n', 'model.layers.0.attention_layernorm.weight', 'model.norm.weight', 'lm_head.weight'];

/** The gradients kept for the SwiGLU model: its three MLP matrices instead of the xIELU scalars. */
export const SWIGLU_GRAD_NAMES = ['model.embed_tokens.weight', 'model.layers.0.self_attn.q_proj.weight', 'model.layers.0.mlp.gate_proj.weight', 'model.layers.0.mlp.up_proj.weight', 'model.layers.1.mlp.down_proj.weight', 'model.layers.1.mlp.gate_proj.weight', 'model.layers.0.attention_layernorm.weight', 'model.norm.weight', 'lm_head.weight'];

/** The models compared with the reference: each with its golden file and the gradients it keeps. */
export const PARITY_VARIANTS = [
  { name: 'xielu', config: PARITY_CONFIG, golden: path.join(__dirname, 'golden/parity.json'), grads: GRAD_NAMES },
  { name: 'swiglu', config: PARITY_SWIGLU_CONFIG, golden: path.join(__dirname, 'golden/parity-swiglu.json'), grads: SWIGLU_GRAD_NAMES },
] as const;

/** Write weights and inputs for reference.py, run it, and read its output. */
export function runReference(model: ApertusModel, inp: ReturnType<typeof parityInputs>): RefOut {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-parity-'));
  try {
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(toHfConfig(model.config)));
    const shapes = [...parameterShapes(model.config)];
    fs.writeFileSync(path.join(dir, 'weights.json'), JSON.stringify(shapes));
    const chunks = shapes.map(([n]) => Buffer.from(model.params.get(n)!.toFloat32().buffer));
    fs.writeFileSync(path.join(dir, 'weights.bin'), Buffer.concat(chunks));
    fs.writeFileSync(path.join(dir, 'inputs.json'), JSON.stringify(inp));
    execFileSync(peerPython(), [REFERENCE, dir], { stdio: 'inherit' });
    return JSON.parse(fs.readFileSync(path.join(dir, 'output.json'), 'utf8')) as RefOut;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
