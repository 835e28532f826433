// Peak memory of a training step and of bf16 inference, against budgets computed on paper.
//   node --expose-gc packages/model/bench/memory.mjs train <preset> <B> <T>
//   node --expose-gc packages/model/bench/memory.mjs infer <layers> <context>
//   node packages/model/bench/memory.mjs --write     (runs each case in a fresh process; the figures go to
//                                                     tooling/bench/results/memory.json)
// Peak RSS is the kernel's VmHWM of the process (so one case per process).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadAverage, loadRange, writeRecords } from '@apertus/bench';

const MiB = 1024 * 1024;
const vmHWM = () => Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;

async function train(preset, B, T) {
  const { AdEMAMix } = await import('@apertus/ademamix');
  const { ApertusModel, presetConfig, parameterCount } = await import('@apertus/model');
  const { backward, Rng, Tensor, tidy } = await import('@apertus/tensor');
  const c = presetConfig(preset);
  const base = vmHWM();
  const model = ApertusModel.init(c, 0);
  const opt = new AdEMAMix(model.parameters(), { lr: 1e-3 });
  const rng = new Rng(0);
  const ids = Tensor.ints(Array.from({ length: B * T }, () => rng.int(c.vocab_size)), [B, T]);
  for (let i = 0; i < 2; i++) {
    tidy(() => backward(model.loss(ids, ids))); // as the training loop runs a step
    opt.step();
    for (const [, p] of model.parameters()) p.grad = null;
  }
  const P = parameterCount(c);
  // Budget on paper (float32): weights + grads + 3 AdEMAMix moments = 5P, plus the activations
  // autograd keeps per layer: ~ (x, norm, q, k, v, q/k after norm and rope, attention out,
  // o-proj out, residual, ffn norm) ≈ 12·H + 3·I + 2·(nh+2·nkv)·d floats per token, plus the
  // fused loss's dW buffer (V·H) and hidden rows (T·H).
  const H = c.hidden_size, I = c.intermediate_size, d = c.head_dim;
  const perTokenLayer = 12 * H + 3 * I + 2 * (c.num_attention_heads + 2 * c.num_key_value_heads) * d;
  const activations = B * T * (c.num_hidden_layers * perTokenLayer + 2 * H);
  const budget = 4 * (5 * P + activations + c.vocab_size * H);
  return { case: `training step, ${preset}, B=${B}, T=${T}`, peak: vmHWM() - base, budget, detail: `params ${(P / 1e6).toFixed(1)}M; weights+grads+3 moments ${(20 * P / MiB).toFixed(0)} MiB; activations ${(4 * activations / MiB).toFixed(0)} MiB` };
}

async function infer(layers, context) {
  const { ApertusModel, presetConfig, parameterShapes, KVCache, step } = await import('@apertus/model');
  const { Tensor, Rng } = await import('@apertus/tensor');
  const c = presetConfig('apertus-8b', { num_hidden_layers: layers, vocab_size: 8192 });
  const base = vmHWM();
  // Random bf16 weights built tensor by tensor (never a full f32 copy of the model).
  const rng = new Rng(0);
  const params = new Map();
  let weightBytes = 0;
  for (const [name, shape] of parameterShapes(c)) {
    const n = shape.reduce((a, b) => a * b, 1);
    let t;
    if (shape.length === 2) {
      const bits = new Uint16Array(n);
      for (let i = 0; i < n; i++) bits[i] = 0x3c00 + (rng.nextU32() & 0x1ff) - 0x100; // small random bf16 values
      t = new Tensor(bits, shape, 'bf16');
      weightBytes += 2 * n;
    } else {
      t = name.includes('act_fn') ? Tensor.from(new Float32Array(n).fill(name.endsWith('eps') ? -1e-6 : 0.5), shape) : Tensor.ones(shape);
      weightBytes += 2 * n;
    }
    params.set(name, t);
  }
  const model = new ApertusModel(c, params);
  const cache = new KVCache(c, context);
  step(model, [{ cache, tokens: Array.from({ length: 64 }, (_, i) => 100 + i) }]);
  for (let i = 0; i < 8; i++) step(model, [{ cache, tokens: [7] }]);
  const budget = weightBytes + cache.bytes;
  return { case: `inference, 8B-shaped ${layers}-layer stack (bf16 weights), context ${context}`, peak: vmHWM() - base, budget, detail: `bf16 weights ${(weightBytes / MiB).toFixed(0)} MiB; f32 KV cache ${(cache.bytes / MiB).toFixed(0)} MiB` };
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === 'train' || mode === 'infer') {
  const r = mode === 'train' ? await train(rest[0], +rest[1], +rest[2]) : await infer(+rest[0], +rest[1]);
  console.log(JSON.stringify(r));
  process.exit(0);
}
const loadStart = loadAverage();
const cases = [['train', 'tiny', '8', '256'], ['train', 'small', '1', '256'], ['infer', '4', '4096']];
const rows = cases.map((args) => JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), ...args], { encoding: 'utf8' }).trim().split('\n').pop()));
for (const r of rows) console.log(`${r.case.padEnd(60)} peak ${(r.peak / MiB).toFixed(0).padStart(6)} MiB  budget ${(r.budget / MiB).toFixed(0).padStart(6)} MiB  ratio ${(r.peak / r.budget).toFixed(2)}  (${r.detail})`);
if (process.argv.includes('--write')) {
  const targets = [
    ['memory-train-tiny', 'training-step peak memory ≤ 1.5× the computed budget, tiny B8 T256 (#8, #18)', 1.5],
    ['memory-train-small', 'training-step peak memory ≤ 1.5× the computed budget, small B1 T256 (#8, #18)', 1.5],
    ['memory-infer-8b', '8B-shaped 4-layer inference memory ≤ 1.1× bf16 weights + KV cache, context 4096 (#8)', 1.1],
  ];
  console.log(`wrote ${writeRecords('memory', rows.map((r, i) => ({
    id: targets[i][0],
    target: targets[i][1],
    status: r.peak / r.budget <= targets[i][2] ? 'met' : 'not met',
    figure: `${(r.peak / MiB).toFixed(0)} MiB peak RSS growth against a ${(r.budget / MiB).toFixed(0)} MiB budget (${r.detail})`,
    ratio: `${(r.peak / r.budget).toFixed(2)}× the budget`,
    load: loadRange(loadStart),
  })))}`);
}
