// Training-step, prefill and decode speed of @apertus/model next to PyTorch (eager, float32,
// Debian python3-torch with OpenBLAS) on the same configs, measured in the same run.
//   node packages/model/bench/speed.mjs [--quick] [--write] [--only REGEX] [--cpu-time] [--budget S] [--threads N]
// Needs built packages (npm run build) and /usr/bin/python3 with torch. `--only` keeps the cases
// whose "what model B T" text matches (e.g. --only 'train|prefill'). PyTorch runs with
// torch.set_num_threads and OPENBLAS_NUM_THREADS (its OpenBLAS ignores the former); our training
// step runs inside `tidy`, as the training loop does. `--cpu-time` times each side's process CPU
// seconds at 1 thread (for a machine loaded by other jobs, where wall times mostly measure the
// share of the CPU each side got). `--threads N` times both sides at N threads only (one process per
// thread count: a `small` B4 T512 training step fills most of the 4 GiB cpu device memory). `--budget S` (default 120) bounds each side's timed training
// steps to about S seconds of its clock: the median of the steps done by then (at least one; a
// warm-up step longer than S is itself the measurement), so `small` B4 T512 finishes at load too.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AdEMAMix } from '@apertus/ademamix';
import { ApertusModel, KVCache, presetConfig, step } from '@apertus/model';
import { backward, f32ArrayToBf16, noGrad, Rng, setGemmThreads, Tensor, tidy } from '@apertus/tensor';
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


/** PyTorch at 1 and 2 threads, best of the two (its OpenMP threads degrade badly when a core is busy). */
function torch(mode, config, extra) {
  const run = (threads) => JSON.parse(execFileSync(peerPython(), [path.join(here, 'torch_apertus.py'), JSON.stringify({ mode, config, threads, clock: cpuTime ? 'cpu' : 'wall', ...extra })], {
    encoding: 'utf8', env: { ...process.env, OPENBLAS_NUM_THREADS: String(threads), OMP_NUM_THREADS: String(threads) },
  }).trim().split('\n').pop());
  return THREADS.map(run).reduce((a, b) => (a.tokens_per_s >= b.tokens_per_s ? a : b));
}

function median(xs) { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; }

/**
 * Our tokens/s for one case. The model's weights and gradients go back to the cpu device memory
 * when the case ends: left to the garbage collector, two `small` training models in a row (one per
 * thread count) fill its 4 GiB and the next case's GEMM cannot get scratch.
 */
function ours(mode, config, opts) {
  const model = ApertusModel.init(config, 0);
  if (opts.bf16) for (const [name, t] of model.params) if (t.rank === 2) model.params.set(name, new Tensor(f32ArrayToBf16(t.data), t.shape, 'bf16'));
  try {
    return measure(mode, opts.bf16 ? new ApertusModel(config, model.params) : model, config, opts);
  } finally {
    for (const [, p] of model.params) { p.grad?.dispose(); p.dispose(); }
  }
}

function measure(mode, m, config, { B, T, steps }) {
  const rng = new Rng(1);
  const ids = () => Tensor.ints(Array.from({ length: B * T }, () => rng.int(config.vocab_size)), [B, T]);
  const times = [];
  if (mode === 'train') {
    const opt = new AdEMAMix(m.parameters(), { lr: 1e-3 });
    const x = ids(), y = ids();
    for (let i = 0; i <= steps; i++) {
      const t0 = now();
      tidy(() => backward(m.loss(x, y)));
      opt.step();
      for (const [, p] of m.parameters()) p.grad = null;
      const dt = now() - t0;
      if (i > 0 || dt > 1000 * budgetS) times.push(dt);
      if (times.reduce((a, b) => a + b, 0) > 1000 * budgetS) break;
    }
    return { seconds: median(times) / 1000, tokens_per_s: (B * T) / (median(times) / 1000) };
  }
  if (mode === 'prefill') {
    for (let i = 0; i <= steps; i++) {
      const caches = Array.from({ length: B }, () => new KVCache(config, T));
      const toks = Array.from({ length: B }, () => Array.from({ length: T }, () => rng.int(config.vocab_size)));
      const t0 = now();
      step(m, caches.map((cache, b) => ({ cache, tokens: toks[b] })));
      if (i > 0) times.push(now() - t0);
    }
    return { seconds: median(times) / 1000, tokens_per_s: (B * T) / (median(times) / 1000) };
  }
  const caches = Array.from({ length: B }, () => new KVCache(config, T + steps + 1));
  step(m, caches.map((cache) => ({ cache, tokens: Array.from({ length: T }, () => rng.int(config.vocab_size)) })));
  // One logits array for every step, as `generate` and the server's scheduler pass it.
  const logits = new Float32Array(B * config.vocab_size);
  for (let i = 0; i <= steps; i++) {
    const t0 = now();
    step(m, caches.map((cache) => ({ cache, tokens: [rng.int(config.vocab_size)] })), logits);
    if (i > 0) times.push(now() - t0);
  }
  return { seconds: median(times) / 1000, tokens_per_s: B / (median(times) / 1000) };
}

