import { backward, gradcheck, noGrad, Rng, Tensor } from '@apertus/tensor';
import { describe, expect, test } from 'vitest';
import { presetConfig } from './config';
import { AdapterError } from './errors';
import { step } from './infer';
import { KVCache } from './kv-cache';
import { LoraAdapter, parseLoraConfig, type LoraConfig } from './lora';
import { mergeAdapter } from './merge-adapter';
import { ApertusModel } from './model';

const SMALL = presetConfig('tiny', { vocab_size: 64, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8 });

/** An adapter on a single q_proj [out, in] with random (non-zero) factors. */
function single(out: number, inp: number, cfg: Partial<LoraConfig> = {}, seed = 3): { adapter: LoraAdapter; A: Tensor; B: Tensor } {
  const rng = new Rng(seed);
  const config = parseLoraConfig({ r: 2, lora_alpha: 6, target_modules: ['q_proj'], ...cfg });
  const A = Tensor.randn([config.r, inp], rng).requireGrad();
  const B = Tensor.randn([out, config.r], rng).requireGrad();
  return { adapter: new LoraAdapter(config, new Map([['model.layers.0.self_attn.q_proj', { A, B }]])), A, B };
}

describe('parseLoraConfig', () => {
  test('PEFT defaults: r 8, lora_alpha 8, no dropout, q_proj and v_proj', () => {
    expect(parseLoraConfig({})).toEqual({ r: 8, lora_alpha: 8, lora_dropout: 0, target_modules: ['q_proj', 'v_proj'], use_rslora: false, trainable_token_indices: null });
  });
  test('target modules are kept in layer order; "all-linear" is resolved by init', () => {
    expect(parseLoraConfig({ target_modules: ['down_proj', 'q_proj'] }).target_modules).toEqual(['q_proj', 'down_proj']);
    const a = LoraAdapter.init(SMALL, parseLoraConfig({ target_modules: 'all-linear' }));
    expect(a.config.target_modules).toEqual(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj']);
    expect(a.modules.size).toBe(6 * SMALL.num_hidden_layers);
  });
  test('bad fields throw AdapterError naming the field', () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ r: 0 }, 'r'], [{ r: 2.5 }, 'r'], [{ lora_alpha: -1 }, 'lora_alpha'], [{ lora_dropout: 1 }, 'lora_dropout'],
      [{ target_modules: [] }, 'target_modules'], [{ alpha: 16 }, 'alpha'], [{ target_modules: ['lm_head'] }, 'target_modules'], [{ use_rslora: 'yes' }, 'use_rslora'],
    ];
    for (const [raw, field] of bad) {
      try { parseLoraConfig(raw, 'run.json'); expect.fail(`accepted ${JSON.stringify(raw)}`); } catch (e) {
        expect(e).toBeInstanceOf(AdapterError);
        expect((e as AdapterError).field).toBe(field);
        expect((e as Error).message).toContain('run.json');
      }
    }
  });
  test('a target the model does not have (gate_proj in an xIELU model) is refused by init', () => {
    expect(() => LoraAdapter.init(SMALL, parseLoraConfig({ target_modules: ['gate_proj'] }))).toThrow(/gate_proj is not a projection of this model/);
  });
});

