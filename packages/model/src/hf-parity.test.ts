// Parity with Hugging Face transformers itself (the Python peers: `npm run peers`) on random
// checkpoints transformers writes in the exact layouts (test/hf_parity.py): 2509 (untied), Apertus
// Mini (tied, other special ids) and an Apertus 1.5 text tower built from the 2509 one. Logits
// within 1e-4 relative (float32 on both sides; the bound leaves room for a different summation
// order over hidden 64 and two layers, observed ~1e-6), 64 greedy tokens equal.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { peerPython } from '@apertus/peers';
import { loadTokenizerFromDirectory } from '@apertus/tokenizer';
import { noGrad, Tensor } from '@apertus/tensor';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadCheckpoint, readCheckpointConfig } from './checkpoint';
import { generate } from './generate';
import type { ApertusModel } from './model';

interface Outputs { logits: number[]; greedy: number[] }
interface Reference {
  prompt: number[];
  '2509': Outputs;
  mini: Outputs;
  mini_tokens: { bos: number; eos: number; pad: number; unk: number; generation_eos: number[]; encoded: number[] };
}

const out = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-hf-parity-'));
let ref: Reference;
beforeAll(() => {
  execFileSync(peerPython(), [path.join(__dirname, '../test/hf_parity.py'), out], { stdio: ['ignore', 'ignore', 'inherit'] });
  ref = JSON.parse(fs.readFileSync(path.join(out, 'reference.json'), 'utf8')) as Reference;
}, 180_000);
afterAll(() => fs.rmSync(out, { recursive: true, force: true }));

/** max |a − b| / max |b|. */
function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0, den = 0;
  for (let i = 0; i < b.length; i++) { num = Math.max(num, Math.abs(a[i]! - b[i]!)); den = Math.max(den, Math.abs(b[i]!)); }
  return num / den;
}

function check(model: ApertusModel, want: Outputs): void {
  const T = ref.prompt.length;
  const logits = noGrad(() => model.forward(Tensor.ints(ref.prompt, [1, T]))).data;
  expect(logits.length).toBe(want.logits.length);
  expect(relErr(logits, want.logits)).toBeLessThanOrEqual(1e-4);
  const g = generate(model, ref.prompt, { maxTokens: 64, temperature: 0, stopTokenIds: [] });
  expect(g.tokens).toEqual(want.greedy);
}

describe('parity with Hugging Face transformers', () => {
  test('2509 layout (untied head)', () => {
    const m = loadCheckpoint(path.join(out, '2509'), { precision: 'f32' }).model;
    expect(m.config.tie_word_embeddings).toBe(false);
    check(m, ref['2509']);
  });

  test('Apertus Mini layout: tied head (transformers writes no lm_head.weight)', () => {
    const m = loadCheckpoint(path.join(out, 'mini'), { precision: 'f32' }).model;
    expect(m.config.tie_word_embeddings).toBe(true);
    expect(m.params.has('lm_head.weight')).toBe(false);
    check(m, ref.mini);
  });

  test('Apertus Mini special tokens come from the files as transformers reads them (the config says pad 3, the files <pad> = 10)', () => {
    const dir = path.join(out, 'mini');
    const tok = loadTokenizerFromDirectory(dir);
    const want = ref.mini_tokens;
    expect({ bos: tok.bosTokenId, eos: tok.eosTokenId, pad: tok.padTokenId, unk: tok.unkTokenId }).toEqual({ bos: want.bos, eos: want.eos, pad: want.pad, unk: want.unk });
    expect(tok.padTokenId).toBe(10);
    expect(tok.encodeIds('[INST] hi<pad>', { addSpecialTokens: false })).toEqual(want.encoded);
    const { config, generationConfig } = readCheckpointConfig(dir);
    expect(config.pad_token_id).toBe(3);
    expect(generationConfig?.eos_token_id).toEqual(want.generation_eos);
    expect(generationConfig?.pad_token_id).toBe(10);
  });

  test('Apertus 1.5 text tower built from the 2509 checkpoint: the same logits and greedy tokens on text ids', () => {
    const m = loadCheckpoint(path.join(out, '1p5'), { precision: 'f32' }).model;
    expect(m.layout.architecture).toBe('Apertus1p5ForConditionalGeneration');
    expect(m.embedTokens.shape[0]).toBe(384 + 64);
    expect(m.lmHead.shape[0]).toBe(384);
    check(m, ref['2509']);
    expect(m.layout.carried!.names).toEqual(['model.audio_tokenizer.backbone.norm.num_batches_tracked', 'model.vision_tokenizer.encoder.conv_in.weight', 'model.vision_tokenizer.quantize.embedding.weight']);
  });
});
