// Speed of the pretraining app on this machine, with peers measured in the same run:
//   1. the README's default run end to end (wall clock, tokens/s);
//   2. training steps of the default configuration (tiny preset, 8 × 128 tokens, AdEMAMix,
//      Goldfish, clipping) through @apertus/trainer, next to Hugging Face transformers'
//      ApertusForCausalLM on PyTorch (float32, SDPA; the model package's hf_apertus.py: the same
//      model read from an f32 checkpoint of ours, the same tokens and targets, the paper's
//      reference AdEMAMix in torch; no Goldfish mask and no clipping there), each side at 1 and 2
//      threads, interleaved, best kept;
//   3. an atomic training checkpoint (temp dir, fsync, rename, `latest`) next to plain
//      writeFileSync of the same bytes.
//
//   cd apps/pretrain && npx tsup && node bench/run.mjs [--steps N] [--write]
// Needs the built packages (npm run build) and, for the PyTorch peer, the Python peers (`npm run peers`).
// With --write, the figures go to tooling/bench/results/pretrain.json (then `npm run bench:page`).

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AdEMAMix, LrScheduler, constantSchedule } from '@apertus/ademamix';
import { ApertusModel, presetConfig, saveCheckpoint } from '@apertus/model';
import { gemmKernelInfo, setGemmThreads } from '@apertus/tensor';
import { resolvePretrainConfig, runPretraining } from '@apertus/recipes';
import { CheckpointManager, causalLmLoss, collateLm, trainStep, writeTrainingCheckpoint } from '@apertus/trainer';
import { cpuDescription, loadRange, writeRecords } from '@apertus/bench';
import { peerPython } from '@apertus/peers';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const write = process.argv.includes('--write');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-bench-'));
const load = () => os.loadavg()[0].toFixed(1);
const lines = [];
let peerVersions = '';
const say = (s) => {
  console.log(s);
  lines.push(s);
};

// 1. The default run.
const loadBefore = load();
const { config } = resolvePretrainConfig([{ source: 'bench', values: { out: path.join(tmp, 'run'), progress: 'off', ...(arg('--steps') ? { steps: arg('--steps') } : {}) } }]);
let t0 = performance.now();
const result = await runPretraining(config, { log: () => {} });
const wall = (performance.now() - t0) / 1000;
const evals = result.metrics.filter((r) => r.type === 'eval');
const tokens = config.steps * config.microBatchSize * config.seqLength;

// 2. Training steps, ours and transformers'.
const V = 2048;
const modelConfig = presetConfig('tiny', { vocab_size: V });
const model = ApertusModel.init(modelConfig, 28);
const opt = new AdEMAMix(model.parameters(), { lr: 1e-3, alpha: 8, alphaWarmup: 150, beta3Warmup: 150, weightDecay: 0.1 });
const sched = new LrScheduler(constantSchedule(1e-3));
const B = 8;
const T = 128;
const rows = Array.from({ length: B }, (_, b) => {
  const w = Array.from({ length: T + 1 }, (_, i) => 4 + ((i * 7919 + b * 104729) % (V - 4)));
  return { tokens: w.slice(0, T), labels: w.slice(1), lossMask: new Array(T).fill(1), positionIds: w.slice(0, T).map((_, i) => i), documentIds: new Array(T).fill(0) };
});
// The peer reads the same initial weights and the same tokens and targets.
const peerDir = path.join(tmp, 'hf');
saveCheckpoint(model, peerDir, { dtype: 'f32' });
fs.writeFileSync(path.join(peerDir, 'inputs.json'), JSON.stringify({ ids: rows.map((r) => r.tokens), targets: rows.map((r) => r.labels) }));
const THREADS = [1, 2];
const oursBy = [], torchBy = [];
for (const threads of THREADS) {
  setGemmThreads(threads);
  const stepTimes = [];
  for (let i = 0; i < 6; i++) {
    t0 = performance.now();
    const batch = collateLm(rows, { goldfish: { goldfishK: 50, goldfishH: 50 } });
    trainStep({ params: model.parameters(), optimizer: opt, scheduler: sched, microBatches: [batch], weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(model, b, { normalizer: n }), clip: 1 });
    if (i > 0) stepTimes.push((performance.now() - t0) / 1000);
  }
  oursBy.push(median(stepTimes));
  try {
    const args = { mode: 'train', checkpoint: peerDir, inputs: path.join(peerDir, 'inputs.json'), steps: 5, threads, optimizer: 'ademamix', lr: 1e-3, weight_decay: 0.1 };
    const out = execFileSync(peerPython(), [path.join(root, 'packages/model/bench/hf_apertus.py'), JSON.stringify(args)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, OMP_NUM_THREADS: String(threads) } });
    const r = JSON.parse(out.trim().split('\n').pop());
    torchBy.push(r.seconds);
    peerVersions = `transformers ${r.transformers}, torch ${r.torch}`;
  } catch (e) {
    console.error(`transformers peer unavailable: ${e.message.split('\n')[0]}`);
  }
}
const ours = Math.min(...oursBy);
const torchStep = torchBy.length > 0 ? Math.min(...torchBy) : null;
const threadsOf = (xs, x) => THREADS[xs.indexOf(x)];