describe('LoraAdapter.init', () => {
  test('A is U(−1/√in, 1/√in) as kaiming_uniform_(a = √5), B is zero; scaling α/r (α/√r with rsLoRA)', () => {
    const a = LoraAdapter.init(SMALL, parseLoraConfig({ r: 16, lora_alpha: 64, target_modules: ['q_proj', 'down_proj'] }), 7);
    expect(a.scaling).toBe(4);
    expect(LoraAdapter.init(SMALL, parseLoraConfig({ r: 4, lora_alpha: 16, use_rslora: true })).scaling).toBe(8);
    const down = a.modules.get('model.layers.1.mlp.down_proj')!;
    expect(down.A.shape).toEqual([16, SMALL.intermediate_size]);
    expect(down.B.shape).toEqual([SMALL.hidden_size, 16]);
    let all: number[] = [];
    for (const { A, B } of a.modules.values()) {
      const bound = 1 / Math.sqrt(A.shape[1]!);
      for (const v of A.data) expect(Math.abs(v)).toBeLessThanOrEqual(bound);
      all = all.concat([...A.data].map((v) => v / bound));
      expect(B.data.every((v) => v === 0)).toBe(true);
      expect(A.requiresGrad && B.requiresGrad).toBe(true);
    }
    // Uniform on (−1, 1) after rescaling: mean 0, variance 1/3.
    const mean = all.reduce((s, v) => s + v, 0) / all.length;
    const variance = all.reduce((s, v) => s + (v - mean) ** 2, 0) / all.length;
    expect(all.length).toBeGreaterThan(1000);
    expect(Math.abs(mean)).toBeLessThan(0.05);
    expect(Math.abs(variance - 1 / 3)).toBeLessThan(0.03);
  });
  test('same seed, same factors; parameters() names them as PEFT saves them', () => {
    const cfg = parseLoraConfig({ r: 2 });
    const a = LoraAdapter.init(SMALL, cfg, 5), b = LoraAdapter.init(SMALL, cfg, 5);
    expect(a.parameters().map(([n]) => n).slice(0, 4)).toEqual([
      'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight', 'base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight',
      'base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight', 'base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight',
    ]);
    a.parameters().forEach(([, t], i) => expect(t.data).toEqual(b.parameters()[i]![1].data));
    expect(a.parameterCount()).toBe(2 * 2 * (2 * 32 + 32 + 16));
  });
});

describe('LoraAdapter.project', () => {
  test('equals x·Wᵀ + (α/r)·x·Aᵀ·Bᵀ computed in float64', () => {
    const { adapter, A, B } = single(5, 7);
    const rng = new Rng(9);
    const x = Tensor.randn([3, 7], rng), W = Tensor.randn([5, 7], rng);
    const y = adapter.project(x, W, 0, 'q_proj').data;
    const [xd, Wd, Ad, Bd] = [x.data, W.data, A.data, B.data];
    for (let i = 0; i < 3; i++) for (let o = 0; o < 5; o++) {
      let ref = 0;
      for (let k = 0; k < 7; k++) ref += xd[i * 7 + k]! * Wd[o * 7 + k]!;
      for (let j = 0; j < 2; j++) { let ax = 0; for (let k = 0; k < 7; k++) ax += Ad[j * 7 + k]! * xd[i * 7 + k]!; ref += 3 * Bd[o * 2 + j]! * ax; }
      expect(y[i * 5 + o]).toBeCloseTo(ref, 4);
    }
  });
  test('disabled, or on a projection it does not adapt, it is exactly x·Wᵀ', () => {
    const { adapter } = single(5, 7);
    const rng = new Rng(2);
    const x = Tensor.randn([3, 7], rng), W = Tensor.randn([5, 7], rng);
    const plain = adapter.project(x, W, 1, 'q_proj').data;
    expect(adapter.project(x, W, 0, 'k_proj').data).toEqual(plain);
    adapter.enabled = false;
    expect(adapter.project(x, W, 0, 'q_proj').data).toEqual(plain);
  });
  test('gradient check of the LoRA path (x, A, B) by central finite differences; the frozen W gets no gradient', () => {
    const { adapter, A, B } = single(6, 5, { r: 2, lora_alpha: 3 });
    const rng = new Rng(4);
    const x = Tensor.randn([2, 3, 5], rng).requireGrad(), W = Tensor.randn([6, 5], rng);
    const r = gradcheck(([xi]) => adapter.project(xi!, W, 0, 'q_proj'), [x, A, B], { eps: 1e-2 });
    expect(r.maxError).toBeLessThan(1e-2);
    expect(W.grad ?? null).toBeNull();
  });
  test('dropout (training only) zeroes adapter inputs with probability p and scales the rest by 1/(1 − p)', () => {
    // W = 0 and B·A = I with s = 1 make the output the dropped-out input itself.
    const n = 4, cfg = parseLoraConfig({ r: n, lora_alpha: n, lora_dropout: 0.25, target_modules: ['q_proj'] });
    const eye = () => Tensor.from(new Float32Array(n * n).map((_, i) => (i % (n + 1) === 0 ? 1 : 0)), [n, n]);
    const adapter = new LoraAdapter(cfg, new Map([['model.layers.0.self_attn.q_proj', { A: eye(), B: eye() }]]), 11);
    const x = Tensor.full([500, n], 3), W = Tensor.zeros([n, n]);
    expect(adapter.project(x, W, 0, 'q_proj').data.every((v) => v === 3)).toBe(true);
    adapter.training = true;
    const y = adapter.project(x, W, 0, 'q_proj').data;
    const zeros = y.filter((v) => v === 0).length;
    expect(y.every((v) => v === 0 || Math.abs(v - 4) < 1e-6)).toBe(true);
    expect(Math.abs(zeros / y.length - 0.25)).toBeLessThan(0.04);
    // The backward pass sees the same mask: dL/dx = mask for L = Σ y.
    const xg = Tensor.full([500, n], 3).requireGrad();
    const y2 = adapter.project(xg, W, 0, 'q_proj');
    backward(y2, Tensor.full([500, n], 1));
    y2.data.forEach((v, i) => expect(xg.grad!.data[i]).toBeCloseTo(v / 3, 5));
  });
});

