import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openCheckpoint } from '@apertus/safetensors';
import { noGrad, Tensor } from '@apertus/tensor';
import { afterAll, describe, expect, test } from 'vitest';
import { loadCheckpoint, loadCheckpointAsync, saveCheckpoint } from './checkpoint';
import { presetConfig, swigluMatched } from './config';
import { CheckpointError, ConfigError } from './errors';
import { firstNonFinite } from './hf-format';
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
    expect(() => loadCheckpoint(dir)).toThrow(/the weights hold 2 layers, config.json says num_hidden_layers = 3/);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...cfg, num_hidden_layers: 1 }));
    expect(() => loadCheckpoint(dir)).toThrow(/the weights hold 2 layers, config.json says num_hidden_layers = 1/);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...cfg, hidden_act: 'swiglu' }));
    expect(() => loadCheckpoint(dir)).toThrow(/unexpected tensors.*model.layers.0.mlp.act_fn/);
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

describe('a checkpoint is checked before and while its weights load', () => {
  const base = path.join(tmp, 'checked');
  saveCheckpoint(ApertusModel.init(config, 8), base);
  /** A copy of `base` with config.json edited, or one stored value of a tensor replaced by `bits`. */
  function variant(name: string, o: { config?: (c: Record<string, unknown>) => Record<string, unknown>; tensor?: string; bits?: number; dtype?: 'f32' }): string {
    const dir = path.join(tmp, name);
    if (o.dtype === 'f32') saveCheckpoint(ApertusModel.init(config, 8), dir, { dtype: 'f32' });
    else fs.cpSync(base, dir, { recursive: true });
    const cfgFile = path.join(dir, 'config.json');
    if (o.config) fs.writeFileSync(cfgFile, JSON.stringify(o.config(JSON.parse(fs.readFileSync(cfgFile, 'utf8')))));
    if (o.tensor) {
      const file = path.join(dir, 'model.safetensors');
      const f = openCheckpoint(dir);
      const info = f.info(o.tensor);
      f.close();
      const bytes = fs.readFileSync(file);
      // Element 4 of the tensor: after the 8-byte length, the JSON header and the tensor's offset.
      const at = 8 + Number(bytes.readBigUInt64LE(0)) + info.dataOffsets[0] + 4 * (o.dtype === 'f32' ? 4 : 2);
      if (o.dtype === 'f32') bytes.writeUInt32LE(o.bits!, at);
      else bytes.writeUInt16LE(o.bits!, at);
      fs.writeFileSync(file, bytes);
    }
    return dir;
  }
  const failure = async (dir: string) => {
    const sync = (() => { try { loadCheckpoint(dir); } catch (e) { return e; } return null; })();
    const async = await loadCheckpointAsync(dir).then(() => null, (e: unknown) => e);
    expect((async as Error)?.message).toBe((sync as Error)?.message);
    return sync as Error & { tensor?: string; field?: string };
  };

  test('a NaN or an infinity in the weights names the tensor (bf16 and f32 storage)', async () => {
    for (const [bits, label] of [[0x7fc0, 'nan'], [0x7f80, 'inf'], [0xff80, 'ninf']] as const) {
      const e = await failure(variant(`nan-${label}`, { tensor: 'model.layers.1.self_attn.v_proj.weight', bits }));
      expect(e).toBeInstanceOf(CheckpointError);
      expect(e.tensor).toBe('model.layers.1.self_attn.v_proj.weight');
      expect(e.message).toMatch(/non-finite value \(NaN or ±Inf\) at element 4 of \[32,64\]/);
    }
    const e = await failure(variant('nan-f32', { tensor: 'model.norm.weight', bits: 0x7fc00000, dtype: 'f32' }));
    expect(e.tensor).toBe('model.norm.weight');
    // The largest finite values are not flagged.
    expect(firstNonFinite(Uint16Array.of(0x7f7f, 0xff7f, 0x0001), 'BF16')).toBe(-1);
    expect(firstNonFinite(Uint16Array.of(0x7bff, 0x7c00), 'F16')).toBe(1);
    expect(firstNonFinite(Float32Array.of(3.4028234663852886e38, -Infinity), 'F32')).toBe(1);
  });

  test('absurd sizes are refused from config.json alone, in milliseconds, before any allocation', async () => {
    for (const [key, value] of [['num_hidden_layers', 1e9], ['num_hidden_layers', 1e6], ['max_position_embeddings', 1e12], ['vocab_size', 2 ** 40]] as const) {
      const started = performance.now();
      const e = await failure(variant(`absurd-${key}-${value}`, { config: (c) => ({ ...c, [key]: value }) }));
      expect(performance.now() - started).toBeLessThan(1000);
      expect(e).toBeInstanceOf(ConfigError);
      expect(e.field).toBe(key);
      expect(e.message).toMatch(/is beyond any model this library can run/);
    }
  });

  test('a layer count or an embedding table that the header contradicts is refused before the weights are read', async () => {
    const more = await failure(variant('layers-3', { config: (c) => ({ ...c, num_hidden_layers: 3 }) }));
    expect(more).toBeInstanceOf(CheckpointError);
    expect(more.message).toMatch(/the weights hold 2 layers, config.json says num_hidden_layers = 3/);
    const vocab = await failure(variant('vocab-65', { config: (c) => ({ ...c, vocab_size: 65 }) }));
    expect(vocab.tensor).toBe('model.embed_tokens.weight');
  });

  test('config.json must name the Apertus model type or architecture', async () => {
    const none = await failure(variant('no-type', { config: ({ model_type: _m, architectures: _a, ...c }) => c }));
    expect(none).toBeInstanceOf(ConfigError);
    expect(none.field).toBe('model_type');
    const llama = await failure(variant('llama-arch', { config: ({ model_type: _m, ...c }) => ({ ...c, architectures: ['LlamaForCausalLM'] }) }));
    expect(llama.field).toBe('architectures');
    expect((await loadCheckpointAsync(variant('arch-only', { config: ({ model_type: _m, ...c }) => c }))).model.config.num_hidden_layers).toBe(2);
  });
});
