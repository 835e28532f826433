import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeFile } from '@apertus/safetensors';
import { noGrad, Rng, Tensor } from '@apertus/tensor';
import { afterAll, describe, expect, test } from 'vitest';
import { loadCheckpoint, saveCheckpoint } from './checkpoint';
import { presetConfig, toHfConfig } from './config';
import { AdapterError } from './errors';
import { LoraAdapter, parseLoraConfig } from './lora';
import { mergeAdapter } from './merge-adapter';
import { ApertusModel } from './model';
import { loadAdapter, saveAdapter } from './peft';
import { peerPython } from '@apertus/peers';

const SMALL = presetConfig('tiny', { vocab_size: 64, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8 });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-peft-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A trained-looking adapter: random A and B (B is zero only at init). */
function trainedAdapter(targets: unknown = ['q_proj', 'v_proj', 'o_proj', 'down_proj'], r = 4): LoraAdapter {
  const a = LoraAdapter.init(SMALL, parseLoraConfig({ r, lora_alpha: 8, lora_dropout: 0.05, target_modules: targets }), 1);
  const rng = new Rng(2);
  for (const { B } of a.modules.values()) B.data.set(Tensor.randn(B.shape, rng, 0.1).data);
  return a;
}

/**
 * A reader of the PEFT adapter layout written from PEFT's documentation, sharing no code with
 * `loadAdapter`: adapter_config.json, and adapter_model.safetensors parsed by hand (u64 LE header
 * length, JSON header, F32 data) with every tensor named base_model.model.<module>.lora_{A,B}.weight,
 * or, for `trainable_token_indices` ({table: ids}), base_model.model.<table module>.token_adapter.trainable_tokens_delta
 * [ids, hidden] (PEFT's TrainableTokensWrapper: the embedding is model.embed_tokens, the head lm_head).
 */