describe('LoraAdapter.mergeWeight', () => {
  test('W + (α/r)·B·A against float64, and bf16 weights stay bf16', () => {
    const { adapter, A, B } = single(6, 5);
    const W = Tensor.randn([6, 5], new Rng(8));
    const m = adapter.mergeWeight('model.layers.0.self_attn.q_proj', W).data;
    for (let o = 0; o < 6; o++) for (let k = 0; k < 5; k++) {
      let ba = 0;
      for (let j = 0; j < 2; j++) ba += B.data[o * 2 + j]! * A.data[j * 5 + k]!;
      expect(Math.abs(m[o * 5 + k]! - (W.data[o * 5 + k]! + 3 * ba))).toBeLessThan(1e-5);
    }
    expect(adapter.mergeWeight('model.layers.0.self_attn.q_proj', W.to('bf16')).dtype).toBe('bf16');
    expect(adapter.mergeWeight('model.layers.0.self_attn.k_proj', W)).toBe(W);
  });
});

describe('LoRA on an Apertus model', () => {
  const cfg = { ...SMALL, initializer_range: 0.2 };
  const ids = Tensor.ints([1, 5, 9, 13, 2, 40, 7, 22, 31, 3, 11, 60, 8, 19, 4, 50], [2, 8]);
  const targets = Tensor.ints([5, 9, 13, 2, 40, 7, 22, 31, 11, 60, 8, 19, 4, 50, 6, 1], [16]);
  /** A model with an attached adapter whose B factors are random (as after training). */
  function adapted(targets: unknown = 'all-linear', seed = 1): { model: ApertusModel; adapter: LoraAdapter } {
    const model = ApertusModel.init(cfg, 7);
    const adapter = LoraAdapter.init(cfg, parseLoraConfig({ r: 4, lora_alpha: 8, target_modules: targets }), seed);
    const rng = new Rng(seed + 100);
    for (const { B } of adapter.modules.values()) B.data.set(Tensor.randn(B.shape, rng, 0.2).data);
    adapter.attach(model);
    return { model, adapter };
  }
  const logits = (m: ApertusModel) => noGrad(() => m.forward(ids)).data;

  test('a fresh adapter (B = 0) leaves the logits bit-identical; disabled, a trained one gives the base back', () => {
    const base = logits(ApertusModel.init(cfg, 7));
    const model = ApertusModel.init(cfg, 7);
    LoraAdapter.init(cfg, parseLoraConfig({ target_modules: 'all-linear' }), 3).attach(model);
    expect(logits(model)).toEqual(base);
    const { model: m2, adapter } = adapted();
    expect(logits(m2)).not.toEqual(base);
    adapter.enabled = false;
    expect(logits(m2)).toEqual(base);
  });

  test('gradient check of the LoRA factors through the whole decoder (finite differences)', () => {
    const { model, adapter } = adapted(['q_proj', 'down_proj']);
    const q = adapter.modules.get('model.layers.0.self_attn.q_proj')!, down = adapter.modules.get('model.layers.1.mlp.down_proj')!;
    const r = gradcheck(() => model.loss(ids, targets), [q.A, q.B, down.A, down.B], { eps: 1e-2, maxElements: 24 });
    expect(r.maxError).toBeLessThan(2e-2);
  });

  test('training steps change only the adapter: the frozen base is bit-identical and gets no gradient', () => {
    const { model, adapter } = adapted(['q_proj', 'v_proj', 'up_proj']);
    const before = new Map([...model.params].map(([n, t]) => [n, t.data.slice()]));
    const trainable = adapter.parameters().map(([, t]) => t);
    const start = trainable.map((t) => t.data.slice());
    const losses: number[] = [];
    for (let s = 0; s < 5; s++) {
      for (const t of trainable) t.zeroGrad();
      const loss = model.loss(ids, targets);
      losses.push(loss.item());
      backward(loss);
      for (const t of trainable) { const g = t.grad!.data; t.data.forEach((v, i) => { t.data[i] = v - 0.5 * g[i]!; }); }
    }
    expect(losses[4]).toBeLessThan(losses[0]!);
    for (const [n, t] of model.params) {
      expect(t.requiresGrad).toBe(false);
      expect(t.grad ?? null).toBeNull();
      expect(t.data).toEqual(before.get(n));
    }
    trainable.forEach((t, i) => expect(t.data).not.toEqual(start[i]));
  });

  test('the merged model computes what base + adapter computes, in training forward and in KV-cache inference', () => {
    const { model, adapter } = adapted();
    const merged = mergeAdapter(model, adapter);
    expect(merged.projection).not.toBe(adapter.project);
    const a = logits(model), b = logits(merged);
    let err = 0, scaleMax = 0;
    a.forEach((v, i) => { err = Math.max(err, Math.abs(v - b[i]!)); scaleMax = Math.max(scaleMax, Math.abs(v)); });
    expect(err).toBeLessThan(1e-5 * scaleMax);
    // Merged weights are W + (α/r)·B·A, computed here in float64.
    const w = model.params.get('model.layers.1.mlp.up_proj.weight')!, mw = merged.params.get('model.layers.1.mlp.up_proj.weight')!;
    const { A, B } = adapter.modules.get('model.layers.1.mlp.up_proj')!;
    const [out, inp] = w.shape as [number, number];
    for (let o = 0; o < out; o += 7) for (let k = 0; k < inp; k += 5) {
      let ba = 0;
      for (let j = 0; j < 4; j++) ba += B.data[o * 4 + j]! * A.data[j * inp + k]!;
      expect(Math.abs(mw.data[o * inp + k]! - (w.data[o * inp + k]! + 2 * ba))).toBeLessThan(1e-6);
    }
    // The KV-cache path runs the same hook.
    const c1 = new KVCache(cfg, 8), c2 = new KVCache(cfg, 8);
    for (const t of [1, 5, 9, 13]) {
      const x = step(model, [{ cache: c1, tokens: [t] }]), y = step(merged, [{ cache: c2, tokens: [t] }]);
      x.forEach((v, i) => expect(Math.abs(v - y[i]!)).toBeLessThan(1e-4));
    }
    expect(model.params.get('model.layers.1.mlp.up_proj.weight')).toBe(w);
  });

  test('attach refuses factors that do not fit the model', () => {
    const other = { ...cfg, hidden_size: 48, num_attention_heads: 6 };
    const adapter = LoraAdapter.init(other, parseLoraConfig({}));
    expect(() => adapter.attach(ApertusModel.init(cfg, 1))).toThrow(AdapterError);
  });
});

