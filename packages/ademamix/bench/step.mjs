// Benchmark: @apertus/ademamix (built dist) optimizer step against a plain loop in the same run.
//
//   cd packages/ademamix && npx tsup && node bench/step.mjs [--write] [--quick]
//
// Ours: AdEMAMix.step() / AdamW.step() on one 1M-element parameter — torch-exact rounding (every
// op rounded to the parameter's precision, fused multiply-adds emulated exactly, correctly
// rounded β^t). Peer: the same update written as a plain JavaScript loop in double precision
// (unfused, results stored to the typed array) — what a port without bit-exactness costs.
// Ratio = peer time / our time (< 1: the exact rounding costs that factor).
// With --write, the figures go to tooling/bench/results/ademamix.json (then `npm run bench:page`).
import * as os from 'node:os';
import { AdamW, AdEMAMix } from '@apertus/ademamix';
import { loadAverage, loadRange, writeRecords } from '@apertus/bench';

const loadStart = loadAverage();
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const reps = quick ? 3 : 11;
const n = 1 << 20;

function median(fn) {
  for (let i = 0; i < 2; i++) fn();
  const times = [];
  for (let i = 0; i < reps; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

function param(Ctor) {
  const data = new Ctor(n);
  const grad = new Ctor(n);
  for (let i = 0; i < n; i++) {
    data[i] = Math.sin(i) * 0.02;
    grad[i] = Math.cos(i * 1.7) * 1e-3;
  }
  return { shape: [1024, 1024], data, grad: { data: grad } };
}

function plainAdemamix(Ctor) {
  const p = param(Ctor);
  const m1 = new Ctor(n), m2 = new Ctor(n), nu = new Ctor(n);
  let t = 0;
  return () => {
    t++;
    const b1 = 0.9, b2 = 0.999, b3 = 0.9999, alpha = 8, eps = 1e-8, wd = 0.1, lr = 1e-4;
    const bc1 = 1 - b1 ** t, sbc2 = Math.sqrt(1 - b2 ** t);
    const d = p.data, g = p.grad.data;
    for (let i = 0; i < n; i++) {
      const gi = g[i];
      const a = (m1[i] = b1 * m1[i] + (1 - b1) * gi);
      const s = (m2[i] = b3 * m2[i] + (1 - b3) * gi);
      const v = (nu[i] = b2 * nu[i] + (1 - b2) * gi * gi);
      d[i] = d[i] - lr * ((a / bc1 + alpha * s) / (Math.sqrt(v) / sbc2 + eps) + wd * d[i]);
    }
  };
}

function plainAdamw(Ctor) {
  const p = param(Ctor);
  const m = new Ctor(n), v = new Ctor(n);
  let t = 0;
  return () => {
    t++;
    const b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1, lr = 1e-4;
    const ss = lr / (1 - b1 ** t), sbc2 = Math.sqrt(1 - b2 ** t);
    const d = p.data, g = p.grad.data;
    for (let i = 0; i < n; i++) {
      const gi = g[i];
      const a = (m[i] = b1 * m[i] + (1 - b1) * gi);
      const s = (v[i] = b2 * v[i] + (1 - b2) * gi * gi);
      d[i] = d[i] * (1 - lr * wd) - (ss * a) / (Math.sqrt(s) / sbc2 + eps);
    }
  };
}

const rows = [];
for (const [label, Ctor] of [['float32', Float32Array], ['float64', Float64Array]]) {
  const a = new AdEMAMix([{ params: [['w', param(Ctor)]] }], { lr: 1e-4, alpha: 8, alphaWarmup: 100000, beta3Warmup: 100000, weightDecay: 0.1 });
  const ours = median(() => a.step());
  const peer = median(plainAdemamix(Ctor));
  rows.push({ name: `AdEMAMix step, 1M ${label}`, ours, peer });
  const w = new AdamW([{ params: [['w', param(Ctor)]] }], { lr: 1e-4, weightDecay: 0.1 });
  const oursW = median(() => w.step());
  const peerW = median(plainAdamw(Ctor));
  rows.push({ name: `AdamW step, 1M ${label}`, ours: oursW, peer: peerW });
  if (label !== 'float32') continue;
  // arithmetic: 'fast' (double precision per element, within 1e-6 of torch-exact).
  const af = new AdEMAMix([{ params: [['w', param(Ctor)]] }], { lr: 1e-4, alpha: 8, alphaWarmup: 100000, beta3Warmup: 100000, weightDecay: 0.1, arithmetic: 'fast' });
  rows.push({ name: `AdEMAMix fast step, 1M ${label}`, ours: median(() => af.step()), peer });
  const wf = new AdamW([{ params: [['w', param(Ctor)]] }], { lr: 1e-4, weightDecay: 0.1, arithmetic: 'fast' });
  rows.push({ name: `AdamW fast step, 1M ${label}`, ours: median(() => wf.step()), peer: peerW });
}
console.log(`CPU ${os.cpus()[0]?.model ?? 'cpu'}; Node ${process.version}; 1-minute load average ${os.loadavg()[0].toFixed(1)}`);
for (const r of rows) console.log(`${r.name.padEnd(33)} ours ${r.ours.toFixed(2).padStart(8)} ms | plain loop ${r.peer.toFixed(2).padStart(8)} ms | ratio ${(r.peer / r.ours).toFixed(2)}`);

if (argv.includes('--write')) {
  const record = (id, r, peer) => ({ id, target: `${r.name.replace(/, 1M (float\d+)/, ', 1M $1 parameters')}, torch-exact rounding`, figure: `${r.ours.toFixed(2)} ms against ${r.peer.toFixed(2)} ms for ${peer}`, ratio: `${(r.peer / r.ours).toFixed(2)}×`, load: loadRange(loadStart) });
  const loop = 'a plain double loop';
  console.log(`wrote ${writeRecords('ademamix', [record('ademamix-f32', rows[0], loop), record('adamw-f32', rows[1], loop), record('ademamix-f64', rows[4], loop)])}`);
}
