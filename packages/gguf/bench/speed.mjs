// Prefill and decode tokens/s on one thread: our GGUF inference vs llama.cpp (node-llama-cpp
// 3.22.1, its prebuilt CPU binary) on the same file, for F32, BF16, Q8_0 and Q4_K, plus our decode
// at batch 8 (eight sequences per step: a GEMM of 8 rows) against our batch 1.
//   node packages/gguf/bench/speed.mjs [--quick] [--write] [--cpu-time] [--presets small,0.5b] [--types F32,Q4_K] [--rounds 3] [--batch 8]
// (--batch 0 leaves the batched decode out).
// Each case writes a random-weight model of the preset as GGUF and loads it on both sides once;
// a first round, left out of the ratios, warms both sides (ours: the cpu device memory grows to hold
// a prefill's activations, fresh pages; its prefill tokens/s are printed as "first prefill"), then
// rounds alternate ours and theirs (prefill, then greedy decode) so both see the same machine
// load, and each ratio is the median over rounds of ours ÷ theirs in the same round. Prints the
// CPU (lscpu model and SIMD flags), the load average per case and a markdown table; --write puts
// each case's figures into tooling/bench/results/gguf.json (then `npm run bench:page`).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApertusModel, KVCache, presetConfig, step } from '@apertus/model';
import { setGemmThreads } from '@apertus/tensor';
import { loadGguf, writeModelGguf } from '@apertus/gguf';
import { buildApertusTokenizerConfig, buildApertusTokenizerJson } from '@apertus/tokenizer';
import { cpuDescription, writeRecords } from '@apertus/bench';
import { getLlama } from 'node-llama-cpp';

const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i >= 0 ? process.argv[i + 1] : dflt; };
const quick = process.argv.includes('--quick');
const PREFILL = quick ? 32 : 128, DECODE = quick ? 8 : 32, BATCH = Number(arg('--batch', 8)), ROUNDS = Number(arg('--rounds', quick ? 1 : 3));
/** `small` and a ≈0.5B configuration (the small preset widened and deepened; 32k vocabulary). */
const PRESETS = {
  small: presetConfig('small'),
  '0.5b': presetConfig('small', { hidden_size: 1280, intermediate_size: 5120, num_hidden_layers: 24, num_attention_heads: 20, num_key_value_heads: 4, head_dim: 64 }),
};
const presets = arg('--presets', 'small,0.5b').split(',');
const types = arg('--types', 'F32,BF16,Q8_0,Q4_K').split(',');
setGemmThreads(1);