function peftRead(dir: string, hf: Record<string, number>): { config: Record<string, unknown>; tensors: Map<string, { shape: number[]; data: Float32Array }> } {
  const config = JSON.parse(fs.readFileSync(path.join(dir, 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
  const bytes = fs.readFileSync(path.join(dir, 'adapter_model.safetensors'));
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
  const H = hf.hidden_size!, I = hf.intermediate_size!, q = hf.num_attention_heads! * hf.head_dim!, kv = hf.num_key_value_heads! * hf.head_dim!;
  const dims: Record<string, [number, number]> = { q_proj: [q, H], k_proj: [kv, H], v_proj: [kv, H], o_proj: [H, q], up_proj: [I, H], down_proj: [H, I] };
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') { expect(info).toEqual({ format: 'pt' }); continue; }
    const [b, e] = info.data_offsets;
    const raw = bytes.subarray(8 + n + b, 8 + n + e);
    const data = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
    const tok = /^base_model\.model\.(model\.embed_tokens|lm_head)\.token_adapter\.trainable_tokens_delta$/.exec(name);
    if (tok) {
      const ids = (config.trainable_token_indices as Record<string, number[]>)[tok[1] === 'lm_head' ? 'lm_head' : 'embed_tokens']!;
      expect(info.dtype).toBe('F32');
      expect(info.shape).toEqual([ids.length, H]);
      tensors.set(name, { shape: info.shape, data });
      continue;
    }
    const m = /^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.lora_(A|B)\.weight$/.exec(name);
    if (!m) throw new Error(`not a PEFT LoRA tensor name: ${name}`);
    const [out, inp] = dims[m[3]!]!;
    expect(m[2]).toBe(['q_proj', 'k_proj', 'v_proj', 'o_proj'].includes(m[3]!) ? 'self_attn' : 'mlp');
    expect(info.dtype).toBe('F32');
    expect(info.shape).toEqual(m[4] === 'A' ? [config.r, inp] : [out, config.r]);
    tensors.set(name, { shape: info.shape, data });
  }
  return { config, tensors };
}

/** Save base, adapter and merged model as f32 directories and compare them with the independent PyTorch float64 script. */
function checkMerge(name: string, base: ApertusModel, a: LoraAdapter): Record<string, number> {
  const dirs = [`${name}-base`, `${name}-adapter`, `${name}-merged`].map((d) => path.join(tmp, d));
  saveCheckpoint(base, dirs[0]!, { dtype: 'f32' });
  saveAdapter(a, dirs[1]!);
  saveCheckpoint(mergeAdapter(base, a), dirs[2]!, { dtype: 'f32' });
  return JSON.parse(execFileSync(peerPython(), [path.join(__dirname, '../test/peft_merge.py'), ...dirs], { encoding: 'utf8' })) as Record<string, number>;
}

describe('saveAdapter: the PEFT layout', () => {
  test('adapter_config.json and tensor names, shapes and values as PEFT writes them', () => {
    const a = trainedAdapter();
    const dir = path.join(tmp, 'adapter');
    saveAdapter(a, dir, 'runs/udhr-tiny/model');
    const { config, tensors } = peftRead(dir, toHfConfig(SMALL) as unknown as Record<string, number>);
    expect(config).toMatchObject({
      peft_type: 'LORA', task_type: 'CAUSAL_LM', r: 4, lora_alpha: 8, lora_dropout: 0.05, bias: 'none', fan_in_fan_out: false,
      target_modules: ['q_proj', 'v_proj', 'o_proj', 'down_proj'], base_model_name_or_path: 'runs/udhr-tiny/model', use_rslora: false, use_dora: false,
    });
    expect(tensors.size).toBe(2 * 4 * SMALL.num_hidden_layers);
    for (const [m, { A, B }] of a.modules) {
      expect(tensors.get(`base_model.model.${m}.lora_A.weight`)!.data).toEqual(A.data);
      expect(tensors.get(`base_model.model.${m}.lora_B.weight`)!.data).toEqual(B.data);
    }
    expect(fs.readdirSync(tmp).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  test('loadAdapter restores the same adapter bit for bit (trainable on request)', () => {
    const a = trainedAdapter('all-linear', 3);
    const dir = path.join(tmp, 'roundtrip');
    saveAdapter(a, dir);
    const { adapter: b, baseModel } = loadAdapter(dir, SMALL, { trainable: true });
    expect(baseModel).toBeNull();
    expect(b.config).toEqual(a.config);
    expect(b.scaling).toBe(a.scaling);
    expect(b.parameters().map(([n]) => n)).toEqual(a.parameters().map(([n]) => n));
    b.parameters().forEach(([, t], i) => { expect(t.data).toEqual(a.parameters()[i]![1].data); expect(t.requiresGrad).toBe(true); });
  });
});

describe('trainable_token_indices in the PEFT layout', () => {
  const TOKENS = { embed_tokens: [61, 7, 12], lm_head: [12, 3] };
  /** An adapter with trained-looking token rows (random values, not the base rows). */
  function tokenAdapter(model: ApertusModel): LoraAdapter {
    const a = LoraAdapter.init(model, parseLoraConfig({ r: 2, lora_alpha: 4, target_modules: ['q_proj', 'down_proj'], trainable_token_indices: TOKENS }), 1);
    const rng = new Rng(6);
    for (const t of [...a.modules.values()].map((p) => p.B).concat([...a.tokens.values()].map((t) => t.values))) t.data.set(Tensor.randn(t.shape, rng, 0.1).data);
    return a;
  }

  test('adapter_config.json lists the ids per table; the rows are saved as PEFT names them and load back bit for bit', () => {
    const a = tokenAdapter(ApertusModel.init(SMALL, 3));
    const dir = path.join(tmp, 'tokens');
    saveAdapter(a, dir);
    const { config, tensors } = peftRead(dir, toHfConfig(SMALL) as unknown as Record<string, number>);
    expect(config.trainable_token_indices).toEqual(TOKENS);
    expect(tensors.get('base_model.model.model.embed_tokens.token_adapter.trainable_tokens_delta')!.data).toEqual(a.tokens.get('model.embed_tokens')!.values.data);
    expect(tensors.get('base_model.model.lm_head.token_adapter.trainable_tokens_delta')!.data).toEqual(a.tokens.get('lm_head')!.values.data);
    expect(tensors.size).toBe(2 * 2 * SMALL.num_hidden_layers + 2);
    const { adapter: b } = loadAdapter(dir, SMALL, { trainable: true });
    expect(b.config).toEqual(a.config);
    expect(b.parameters().map(([n]) => n)).toEqual(a.parameters().map(([n]) => n));
    b.parameters().forEach(([, t], i) => { expect(t.data).toEqual(a.parameters()[i]![1].data); expect(t.requiresGrad).toBe(true); });
  });

  test('PEFT\'s list form (input embedding only) loads; missing, surplus and misshapen rows are refused naming the tensor', () => {
    const a = tokenAdapter(ApertusModel.init(SMALL, 3));
    const dir = path.join(tmp, 'tokens-bad');
    const write = (cfgEdit: (c: Record<string, unknown>) => void, tensorsEdit: (t: Map<string, { shape: number[]; data: Float32Array }>) => void): void => {
      saveAdapter(a, dir);
      const { config, tensors } = peftRead(dir, toHfConfig(SMALL) as unknown as Record<string, number>);
      cfgEdit(config);
      tensorsEdit(tensors);
      fs.writeFileSync(path.join(dir, 'adapter_config.json'), JSON.stringify(config));
      writeFile(path.join(dir, 'adapter_model.safetensors'), [...tensors].map(([n, t]) => [n, { dtype: 'F32' as const, shape: t.shape, data: t.data }] as const));
    };
    const head = 'base_model.model.lm_head.token_adapter.trainable_tokens_delta';
    write((c) => { c.trainable_token_indices = TOKENS.embed_tokens; }, (t) => t.delete(head));
    expect([...loadAdapter(dir, SMALL).adapter.tokens.keys()]).toEqual(['model.embed_tokens']);
    write((c) => { c.trainable_token_indices = { embed_tokens: TOKENS.embed_tokens }; }, () => undefined);
    expect(() => loadAdapter(dir, SMALL)).toThrow(/lm_head\.token_adapter\.trainable_tokens_delta: trainable_token_indices does not list this table/);
    write(() => undefined, (t) => t.delete(head));
    expect(() => loadAdapter(dir, SMALL)).toThrow(/lm_head\.token_adapter\.trainable_tokens_delta: missing tensor/);
    write((c) => { c.trainable_token_indices = { ...TOKENS, lm_head: [12, 3, 4] }; }, () => undefined);
    expect(() => loadAdapter(dir, SMALL)).toThrow(/shape \[2,32\] does not match 3 token ids/);
    write((c) => { c.trainable_token_indices = { ...TOKENS, lm_head: [12, 64] }; }, () => undefined);
    expect(() => loadAdapter(dir, SMALL)).toThrow(AdapterError);
  });

  test('the merged checkpoint has the rows copied in (PEFT\'s index_copy), checked by the independent PyTorch float64 script', () => {
    const base = ApertusModel.init(SMALL, 3);
    const out = checkMerge('t', base, tokenAdapter(base));
    expect(out.modules).toBe(2 * SMALL.num_hidden_layers);
    expect(out.token_tables).toBe(2);
    expect(out.token_err).toBe(0);
    expect(out.other_err).toBe(0);
    expect(out.adapted_err).toBeLessThan(1e-6 * out.scale!);
  }, 180_000);
});

describe('loadAdapter rejects what it cannot apply, naming file and field or tensor', () => {
  const good = path.join(tmp, 'good');
  saveAdapter(trainedAdapter(['q_proj'], 2), good);
  const variant = (name: string, edit: (cfg: Record<string, unknown>, tensors: Map<string, Float32Array | [number[], Float32Array]>) => void): string => {
    const dir = path.join(tmp, name);
    fs.mkdirSync(dir, { recursive: true });
    const cfg = JSON.parse(fs.readFileSync(path.join(good, 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
    const read = peftRead(good, toHfConfig(SMALL) as unknown as Record<string, number>).tensors;
    const tensors = new Map<string, Float32Array | [number[], Float32Array]>([...read].map(([n, t]) => [n, [t.shape, t.data]]));
    edit(cfg, tensors);
    fs.writeFileSync(path.join(dir, 'adapter_config.json'), JSON.stringify(cfg));
    writeFile(path.join(dir, 'adapter_model.safetensors'), [...tensors].map(([n, t]) => {
      const [shape, data] = Array.isArray(t) ? t : [[t.length], t];
      return [n, { dtype: 'F32' as const, shape, data }] as const;
    }));
    return dir;
  };
  const cases: [string, (c: Record<string, unknown>, t: Map<string, Float32Array | [number[], Float32Array]>) => void, RegExp][] = [
    ['peft-type', (c) => { c.peft_type = 'IA3'; }, /adapter_config\.json: peft_type: expected "LORA"/],
    ['dora', (c) => { c.use_dora = true; }, /use_dora: true is not supported/],
    ['bias', (c) => { c.bias = 'all'; }, /bias: "all" is not supported/],
    ['rank-pattern', (c) => { c.rank_pattern = { q_proj: 8 }; }, /rank_pattern/],
    ['r', (c) => { c.r = 3; }, /lora_A\.weight: shape \[2,32\] does not match r = 3/],
    ['missing-b', (_c, t) => { t.delete('base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight'); }, /layers\.1\.self_attn\.q_proj\.lora_B\.weight: missing tensor/],
    ['stranger', (_c, t) => { t.set('base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight', new Float32Array(64)); }, /lora_A\.default\.weight: not a lora_A\/lora_B factor/],
    ['no-layer', (_c, t) => { t.set('base_model.model.model.layers.7.self_attn.q_proj.lora_A.weight', [[2, 32], new Float32Array(64)]); }, /layers\.7.*not a lora_A\/lora_B factor/],
    ['untargeted', (_c, t) => { t.set('base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight', [[2, 32], new Float32Array(64)]); t.set('base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight', [[16, 2], new Float32Array(32)]); }, /k_proj is not in target_modules/],
  ];
  for (const [name, edit, message] of cases) {
    test(name, () => {
      const dir = variant(name, edit);
      try { loadAdapter(dir, SMALL); expect.fail('accepted'); } catch (e) {
        expect(e).toBeInstanceOf(AdapterError);
        expect((e as Error).message).toMatch(message);
        expect((e as Error).message).toContain(dir);
      }
    });
  }
  test('a missing directory or a pickle-only adapter', () => {
    expect(() => loadAdapter(path.join(tmp, 'nowhere'), SMALL)).toThrow(AdapterError);
    const dir = path.join(tmp, 'pickle');
    fs.mkdirSync(dir);
    fs.copyFileSync(path.join(good, 'adapter_config.json'), path.join(dir, 'adapter_config.json'));
    fs.writeFileSync(path.join(dir, 'adapter_model.bin'), 'x');
    expect(() => loadAdapter(dir, SMALL)).toThrow(/adapter_model\.bin, the pickle format, is not read/);
  });
});

describe('mergeAdapter', () => {
  test('the merged checkpoint equals base + (α/r)·B·A computed by an independent PyTorch float64 script', () => {
    const out = checkMerge('m', ApertusModel.init(SMALL, 3), trainedAdapter());
    expect(out.modules).toBe(4 * SMALL.num_hidden_layers);
    expect(out.other_err).toBe(0);
    expect(out.adapted_err).toBeLessThan(1e-6 * out.scale!);
  }, 180_000);
});

describe('a checkpoint of a model with an attached adapter', () => {
  test('holds the frozen base and the PEFT adapter; loads merged by default, attached (trainable) for resuming', () => {
    const model = ApertusModel.init(SMALL, 4);
    const a = trainedAdapter('all-linear');
    a.attach(model);
    expect(model.parameters().map(([n]) => n)).toEqual(a.parameters().map(([n]) => n));
    const dir = path.join(tmp, 'ckpt-lora');
    saveCheckpoint(model, dir, { dtype: 'f32', baseModel: 'base-dir' });
    expect(fs.readdirSync(dir).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors', 'config.json', 'generation_config.json', 'model.safetensors']);
    expect(peftRead(dir, toHfConfig(SMALL) as unknown as Record<string, number>).config.base_model_name_or_path).toBe('base-dir');
    const ids = Tensor.ints([1, 4, 9, 16, 25, 36], [1, 6]);
    const want = noGrad(() => model.forward(ids)).data;
    const merged = loadCheckpoint(dir, { precision: 'f32' }).model;
    expect(merged.adapter).toBeNull();
    noGrad(() => merged.forward(ids)).data.forEach((v, i) => expect(v).toBeCloseTo(want[i]!, 5));
    const resumed = loadCheckpoint(dir, { precision: 'f32', adapter: 'attach' }).model;
    expect(noGrad(() => resumed.forward(ids)).data).toEqual(want);
    expect(resumed.parameters().every(([, t]) => t.requiresGrad)).toBe(true);
    expect([...resumed.params.values()].some((t) => t.requiresGrad)).toBe(false);
    resumed.parameters().forEach(([, t], i) => expect(t.data).toEqual(a.parameters()[i]![1].data));
  });
});
