import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openCheckpoint } from '@apertus/safetensors';
import { noGrad, Tensor } from '@apertus/tensor';
import { afterAll, describe, expect, test } from 'vitest';
import { loadCheckpoint, saveCheckpoint } from './checkpoint';
import { presetConfig, swigluMatched } from './config';
import { CheckpointError } from './errors';
import { ApertusModel } from './model';
import { parityInputs } from '../test/parity-fixture';
import { peerPython } from '@apertus/peers';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-ckpt-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const config = presetConfig('tiny', { vocab_size: 64, hidden_size: 64, intermediate_size: 96, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 16, initializer_range: 0.2 });
const ids = Tensor.ints(parityInputs(false).ids.flat(), [2, 12]);
const logitsOf = (m: ApertusModel) => noGrad(() => m.forward(ids)).data;

describe('checkpoints', () => {
  test('f32 save → load gives identical logits; bf16 save keeps bf16 matrices in memory', () => {
    const model = ApertusModel.init(config, 5);
    const dir = path.join(tmp, 'f32');
    saveCheckpoint(model, dir, { dtype: 'f32', files: { 'tokenizer.json': '{}' } });
    expect(fs.readdirSync(dir).sort()).toEqual(['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json']);
    const loaded = loadCheckpoint(dir, { precision: 'f32' });
    expect(Array.from(logitsOf(loaded.model))).toEqual(Array.from(logitsOf(model)));
    expect(loaded.generationConfig).toMatchObject({ bos_token_id: 1, eos_token_id: 2 });

    const bdir = path.join(tmp, 'bf16');
    saveCheckpoint(model, bdir);
    const b = loadCheckpoint(bdir);
    expect(b.model.params.get('model.layers.0.mlp.up_proj.weight')!.dtype).toBe('bf16');
    expect(b.model.params.get('model.norm.weight')!.dtype).toBe('f32');
    // Round trip of bf16 weights is exact: save the bf16-loaded model again and compare bytes.
    saveCheckpoint(b.model, path.join(tmp, 'bf16-again'));
    expect(fs.readFileSync(path.join(tmp, 'bf16-again/model.safetensors')).equals(fs.readFileSync(path.join(bdir, 'model.safetensors')))).toBe(true);
    const f = openCheckpoint(bdir);
    expect(f.keys().length).toBe(3 + 14 * 2);
    expect(f.info('model.layers.1.mlp.act_fn.beta')).toMatchObject({ dtype: 'BF16', shape: [] });
    f.close();
  });

  test('sharded save → load', () => {
    const model = ApertusModel.init(config, 6);
    const dir = path.join(tmp, 'sharded');
    saveCheckpoint(model, dir, { dtype: 'f32', maxShardSize: 20000 });
    expect(fs.existsSync(path.join(dir, 'model.safetensors.index.json'))).toBe(true);
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.safetensors')).length).toBeGreaterThan(2);
    expect(Array.from(logitsOf(loadCheckpoint(dir, { precision: 'f32' }).model))).toEqual(Array.from(logitsOf(model)));
  });

  test('SwiGLU model: f32 save → load gives identical logits, with Llama MLP names and hidden_act in config.json', () => {
    const model = ApertusModel.init(swigluMatched(config), 12);
    const dir = path.join(tmp, 'swiglu');
    saveCheckpoint(model, dir, { dtype: 'f32' });
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'))).toMatchObject({ hidden_act: 'swiglu', intermediate_size: 64 });
    const f = openCheckpoint(dir);
    expect(f.keys().filter((k) => k.startsWith('model.layers.0.mlp.')).sort()).toEqual(['model.layers.0.mlp.down_proj.weight', 'model.layers.0.mlp.gate_proj.weight', 'model.layers.0.mlp.up_proj.weight']);
    expect(f.info('model.layers.1.mlp.gate_proj.weight').shape).toEqual([64, 64]);
    f.close();
    const loaded = loadCheckpoint(dir, { precision: 'f32' }).model;
    expect(loaded.config).toEqual(model.config);
    expect(Array.from(logitsOf(loaded))).toEqual(Array.from(logitsOf(model)));
    // An xIELU config over SwiGLU weights is refused, naming the tensor.
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')), hidden_act: 'xielu' }));
    expect(() => loadCheckpoint(dir)).toThrow(/unexpected tensors.*gate_proj/);
  });

  test('mismatches are typed errors naming the tensor', () => {
    const model = ApertusModel.init(config, 7);
    const dir = path.join(tmp, 'bad');
    saveCheckpoint(model, dir, { dtype: 'f32' });
    const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...cfg, intermediate_size: 100 }));
    expect(() => loadCheckpoint(dir)).toThrow(/model.layers.0.mlp.up_proj.weight: shape \[96,64\] does not match/);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...cfg, num_hidden_layers: 3 }));
    expect(() => loadCheckpoint(dir)).toThrow(CheckpointError);
    expect(() => loadCheckpoint(dir)).toThrow(/model.layers.2.attention_layernorm.weight: missing tensor/);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...cfg, num_hidden_layers: 1 }));
    expect(() => loadCheckpoint(dir)).toThrow(/unexpected tensors.*model.layers.1/);
    fs.writeFileSync(path.join(dir, 'config.json'), '{oops');
    expect(() => loadCheckpoint(dir)).toThrow(/config.json.*invalid JSON/);
    // Truncated weights: the safetensors reader's typed error surfaces with the file name.
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg));
    const w = path.join(dir, 'model.safetensors');
    fs.truncateSync(w, fs.statSync(w).size - 10);
    expect(() => loadCheckpoint(dir)).toThrow(/model.safetensors/);
  });

  // Needs the Python peers (`npm run peers`; `npm test` installs them first): without them this test fails, it never skips.
  test('an independent Python reader of the saved directory computes the same logits', () => {
    const model = ApertusModel.init(config, 8);
    for (const [name, opts] of [['ref-bf16', {}], ['ref-sharded', { dtype: 'f32' as const, maxShardSize: 30000 }]] as const) {
      const dir = path.join(tmp, name);
      saveCheckpoint(model, dir, opts);
      const ours = loadCheckpoint(dir, { precision: 'f32' }).model;
      const work = fs.mkdtempSync(path.join(tmp, 'work-'));
      const inp = parityInputs(false);
      fs.writeFileSync(path.join(work, 'inputs.json'), JSON.stringify({ ...inp, positions: inp.ids.map((r) => r.map((_, t) => t)) }));
      execFileSync(peerPython(), [path.join(__dirname, '../test/reference.py'), work, '--checkpoint', dir], { stdio: 'inherit' });
      const ref = JSON.parse(fs.readFileSync(path.join(work, 'output.json'), 'utf8')) as { logits: number[] };
      const got = logitsOf(ours);
      let num = 0, den = 0;
      ref.logits.forEach((v, i) => { num = Math.max(num, Math.abs(got[i]! - v)); den = Math.max(den, Math.abs(v)); });
      expect(num / den).toBeLessThan(1e-4);
    }
  });
});
