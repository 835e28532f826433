// Where a decode step's time goes, in CPU time of this one thread (steadier than wall clock on a
// shared machine): the whole step, its products (the registry's packedLinear cpu kernel, timed in
// place through a wrapping implementation registered above it), the same
// products replayed alone in the step's order on the real weights (so they stream from memory as
// in a step), each matrix repeated alone (its weights warm in cache), and the rest of the step
// (norms, attention, activation, glue). Bytes of weights read per token ÷ time = the bandwidth.
//   node packages/gguf/bench/decode-profile.mjs [--presets small,0.5b] [--types F32,BF16,Q8_0,Q4_K] [--steps 32] [--context 128]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApertusModel, KVCache, presetConfig, step } from '@apertus/model';
import { packedLinearKernel, setGemmThreads, weightRowBytes } from '@apertus/tensor';
import { defineKernel, implementationOf } from '@apertus/tensor/kernels';
import { loadGguf, writeModelGguf } from '@apertus/gguf';

const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i >= 0 ? process.argv[i + 1] : dflt; };
const PRESETS = {
  small: presetConfig('small'),
  '0.5b': presetConfig('small', { hidden_size: 1280, intermediate_size: 5120, num_hidden_layers: 24, num_attention_heads: 20, num_key_value_heads: 4, head_dim: 64 }),
};
const STEPS = Number(arg('--steps', 32)), CONTEXT = Number(arg('--context', 128));
setGemmThreads(1);
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-profile-'));
const product = implementationOf(packedLinearKernel, 'wasm');
/** While set, every product of a step is timed and recorded (its weight handle) here. */
let timing = null;
defineKernel(packedLinearKernel, {
  device: 'cpu', impl: 'profiled', rank: 100,
  run: (w, x, M, y) => {
    if (timing === null) return product(w, x, M, y);
    const t = cpu();
    product(w, x, M, y);
    timing.ms += cpu() - t;
    timing.calls.push(w);
  },
});
const bytesOf = (w) => w.N * weightRowBytes(w.dtype, w.K);

for (const name of arg('--presets', 'small').split(',')) {
  const config = PRESETS[name], source = ApertusModel.init(config, 0);
  for (const type of arg('--types', 'F32,BF16,Q8_0,Q4_K').split(',')) {
    const file = path.join(tmp, `${name}.${type}.gguf`);
    writeModelGguf(source, file, { type });
    const { model } = loadGguf(file, { tokenizer: false });
    fs.rmSync(file);
    const cache = new KVCache(config, CONTEXT + STEPS + 1);
    step(model, [{ cache, tokens: Array.from({ length: CONTEXT }, (_, i) => 1000 + i) }]);
    // The step, with its products timed in place and recorded in order.
    timing = { ms: 0, calls: [] };
    const t0 = cpu();
    for (let i = 0; i < STEPS; i++) step(model, [{ cache, tokens: [1000 + (i * 7) % 20000] }]);
    const stepMs = (cpu() - t0) / STEPS;
    const { ms: inProducts, calls } = timing;
    timing = null;
    const perStep = calls.slice(0, calls.length / STEPS);
    const bytes = perStep.reduce((a, m) => a + bytesOf(m), 0), macs = perStep.reduce((a, m) => a + m.N * m.K, 0);
    // Replay: the step's products in order, nothing else between them.
    const io = new Map(perStep.map((m) => [m, { x: Float32Array.from({ length: m.K }, (_, k) => Math.sin(k)), y: new Float32Array(m.N) }]));
    const t1 = cpu();
    for (let i = 0; i < STEPS; i++) for (const m of perStep) { const b = io.get(m); product(m, b.x, 1, b.y); }
    const replayMs = (cpu() - t1) / STEPS;
    // Alone: each distinct matrix repeated (warm), summed over the step's calls.
    const alone = new Map();
    for (const m of io.keys()) {
      const b = io.get(m), R = Math.max(3, Math.ceil(2e7 / (m.N * m.K)));
      product(m, b.x, 1, b.y);
      const t = cpu();
      for (let r = 0; r < R; r++) product(m, b.x, 1, b.y);
      alone.set(m, (cpu() - t) / R);
    }
    const aloneMs = perStep.reduce((a, m) => a + alone.get(m), 0);
    const productsMs = inProducts / STEPS, rest = stepMs - productsMs;
    const gbs = (ms) => (bytes / ms / 1e6).toFixed(1), gmac = (ms) => (macs / ms / 1e6).toFixed(1);
    console.log(`${name} ${type}: step ${stepMs.toFixed(2)} ms (${(1000 / stepMs).toFixed(1)} tok/s) = products ${productsMs.toFixed(2)} ms (${gbs(productsMs)} GB/s, ${gmac(productsMs)} GMAC/s) + rest ${rest.toFixed(2)} ms (${(100 * rest / stepMs).toFixed(0)} %); ` +
      `replayed alone in order ${replayMs.toFixed(2)} ms (${gbs(replayMs)} GB/s); each warm ${aloneMs.toFixed(2)} ms (${gbs(aloneMs)} GB/s); ${(bytes / 1e6).toFixed(1)} MB of weights per token; load ${os.loadavg()[0].toFixed(1)}`);
  }
}
fs.rmSync(tmp, { recursive: true, force: true });