const median = (v) => { const s = [...v].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const argmax = (l, V, i) => { let best = 0; for (let j = 1; j < V; j++) if (l[i * V + j] > l[i * V + best]) best = j; return best; };

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-bench-'));
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const prompt = Array.from({ length: PREFILL }, (_, i) => 1000 + ((i * 37) % 20000));
const rows = [];
const records = [];
/** Seconds of CPU time this process has used (both sides run in it: ours on the main thread, llama.cpp on its one thread). */
const cpuNow = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
/** Wall-clock seconds, or with --cpu-time this process's CPU seconds (steadier on a machine shared with other jobs). */
const clock = process.argv.includes('--cpu-time') ? cpuNow : () => performance.now() / 1000;

/** Our prefill and decode tokens/s for `batch` sequences (each the same prompt, offset ids). */
function ours(model, batch) {
  const V = model.config.vocab_size;
  const seqs = Array.from({ length: batch }, (_, b) => ({ cache: new KVCache(model.config, PREFILL + DECODE + 1), tokens: prompt.map((t) => t + b) }));
  let t = clock();
  let logits = step(model, seqs);
  const prefill = (batch * PREFILL) / (clock() - t);
  t = clock();
  for (let i = 0; i < DECODE; i++) logits = step(model, seqs.map((s, b) => ({ cache: s.cache, tokens: [argmax(logits, V, b)] })));
  return { prefill, decode: (batch * DECODE) / (clock() - t) };
}

async function theirs(model) {
  const context = await model.createContext({ contextSize: 512, batchSize: PREFILL, threads: 1 });
  const seq = context.getSequence();
  let t = clock();
  await seq.evaluateWithoutGeneratingNewTokens(prompt);
  const prefill = PREFILL / (clock() - t);
  t = clock();
  let n = 0;
  for await (const _ of seq.evaluate([1001], { temperature: 0 })) if (++n === DECODE) break;
  const decode = DECODE / (clock() - t);
  await context.dispose();
  return { prefill, decode };
}

const machine = cpuDescription();
console.log(`CPU: ${machine}`);
for (const name of presets) {
  const config = PRESETS[name];
  const source = ApertusModel.init(config, 0);
  for (const type of types) {
    const file = path.join(tmp, `${name}.${type}.gguf`);
    // llama.cpp needs a vocabulary: the Apertus layout without merges (ids past it are padding).
    writeModelGguf(source, file, { type, tokenizer: { json: buildApertusTokenizerJson({ merges: [] }), config: buildApertusTokenizerConfig() } });
    const { model } = loadGguf(file, { tokenizer: false });
    const peer = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
    const load = [os.loadavg()[0]];
    const r = { pre: [], dec: [], a: [], b: [], b8: [] };
    // The first step of a process (or after a larger one) grows the device memory: fresh pages.
    const first = { a: ours(model, 1), b: await theirs(peer) };
    for (let round = 0; round < ROUNDS; round++) {
      const a = ours(model, 1), b = await theirs(peer);
      // Batch 8 once per case (its prefill of 8 prompts is the slow part).
      if (round === 0 && BATCH > 0) r.b8.push(ours(model, BATCH).decode);
      r.a.push(a); r.b.push(b);
      r.pre.push(a.prefill / b.prefill); r.dec.push(a.decode / b.decode);
      load.push(os.loadavg()[0]);
    }
    await peer.dispose();
    const m = (k, side) => median(r[side].map((x) => x[k]));
    const dec1 = m('decode', 'a');
    rows.push(`| ${name} | ${type} | ${m('prefill', 'a').toFixed(1)} | ${m('prefill', 'b').toFixed(1)} | ${median(r.pre).toFixed(2)}× | ${dec1.toFixed(2)} | ${m('decode', 'b').toFixed(2)} | ${median(r.dec).toFixed(2)}× | ${r.b8.length ? `${median(r.b8).toFixed(1)} (${(median(r.b8) / dec1).toFixed(1)}×)` : '–'} | ${first.a.prefill.toFixed(1)} / ${first.b.prefill.toFixed(1)} | ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)} |`);
    console.log(rows.at(-1));
    // The targets of #14: decode ≥ 1.0× llama.cpp at F32, ≥ 0.8× at the other types; prefill ≥ 0.8×.
    const want = type === 'F32' ? 1 : 0.8, met = [median(r.dec) >= want, median(r.pre) >= 0.8].filter(Boolean).length;
    records.push({
      id: `gguf-${name}-${type.toLowerCase().replace('_', '')}`,
      target: `GGUF ${type} ${name}: decode ≥ ${want.toFixed(1)}×, prefill ≥ 0.8× llama.cpp, one thread (#14)`,
      status: ['not met', 'partly met', 'met'][met],
      figure: `decode ${dec1.toFixed(2)} tok/s (llama.cpp ${m('decode', 'b').toFixed(2)}), prefill ${m('prefill', 'a').toFixed(1)} tok/s (${m('prefill', 'b').toFixed(1)})${clock === cpuNow ? ' (CPU time)' : ''}`,
      ratio: `decode ${median(r.dec).toFixed(2)}×, prefill ${median(r.pre).toFixed(2)}×`,
      load: `${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)}`,
    });
    fs.rmSync(file);
  }
}
await llama.dispose();
fs.rmSync(tmp, { recursive: true, force: true });

const table = [
  `# GGUF inference: ours vs llama.cpp (node-llama-cpp 3.22.1), one thread`,
  '',
  `Command: \`node packages/gguf/bench/speed.mjs ${process.argv.slice(2).join(' ')}\` (after \`npm run build\`). Random-weight models written`,
  `as GGUF by \`writeModelGguf\` (\`small\`, and \`0.5b\`: hidden 1280, FFN 5120, 24 layers, 20 heads, 4 KV heads, 32k vocabulary);`,
  `prefill of ${PREFILL} tokens, then ${DECODE} greedy decode steps; both sides on one thread, loaded once, one warm-up round, then ${ROUNDS} interleaved round(s)`,
  '(ours, theirs; our batch 8 in the first); ratios are medians over rounds of ours ÷ theirs in the same round. llama.cpp runs with its',
  'defaults (f16 KV cache). Decode B8: our tokens/s with 8 sequences per step (and its ratio to our batch 1). First prefill: the',
  "warm-up round's prefill tok/s, ours / llama.cpp (both slower than later rounds; ours touches fresh pages as the cpu device memory grows to hold a prefill's activations).",
  `Times: ${clock === cpuNow ? 'CPU seconds of the process (--cpu-time), not wall clock' : 'wall clock'}.`,
  `CPU: ${machine} (load average over the case in the table).`,
  '',
  '| model | type | prefill tok/s (ours) | prefill tok/s (llama.cpp) | ratio | decode tok/s (ours) | decode tok/s (llama.cpp) | ratio | decode B8 tok/s (ours) | first prefill tok/s (ours / llama.cpp) | load avg |',
  '|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows,
  '',
].join('\n');
console.log('\n' + table);
if (process.argv.includes('--write')) console.log(`wrote ${writeRecords('gguf', records)}`);
