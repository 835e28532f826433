// Training-step, prefill and decode speed of @apertus/model next to Hugging Face transformers'
// ApertusForCausalLM on PyTorch (float32, CPU, SDPA attention; hf_apertus.py on the Python peers),
// the identical model on the identical tokens, measured in the same run.
//   node packages/model/bench/speed.mjs [--quick] [--write] [--only REGEX] [--cpu-time] [--budget S] [--threads N]
// Needs built packages (npm run build) and the Python peers (npm run peers). Each case writes one
// f32 checkpoint of our model (ApertusModel.init, seed 0) and its tokens to a temporary folder;
// transformers reads both from there, and the first training step's loss of both sides is printed
// next to each other (the same model predicts the same targets). Training cases run with AdamW
// (ours `AdamW`; transformers Trainer's default `adamw_torch_fused`) and AdEMAMix (ours
// `AdEMAMix`; the paper's reference implementation in torch, see hf_apertus.py), α 8, weight
// decay 0.1 on the matrices, lr 1e-3, and our step runs inside `tidy` and zeroes the gradients
// (`zeroGrad`), as the training loop (`trainStep` of @apertus/trainer) does.
// Each side is timed at 1 and 2 threads (`torch.set_num_threads`), interleaved in the same order
// (ours 1, transformers 1, ours 2, transformers 2), and its best kept. `--only` keeps the cases
// whose "what model B T" text matches (e.g. --only 'train|prefill'). `--cpu-time` times each
// side's process CPU seconds at 1 thread (for a machine loaded by other jobs, where wall times
// mostly measure the share of the CPU each side got). `--threads N` times both sides at N threads
// only (one process per thread count: a `small` B4 T512 training step fills most of the 4 GiB cpu
// device memory). `--budget S` (default 120) bounds each side's timed training steps to about S
// seconds of its clock: the median of the steps done by then (at least one; a warm-up step longer
// than S is itself the measurement), so `small` B4 T512 finishes at load too.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AdamW, AdEMAMix } from '@apertus/ademamix';
import { ApertusModel, KVCache, presetConfig, saveCheckpoint, step } from '@apertus/model';
import { backward, gemmKernelInfo, f32ArrayToBf16, Rng, setGemmThreads, Tensor, tidy } from '@apertus/tensor';
import { cpuDescription, loadRange, writeRecords } from '@apertus/bench';
import { peerPython } from '@apertus/peers';

const here = path.dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
const write = process.argv.includes('--write');
const onlyArg = process.argv.indexOf('--only');
const only = onlyArg >= 0 ? new RegExp(process.argv[onlyArg + 1]) : null;
const cpuTime = process.argv.includes('--cpu-time');
const budgetArg = process.argv.indexOf('--budget');
const budgetS = budgetArg >= 0 ? Number(process.argv[budgetArg + 1]) : 120;
const threadsArg = process.argv.indexOf('--threads');
/** Thread counts each side is timed at (best kept): 1 with --cpu-time, else 1 and 2, or the one given by --threads N. */
const THREADS = threadsArg >= 0 ? [Number(process.argv[threadsArg + 1])] : cpuTime ? [1] : [1, 2];
/** Milliseconds: wall time, or this process's CPU time (GEMM workers included) with --cpu-time. */
const now = () => { if (!cpuTime) return performance.now(); const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const OPTIMIZERS = { adamw: (params) => new AdamW(params, { lr: 1e-3, weightDecay: 0.1 }), ademamix: (params) => new AdEMAMix(params, { lr: 1e-3, alpha: 8, weightDecay: 0.1 }) };

/** transformers' tokens/s for one case at `threads`, from the checkpoint and tokens in `dir`. */
function peer(mode, dir, threads, { steps, optimizer }) {
  const args = { mode, checkpoint: dir, inputs: path.join(dir, 'inputs.json'), steps, threads, clock: cpuTime ? 'cpu' : 'wall', budget: budgetS, optimizer, lr: 1e-3, weight_decay: 0.1 };
  const out = execFileSync(peerPython(), [path.join(here, 'hf_apertus.py'), JSON.stringify(args)], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, OMP_NUM_THREADS: String(threads), OPENBLAS_NUM_THREADS: String(threads), MKL_NUM_THREADS: String(threads) },
  });
  return { ...JSON.parse(out.trim().split('\n').pop()), threads };
}

function median(xs) { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; }

/**
 * Our tokens/s for one case. The model's weights and gradients go back to the cpu device memory
 * when the case ends: left to the garbage collector, two `small` training models in a row (one per
 * thread count) fill its 4 GiB and the next case's GEMM cannot get scratch.
 */
