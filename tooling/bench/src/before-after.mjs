// Two checkouts of the project timed in one run, in turn (A B B A …, each measurement a fresh
// process of that checkout's built packages), so that a restructuring can show it moved no
// figure beyond the noise: the GEMM at an 8B MLP shape, a training step of `tiny` (forward +
// backward, B8 T256), decode of `small` at batch 1 and 8 (f32 weights), and a `small` GGUF decode
// step per type. One thread each; CPU time of the process, best of a few calls. Prints each
// figure's median per checkout and the ratio after/before, with the load average and the CPU.
//   node tooling/bench/src/before-after.mjs --before ../before --after . [--rounds 3] [--write]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i >= 0 ? process.argv[i + 1] : dflt; };
const self = fileURLToPath(import.meta.url);

if (process.argv.includes('--child')) {
  const root = path.resolve(arg('--root')), pkg = (p) => import(path.join(root, 'packages', p, 'dist/index.js'));
  const t = await pkg('tensor'), m = await pkg('model'), g = await pkg('gguf');
  t.setGemmThreads(1);
  const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };
  /** Best CPU ms of `f` over `reps` calls after one warm-up. */
  const time = (f, reps) => { f(); let best = Infinity; for (let r = 0; r < reps; r++) { const s = cpu(); f(); best = Math.min(best, cpu() - s); } return best; };
  const out = {};
  {
    // The GEMM as the model runs it: `linear` on operands in the cpu device memory (read in place).
    const M = 128, N = 4096, K = 4096, x = t.Tensor.zeros([M, K]), w = t.Tensor.zeros([N, K]);
    x.data.fill(0.5);
    w.data.fill(0.25);
    out['GEMM (linear) 128×4096×4096, GFLOPS'] = (2 * M * N * K) / time(() => t.linear(x, w).dispose(), 5) / 1e6;
  }
  {
    const model = m.ApertusModel.init(m.presetConfig('tiny'), 1);
    for (const [, p] of model.parameters()) p.requireGrad(true);
    const ids = t.Tensor.ints(Array.from({ length: 8 * 256 }, (_, i) => (i * 31) % 1000), [8, 256]);
    const targets = t.Tensor.ints(Array.from({ length: 8 * 256 }, (_, i) => (i * 17 + 3) % 1000), [8, 256]);
    out['training step tiny B8 T256 (forward + backward), tok/s'] = 2048 / time(() => t.tidy(() => { t.backward(model.loss(ids, targets)); }), 2) * 1e3;
  }
  const small = m.ApertusModel.init(m.presetConfig('small'), 2);
  for (const B of [1, 8]) {
    const caches = Array.from({ length: B }, () => new m.KVCache(small.config, 160));
    m.step(small, caches.map((cache, b) => ({ cache, tokens: Array.from({ length: 64 }, (_, i) => 100 + b + i) })));
    let n = 0;
    out[`decode small f32 batch ${B}, tok/s`] = B / time(() => m.step(small, caches.map((cache) => ({ cache, tokens: [200 + n++ % 50] }))), 12) * 1e3;
  }
  for (const type of ['F32', 'BF16', 'Q8_0', 'Q4_K']) {
    const { model } = g.loadGguf(path.join(arg('--files'), `small.${type}.gguf`), { tokenizer: false });
    const cache = new m.KVCache(model.config, 160);
    m.step(model, [{ cache, tokens: Array.from({ length: 64 }, (_, i) => 100 + i) }]);
    let n = 0;
    out[`GGUF decode small ${type}, tok/s`] = 1e3 / time(() => m.step(model, [{ cache, tokens: [300 + n++ % 50] }]), 16);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}

const before = path.resolve(arg('--before', '../before')), after = path.resolve(arg('--after', '.')), rounds = Number(arg('--rounds', 3));
const node = process.execPath, runs = { before: [], after: [] }, loads = [];
// The GGUF files both sides load, written once (by the after side's writer: the same bytes, as its tests check).
const files = fs.mkdtempSync(path.join(os.tmpdir(), 'before-after-'));
{
  const m = await import(path.join(after, 'packages/model/dist/index.js')), g = await import(path.join(after, 'packages/gguf/dist/index.js'));
  const small = m.ApertusModel.init(m.presetConfig('small'), 2);
  for (const type of ['F32', 'BF16', 'Q8_0', 'Q4_K']) g.writeModelGguf(small, path.join(files, `small.${type}.gguf`), { type });
}
try {
  for (let r = 0; r < rounds; r++) {
    // A B, then B A: neither side always runs first.
    const order = [['before', before], ['after', after]];
    for (const [side, root] of r % 2 ? order.reverse() : order) {
      loads.push(os.loadavg()[0]);
      runs[side].push(JSON.parse(execFileSync(node, [self, '--child', '--root', root, '--files', files], { encoding: 'utf8', maxBuffer: 1 << 24 }).trim().split('\n').pop()));
      process.stderr.write(`round ${r + 1}/${rounds}: ${side} done\n`);
    }
  }
} finally {
  fs.rmSync(files, { recursive: true, force: true });
}
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const cpuModel = os.cpus()[0]?.model ?? 'unknown CPU';
const rows = Object.keys(runs.after[0]).map((k) => {
  const b = median(runs.before.map((x) => x[k])), a = median(runs.after.map((x) => x[k]));
  return { figure: k, before: b, after: a, ratio: a / b, spread: [Math.min(...runs.after.map((x) => x[k] / b)), Math.max(...runs.after.map((x) => x[k] / b))] };
});
console.log(`${cpuModel}, ${os.cpus().length} CPUs, load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}, ${rounds} rounds, one thread`);
for (const r of rows) console.log(`${r.figure}: before ${r.before.toFixed(1)}, after ${r.after.toFixed(1)}, ${r.ratio.toFixed(3)}× (rounds ${r.spread.map((x) => x.toFixed(3)).join('–')}×)`);
if (process.argv.includes('--write')) {
  const { cpuDescription, loadRange, renderPage, pageFile, readAllRecords, writeRecords } = await import('@apertus/bench');
  const { writeFileAtomic } = await import('@apertus/atomic-file');
  const slug = (k) => k.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
  // No change beyond the noise: 1.00× lies inside the range of the rounds' after/before ratios.
  const within = (r) => r.spread[0] <= 1 && r.spread[1] >= 1;
  console.log(`wrote ${writeRecords('before-after', rows.map((r) => ({
    id: slug(r.figure.split(',')[0]), target: "no change beyond the noise (1.00× inside the rounds' after/before range)", status: within(r) ? 'met' : 'not met',
    figure: `${r.figure}: ${r.before.toFixed(1)} → ${r.after.toFixed(1)} (medians of ${rounds}; rounds ${r.spread.map((x) => x.toFixed(2)).join('–')}×)`, ratio: `${r.ratio.toFixed(3)}×`,
    machine: cpuDescription(), load: loadRange(Math.min(...loads), Math.max(...loads)),
  })))}`);
  writeFileAtomic(pageFile, renderPage(readAllRecords()));
}