// 3. Checkpoint: atomic training checkpoint vs plain writes of the same bytes.
const manager = new CheckpointManager(path.join(tmp, 'ckpt'), { keepLast: 1 });
const state = { format: 'apertus-trainer-state', version: 1, step: 1, tokens: 0, samples: 0, scheduler: sched.stateDict(), loader: null, metrics: [], config: null, extra: {} };
const atomic = [];
const plain = [];
for (let i = 1; i <= 5; i++) {
  t0 = performance.now();
  const dir = manager.save(i, (d) => writeTrainingCheckpoint(d, { model, optimizer: opt, state: { ...state, step: i } }));
  atomic.push((performance.now() - t0) / 1000);
  const files = fs.readdirSync(dir).map((f) => [f, fs.readFileSync(path.join(dir, f))]);
  const plainDir = path.join(tmp, `plain-${i}`);
  fs.mkdirSync(plainDir);
  t0 = performance.now();
  for (const [f, bytes] of files) fs.writeFileSync(path.join(plainDir, f), bytes);
  plain.push((performance.now() - t0) / 1000);
}
const bytes = fs.readdirSync(manager.latest().dir).reduce((s, f) => s + fs.statSync(path.join(manager.latest().dir, f)).size, 0);
fs.rmSync(tmp, { recursive: true, force: true });

const fmt = (x, d = 2) => x.toFixed(d);
say(`# apertus-pretrain — speed`);
say('');
say(`Command: \`cd apps/pretrain && npx tsup && node bench/run.mjs${arg('--steps') ? ` --steps ${arg('--steps')}` : ''} --write\` (Node ${process.version}, ${cpuDescription()}, GEMM ${gemmKernelInfo().variant} ${gemmKernelInfo().microTile}; 1-minute load average ${loadBefore} before, ${load()} after — the machine is shared, so figures are pessimistic).`);
say('');
say('| measurement | value |');
say('|---|---:|');
say(`| default run (README command): ${config.steps} steps × ${config.microBatchSize} × ${config.seqLength} tokens, evaluations, samples, ${Math.floor(config.steps / config.checkpointInterval)} checkpoints, final export | ${fmt(wall, 1)} s wall |`);
say(`| default run throughput (all phases) | ${Math.round(tokens / wall)} tokens/s |`);
say(`| default run validation loss | ${fmt(evals[0].valLoss, 3)} → ${fmt(evals[evals.length - 1].valLoss, 3)} |`);
say(`| training step, tiny preset, vocab ${V}, ${B} × ${T}, AdEMAMix + Goldfish + clipping (median of 5, best of 1 and 2 threads: ${threadsOf(oursBy, ours)}) | ${fmt(ours * 1000, 0)} ms (${Math.round((B * T) / ours)} tokens/s) |`);
if (torchStep !== null) {
  say(`| the same model, tokens and AdEMAMix in ${peerVersions} (ApertusForCausalLM, float32, SDPA; best of 1 and 2 threads: ${threadsOf(torchBy, torchStep)}) | ${fmt(torchStep * 1000, 0)} ms (${Math.round((B * T) / torchStep)} tokens/s) |`);
  say(`| ratio ours / transformers tokens/s | ${fmt(torchStep / ours)} |`);
}
say(`| atomic training checkpoint (${(bytes / 1e6).toFixed(1)} MB: f32 weights, optimizer moments, state; fsync + rename + latest) (median of 5) | ${fmt(median(atomic) * 1000, 0)} ms |`);
say(`| plain writeFileSync of the same files (peer) | ${fmt(median(plain) * 1000, 0)} ms |`);
say(`| ratio atomic / plain | ${fmt(median(atomic) / median(plain))} |`);
if (write) {
  const records = [
    { id: 'pretrain-default-run', target: `apertus-pretrain on the defaults (\`npm start\`): ${config.steps} steps × ${config.microBatchSize} × ${config.seqLength} tokens, evaluations, samples, ${Math.floor(config.steps / config.checkpointInterval)} checkpoints, export`, figure: `${fmt(wall, 1)} s wall, ${Math.round(tokens / wall)} tokens/s over all phases` },
    ...(torchStep !== null ? [{ id: 'pretrain-step', target: `training step of the default run (tiny, vocab ${V}, ${B} × ${T}, AdEMAMix + Goldfish + clipping) against the same step in transformers on PyTorch (#8)`, figure: `${fmt(ours * 1000, 0)} ms (${Math.round((B * T) / ours)} tokens/s) against ${fmt(torchStep * 1000, 0)} ms (${peerVersions})`, ratio: `${fmt(torchStep / ours)}×` }] : []),
    { id: 'pretrain-checkpoint', target: `atomic training checkpoint (${(bytes / 1e6).toFixed(1)} MB: f32 weights, optimizer moments, state; fsync + rename + latest)`, figure: `${fmt(median(atomic) * 1000, 0)} ms against ${fmt(median(plain) * 1000, 0)} ms for plain writeFileSync of the same files`, ratio: `${fmt(median(atomic) / median(plain))}× the plain writes` },
  ];
  console.log(`wrote ${writeRecords('pretrain', records.map((r) => ({ ...r, load: loadRange(loadBefore) })))}`);
}