function ours(mode, config, inputs, opts) {
  const model = ApertusModel.init(config, 0);
  if (opts.bf16) for (const [name, t] of model.params) if (t.rank === 2) model.params.set(name, new Tensor(f32ArrayToBf16(t.data), t.shape, 'bf16'));
  try {
    return measure(mode, opts.bf16 ? new ApertusModel(config, model.params) : model, inputs, opts);
  } finally {
    for (const [, p] of model.params) { p.grad?.dispose(); p.dispose(); }
  }
}

function measure(mode, m, { ids, targets }, { B, T, steps, optimizer }) {
  const times = [];
  if (mode === 'train') {
    const opt = OPTIMIZERS[optimizer](m.parameters());
    const x = Tensor.ints(ids.flat(), [B, T]), y = Tensor.ints(targets.flat(), [B, T]);
    let loss = null;
    for (let i = 0; i <= steps; i++) {
      const t0 = now();
      const l = tidy(() => { const l = m.loss(x, y); backward(l); return l.item(); });
      opt.step();
      opt.zeroGrad();
      const dt = now() - t0;
      loss ??= l;
      if (i > 0 || dt > 1000 * budgetS) times.push(dt);
      if (times.reduce((a, b) => a + b, 0) > 1000 * budgetS) break;
    }
    return { seconds: median(times) / 1000, tokens_per_s: (B * T) / (median(times) / 1000), loss };
  }
  if (mode === 'prefill') {
    for (let i = 0; i <= steps; i++) {
      const caches = ids.map(() => new KVCache(m.config, T));
      const t0 = now();
      step(m, caches.map((cache, b) => ({ cache, tokens: ids[b] })));
      if (i > 0) times.push(now() - t0);
    }
    return { seconds: median(times) / 1000, tokens_per_s: (B * T) / (median(times) / 1000) };
  }
  // decode: prefill the T tokens, then time one-token steps of the whole batch
  const caches = ids.map(() => new KVCache(m.config, T + steps + 1));
  step(m, caches.map((cache, b) => ({ cache, tokens: ids[b] })));
  // One logits array for every step, as `generate` and the server's scheduler pass it.
  const logits = new Float32Array(B * m.config.vocab_size);
  for (let i = 0; i <= steps; i++) {
    const t0 = now();
    step(m, caches.map((cache, b) => ({ cache, tokens: [ids[b][T - 1]] })), logits);
    if (i > 0) times.push(now() - t0);
  }
  return { seconds: median(times) / 1000, tokens_per_s: B / (median(times) / 1000) };
}

/** The case's checkpoint (f32, seed 0, written once) and tokens, in a temporary folder. */
function prepare(config, { B, T }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-speed-'));
  const model = ApertusModel.init(config, 0);
  saveCheckpoint(model, path.join(dir, 'model'), { dtype: 'f32' });
  for (const [, p] of model.params) p.dispose();
  const rng = new Rng(1);
  const rows = () => Array.from({ length: B }, () => Array.from({ length: T }, () => rng.int(config.vocab_size)));
  const inputs = { ids: rows(), targets: rows() };
  fs.writeFileSync(path.join(dir, 'model', 'inputs.json'), JSON.stringify(inputs));
  return { dir, inputs };
}