describe('trainable_token_indices (PEFT TrainableTokens): rows of the embedding and LM head trained in place', () => {
  const cfg = { ...SMALL, initializer_range: 0.2 };
  const ids = Tensor.ints([1, 5, 9, 13, 2, 40, 7, 22, 31, 3, 11, 60, 8, 19, 4, 50], [2, 8]);
  const targets = Tensor.ints([5, 9, 13, 2, 40, 7, 22, 31, 11, 60, 8, 19, 4, 50, 6, 1], [16]);
  const EMBED = [5, 40, 11], HEAD = [2, 60, 4, 9];
  const tokenConfig = (extra: Record<string, unknown> = {}) => parseLoraConfig({ r: 2, lora_alpha: 4, target_modules: ['q_proj'], trainable_token_indices: { embed_tokens: EMBED, lm_head: HEAD }, ...extra });
  const logits = (m: ApertusModel) => noGrad(() => m.forward(ids)).data;

  test('parsing: a list means the input embedding (PEFT), a dict names tables; bad values name the field', () => {
    expect(parseLoraConfig({ trainable_token_indices: [3, 1] }).trainable_token_indices).toEqual({ embed_tokens: [3, 1] });
    expect(tokenConfig().trainable_token_indices).toEqual({ embed_tokens: EMBED, lm_head: HEAD });
    const bad: [unknown, string][] = [[[], 'trainable_token_indices'], [[1, 1], 'trainable_token_indices'], [[-1], 'trainable_token_indices'], [{ wte: [1] }, 'trainable_token_indices'], [{ lm_head: [0.5] }, 'trainable_token_indices.lm_head'], [{}, 'trainable_token_indices'], ['61', 'trainable_token_indices']];
    for (const [v, field] of bad) {
      try { parseLoraConfig({ trainable_token_indices: v }); expect.fail(`accepted ${JSON.stringify(v)}`); } catch (e) {
        expect(e).toBeInstanceOf(AdapterError);
        expect((e as AdapterError).field).toBe(field);
      }
    }
    expect(() => LoraAdapter.init(cfg, tokenConfig())).toThrow(/initialise the adapter from the model/);
    expect(() => LoraAdapter.init(ApertusModel.init(cfg, 1), parseLoraConfig({ trainable_token_indices: [64] }))).toThrow(/token id 64 is outside the vocabulary \(64\)/);
  });

  test('rows start as the base rows (the model is unchanged), are named as PEFT saves them and count as trainable', () => {
    const model = ApertusModel.init(cfg, 7), base = logits(model);
    const adapter = LoraAdapter.init(model, tokenConfig(), 3);
    const emb = adapter.tokens.get('model.embed_tokens')!, head = adapter.tokens.get('lm_head')!;
    expect(emb.values.shape).toEqual([3, cfg.hidden_size]);
    const E = model.params.get('model.embed_tokens.weight')!.data, H = cfg.hidden_size;
    EMBED.forEach((id, k) => expect(emb.values.data.subarray(k * H, (k + 1) * H)).toEqual(E.subarray(id * H, (id + 1) * H)));
    expect(head.values.requiresGrad).toBe(true);
    expect(adapter.parameters().map(([n]) => n).slice(-2)).toEqual(['base_model.model.model.embed_tokens.token_adapter.trainable_tokens_delta', 'base_model.model.lm_head.token_adapter.trainable_tokens_delta']);
    expect(adapter.parameterCount()).toBe(2 * 2 * (2 * 32) + (3 + 4) * 32);
    adapter.attach(model);
    expect(logits(model)).toEqual(base);
  });

  test('gradient check of the token rows through the whole model (finite differences)', () => {
    const model = ApertusModel.init(cfg, 7);
    const adapter = LoraAdapter.init(model, tokenConfig(), 3);
    adapter.attach(model);
    const rows = [adapter.tokens.get('model.embed_tokens')!.values, adapter.tokens.get('lm_head')!.values];
    const r = gradcheck(() => model.loss(ids, targets), rows, { eps: 1e-2, maxElements: 32 });
    expect(r.maxError).toBeLessThan(2e-2);
  });

  test('training changes exactly the listed rows of the effective tables; the base tables stay bit-identical; disabled gives the base back', () => {
    const model = ApertusModel.init(cfg, 7), base = logits(model);
    const adapter = LoraAdapter.init(model, tokenConfig(), 3);
    adapter.attach(model);
    const before = new Map([...model.params].map(([n, t]) => [n, t.data.slice()]));
    const trainable = adapter.parameters().map(([, t]) => t);
    for (let s = 0; s < 3; s++) {
      for (const t of trainable) t.zeroGrad();
      backward(model.loss(ids, targets));
      for (const t of trainable) { const g = t.grad!.data; t.data.forEach((v, i) => { t.data[i] = v - 0.5 * g[i]!; }); }
    }
    for (const [n, t] of model.params) { expect(t.data).toEqual(before.get(n)); expect(t.grad ?? null).toBeNull(); }
    const H = cfg.hidden_size;
    for (const [name, list] of [['model.embed_tokens', EMBED], ['lm_head', HEAD]] as const) {
      const eff = noGrad(() => (name === 'lm_head' ? model.lmHead : model.embedTokens) as Tensor).data, W = before.get(`${name}.weight`)!;
      for (let id = 0; id < cfg.vocab_size; id++) {
        const row = eff.subarray(id * H, (id + 1) * H), orig = W.subarray(id * H, (id + 1) * H);
        if ((list as readonly number[]).includes(id)) expect(row).not.toEqual(orig);
        else expect(row).toEqual(orig);
      }
    }
    expect(logits(model)).not.toEqual(base);
    adapter.enabled = false;
    expect(logits(model)).toEqual(base);
  });

  test('the merged model has the rows copied into its tables and computes what the adapted model computes', () => {
    const model = ApertusModel.init(cfg, 7);
    const adapter = LoraAdapter.init(model, tokenConfig(), 3);
    const rng = new Rng(5);
    for (const { values } of adapter.tokens.values()) values.data.set(Tensor.randn(values.shape, rng, 0.5).data);
    for (const { B } of adapter.modules.values()) B.data.set(Tensor.randn(B.shape, rng, 0.2).data);
    adapter.attach(model);
    const merged = mergeAdapter(model, adapter);
    const H = cfg.hidden_size, head = merged.params.get('lm_head.weight')!.data, baseHead = model.params.get('lm_head.weight')!.data;
    const rows = adapter.tokens.get('lm_head')!.values.data;
    for (let id = 0; id < cfg.vocab_size; id++) {
      const k = HEAD.indexOf(id);
      expect(head.subarray(id * H, (id + 1) * H)).toEqual(k >= 0 ? rows.subarray(k * H, (k + 1) * H) : baseHead.subarray(id * H, (id + 1) * H));
    }
    const a = logits(model), b = logits(merged);
    let err = 0, scaleMax = 0;
    a.forEach((v, i) => { err = Math.max(err, Math.abs(v - b[i]!)); scaleMax = Math.max(scaleMax, Math.abs(v)); });
    expect(err).toBeLessThan(1e-5 * scaleMax);
    const c1 = new KVCache(cfg, 8), c2 = new KVCache(cfg, 8);
    for (const t of [5, 40, 9, 11]) {
      const x = step(model, [{ cache: c1, tokens: [t] }]), y = step(merged, [{ cache: c2, tokens: [t] }]);
      x.forEach((v, i) => expect(Math.abs(v - y[i]!)).toBeLessThan(1e-4));
    }
  });
});