const tiny = presetConfig('tiny');
const small = presetConfig('small');
const layer8b = presetConfig('apertus-8b', { num_hidden_layers: 1, vocab_size: 1024 });
// Each case with the record it updates (--write): id, target, and the ratio the target asks for.
const cases = [
  ['train step', 'tiny', tiny, 'train', { B: 8, T: 256, steps: quick ? 2 : 5 }, ['train-tiny', 'training step, tiny B8 T256, ≥ 1.0× PyTorch eager (#18)', 1]],
  ['prefill', 'tiny', tiny, 'prefill', { B: 1, T: 256, steps: quick ? 2 : 5 }, ['prefill-tiny', 'prefill, tiny B1 T256', null]],
  ['decode', 'tiny', tiny, 'decode', { B: 1, T: 64, steps: quick ? 8 : 32 }, ['decode-tiny', 'decode batch 1, tiny, ≥ PyTorch eager (#4, #8)', 1]],
  ['train step', 'small', small, 'train', { B: 1, T: 256, steps: quick ? 1 : 3 }, ['train-small-b1', 'training step, small B1 T256, ≥ 1.0× PyTorch eager (#18)', 1]],
  ['train step', 'small', small, 'train', { B: 4, T: 512, steps: quick ? 1 : 2 }, ['train-small-b4', 'training step, small B4 T512, ≥ 1.0× PyTorch eager (#18)', 1]],
  ['prefill', 'small', small, 'prefill', { B: 1, T: 256, steps: quick ? 1 : 3 }, ['prefill-small', 'prefill, small B1 T256, ≥ 1.0× PyTorch eager (#18)', 1]],
  ['decode', 'small', small, 'decode', { B: 1, T: 64, steps: quick ? 4 : 16 }, ['decode-small-b1', 'decode batch 1, small, ≥ PyTorch eager (#4, #8)', 1]],
  ['decode', 'small', small, 'decode', { B: 8, T: 64, steps: quick ? 4 : 16 }, ['decode-small-b8', 'decode batch 8, small, ≥ 1.5× PyTorch eager and clearly above batch 1 (#18)', 1.5]],
  ['decode (bf16 weights; torch f32)', '8B-shaped layer', layer8b, 'decode', { B: 1, T: 16, steps: quick ? 2 : 8, bf16: true }, ['decode-8b-layer', 'decode batch 1, 8B-shaped layer with bf16 weights, ≥ PyTorch eager (#4, #8)', 1]],
];

const rows = [];
const cpu = cpuDescription();
const loadStart = os.loadavg()[0];
console.log(`CPU: ${cpu}; Node ${process.version}; 1-minute load average ${loadStart.toFixed(1)}${cpuTime ? '; process CPU time at 1 thread' : ''}`);
for (const [what, name, config, mode, opts, record] of cases) {
  if (only && !only.test(`${what} ${name} ${opts.B} ${opts.T}`)) continue;
  // Ours likewise at 1 and 2 GEMM threads, best of the two.
  const o = THREADS.map((threads) => { setGemmThreads(threads); return { ...ours(mode, config, opts), threads }; })
    .reduce((a, b) => (a.tokens_per_s >= b.tokens_per_s ? a : b));
  const t = torch(mode, config, opts);
  const row = { what, name, B: opts.B, T: opts.T, ours: o, torch: t, ratio: o.tokens_per_s / t.tokens_per_s, record };
  rows.push(row);
  console.log(`${what.padEnd(34)} ${name.padEnd(16)} ours ${o.tokens_per_s.toFixed(1).padStart(9)} tok/s  torch ${t.tokens_per_s.toFixed(1).padStart(9)} tok/s  ratio ${row.ratio.toFixed(2)}  (ms/step ${(o.seconds * 1000).toFixed(1)} vs ${(t.seconds * 1000).toFixed(1)})`);
}

if (write) {
  const clock = cpuTime ? 'process CPU time, one thread' : THREADS.length > 1 ? 'wall, best of 1 and 2 threads each' : `wall, ${THREADS[0]} threads each`;
  console.log(`wrote ${writeRecords('model', rows.map((r) => ({
    id: r.record[0],
    target: r.record[1],
    ...(r.record[2] !== null ? { status: r.ratio >= r.record[2] ? 'met' : 'not met' } : {}),
    figure: `${r.ours.tokens_per_s.toFixed(1)} tok/s against PyTorch ${r.torch.tokens_per_s.toFixed(1)} (${clock}; threads ${r.ours.threads} / ${r.torch.threads})`,
    ratio: `${r.ratio.toFixed(2)}×`,
    load: loadRange(loadStart),
  })))}`);
}
process.exit(0);