const tiny = presetConfig('tiny');
const small = presetConfig('small');
const layer8b = presetConfig('apertus-8b', { num_hidden_layers: 1, vocab_size: 1024 });
// Each case with the record it updates (--write): id, target, and the ratio the target asks for.
// A training case runs once per optimizer; AdEMAMix (the paper's) keeps the case's id, AdamW adds `-adamw`.
const train = (name, config, B, T, steps, [id, target, need]) => Object.keys(OPTIMIZERS).map((optimizer) => [
  `train step (${optimizer === 'adamw' ? 'AdamW' : 'AdEMAMix'})`, name, config, 'train', { B, T, steps, optimizer },
  [optimizer === 'adamw' ? `${id}-adamw` : id, `${target.replace('training step', `training step (${optimizer === 'adamw' ? 'AdamW' : 'AdEMAMix'})`)}`, need],
]);
const cases = [
  ...train('tiny', tiny, 8, 256, quick ? 2 : 5, ['train-tiny', 'training step, tiny B8 T256, ≥ 1.0× PyTorch eager (#18)', 1]),
  ['prefill', 'tiny', tiny, 'prefill', { B: 1, T: 256, steps: quick ? 2 : 5 }, ['prefill-tiny', 'prefill, tiny B1 T256', null]],
  ['decode', 'tiny', tiny, 'decode', { B: 1, T: 64, steps: quick ? 8 : 32 }, ['decode-tiny', 'decode batch 1, tiny, ≥ PyTorch eager (#4, #8)', 1]],
  ...train('small', small, 1, 256, quick ? 1 : 3, ['train-small-b1', 'training step, small B1 T256, ≥ 1.0× PyTorch eager (#18)', 1]),
  ...train('small', small, 4, 512, quick ? 1 : 2, ['train-small-b4', 'training step, small B4 T512, ≥ 1.0× PyTorch eager (#18)', 1]),
  ['prefill', 'small', small, 'prefill', { B: 1, T: 256, steps: quick ? 1 : 3 }, ['prefill-small', 'prefill, small B1 T256, ≥ 1.0× PyTorch eager (#18)', 1]],
  ['decode', 'small', small, 'decode', { B: 1, T: 64, steps: quick ? 4 : 16 }, ['decode-small-b1', 'decode batch 1, small, ≥ PyTorch eager (#4, #8)', 1]],
  ['decode', 'small', small, 'decode', { B: 8, T: 64, steps: quick ? 4 : 16 }, ['decode-small-b8', 'decode batch 8, small, ≥ 1.5× PyTorch eager and clearly above batch 1 (#18)', 1.5]],
  ['decode (bf16 weights; torch f32)', '8B-shaped layer', layer8b, 'decode', { B: 1, T: 16, steps: quick ? 2 : 8, bf16: true }, ['decode-8b-layer', 'decode batch 1, 8B-shaped layer with bf16 weights, ≥ PyTorch eager (#4, #8)', 1]],
];

const rows = [];
const cpu = cpuDescription();
const load = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');
const loadStart = load();
const best = (xs) => xs.reduce((a, b) => (a.tokens_per_s >= b.tokens_per_s ? a : b));
let versions = null;
console.log(`CPU: ${cpu}; Node ${process.version}; GEMM ${gemmKernelInfo().variant} ${gemmKernelInfo().microTile}; load average (1/5/15 min) ${loadStart}${cpuTime ? '; process CPU time at 1 thread' : ''}`);
for (const [what, name, config, mode, opts, record] of cases) {
  if (only && !only.test(`${what} ${name} ${opts.B} ${opts.T}`)) continue;
  const { dir, inputs } = prepare(config, opts);
  try {
    const o = [], t = [];
    const loadCase = load();
    for (const threads of THREADS) {
      setGemmThreads(threads);
      o.push({ ...ours(mode, config, inputs, opts), threads });
      t.push(peer(mode, path.join(dir, 'model'), threads, opts));
    }
    const [bo, bt] = [best(o), best(t)];
    versions ??= `transformers ${bt.transformers}, torch ${bt.torch}`;
    const row = { what, name, B: opts.B, T: opts.T, ours: bo, peer: bt, ratio: bo.tokens_per_s / bt.tokens_per_s, load: `${loadCase} → ${load()}`, record };
    rows.push(row);
    const losses = mode === 'train' ? `  loss ${bo.loss.toFixed(6)} / ${bt.loss.toFixed(6)}` : '';
    console.log(`${what.padEnd(34)} ${name.padEnd(16)} B${String(opts.B).padEnd(2)} T${String(opts.T).padEnd(4)} ours ${bo.tokens_per_s.toFixed(1).padStart(9)} tok/s  transformers ${bt.tokens_per_s.toFixed(1).padStart(9)} tok/s  ratio ${row.ratio.toFixed(2)}  (ms/step ${(bo.seconds * 1000).toFixed(1)} vs ${(bt.seconds * 1000).toFixed(1)}; threads ${bo.threads}/${bt.threads})${losses}  load ${row.load}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (write) {
  const clock = cpuTime ? 'process CPU time, one thread' : THREADS.length > 1 ? `wall, best of ${THREADS.join(' and ')} threads each` : `wall, ${THREADS[0]} threads each`;
  console.log(`wrote ${writeRecords('model', rows.map((r) => ({
    id: r.record[0],
    target: r.record[1],
    ...(r.record[2] !== null ? { status: r.ratio >= r.record[2] ? 'met' : 'not met' } : {}),
    figure: `${r.ours.tokens_per_s.toFixed(1)} tok/s against transformers ${r.peer.tokens_per_s.toFixed(1)} (${versions}; ${clock}; threads ${r.ours.threads} / ${r.peer.threads}${r.ours.loss === undefined ? '' : `; first-step loss ${r.ours.loss.toFixed(5)} / ${r.peer.loss.toFixed(5)}`})`,
    ratio: `${r.ratio.toFixed(2)}×`,
    load: loadRange(loadStart.split(' ')[0]),
  })))}`);
}
process.exit(0);
