// Prefill and decode tokens/s: our GGUF inference vs llama.cpp (node-llama-cpp 3.22.1, its
// prebuilt CPU binary) on the same file, for F32, BF16, Q8_0 and Q4_K (or any --types: Q6_K and
// the other block formats are written as random blocks), both sides on --threads threads (default
// 1), plus our decode at batch 8 (eight sequences per step) against our batch 1.
//   node packages/gguf/bench/speed.mjs [--quick] [--write] [--cpu-time] [--presets small,0.5b,8b-slice] [--types F32,Q4_K] [--rounds 3] [--batch 8] [--threads 1]
// (--batch 0 leaves the batched decode out; 8b-slice: four layers of the 8B shapes, vocabulary 131072).
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
import { ApertusModel, KVCache, parameterShapes, presetConfig, step } from '@apertus/model';
import { f32ToBf16Bits, f32ToF16Bits, setGemmThreads } from '@apertus/tensor';
import { GGML_TYPES, ggufTensorName, loadGguf, openGgufFile, ropeFactors, tokenizerMetadata, writeGguf, writeModelGguf } from '@apertus/gguf';
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
  '8b-slice': presetConfig('small', { vocab_size: 131072, hidden_size: 4096, intermediate_size: 21504, num_hidden_layers: 4, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 128 }),
};
const presets = arg('--presets', 'small,0.5b').split(',');
const types = arg('--types', 'F32,BF16,Q8_0,Q4_K').split(',');
const THREADS = Number(arg('--threads', 1));
setGemmThreads(THREADS);

const median = (v) => { const s = [...v].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const argmax = (l, V, i) => { let best = 0; for (let j = 1; j < V; j++) if (l[i * V + j] > l[i * V + best]) best = j; return best; };

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-bench-'));
const tokenizer = { json: buildApertusTokenizerJson({ merges: [] }), config: buildApertusTokenizerConfig() };

/** f16 fields (byte offset, size) of the random blocks of each type: weights about 0.05. */
const SCALES = {
  Q4_0: [[0, 0.02]], Q4_1: [[0, 0.02], [2, -0.15]], Q5_0: [[0, 0.01]], Q5_1: [[0, 0.01], [2, -0.155]], Q8_0: [[0, 7e-4]], IQ4_NL: [[0, 1.5e-3]],
  Q2_K: [[80, 0.01], [82, 0.005]], Q3_K: [[108, 2e-3]], Q4_K: [[0, 3e-4], [2, 1e-3]], Q5_K: [[0, 1.5e-4], [2, 1e-3]], Q6_K: [[208, 5e-5]], IQ4_XS: [[0, 8e-5]],
};

/**
 * A GGUF of `config` with every matrix as random blocks of `type` (F32/BF16: normal values × 0.05),
 * norms 1, without building the float model (the 8B slice's is 7.6 GB): the metadata of a
 * one-layer-narrow model written by writeModelGguf, with the dimensions and vocabulary of `config`.
 */
function writeRandomGguf(config, type, file) {
  const template = path.join(tmp, 'template.gguf');
  writeModelGguf(ApertusModel.init(presetConfig('tiny', { num_hidden_layers: config.num_hidden_layers }), 0), template, { type: 'F32', tokenizer });
  const f = openGgufFile(template), keep = [];
  const dims = { block_count: config.num_hidden_layers, embedding_length: config.hidden_size, feed_forward_length: config.intermediate_size, 'attention.head_count': config.num_attention_heads,
    'attention.head_count_kv': config.num_key_value_heads, 'attention.key_length': config.head_dim, 'attention.value_length': config.head_dim, vocab_size: config.vocab_size, 'rope.dimension_count': config.head_dim,
    context_length: config.max_position_embeddings, 'rope.freq_base': config.rope_theta, 'attention.layer_norm_rms_epsilon': config.rms_norm_eps };
  for (const [k, v] of f.metadata) {
    if (k.startsWith('tokenizer.')) continue;
    const d = dims[k.slice('apertus.'.length)], t = f.metadataTypes.get(k), m = /^array<(.+)>$/.exec(t);
    keep.push([k, m ? { type: 'array', elem: m[1], value: v } : { type: t, value: d ?? v }]);
  }
  f.close();
  fs.rmSync(template);
  const eos = Array.isArray(config.eos_token_id) ? config.eos_token_id[0] : config.eos_token_id;
  keep.push(...tokenizerMetadata(tokenizer.json, tokenizer.config, config.vocab_size, { bos: config.bos_token_id, eos, pad: config.pad_token_id }));
  let seed = 1;
  const byte = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 24;
  const normal = () => { let u = 0; for (let i = 0; i < 12; i++) u += byte() / 256; return (u - 6) * 0.05; };
  const t = GGML_TYPES[type], tensors = [{ name: 'rope_freqs.weight', type: 'F32', shape: [config.head_dim / 2], data: () => new Uint8Array(ropeFactors(config).buffer) }];
  for (const [hf, shape] of parameterShapes(config)) {
    const name = ggufTensorName(hf);
    if (name === null) continue;
    const n = shape.reduce((a, b) => a * b, 1);
    if (shape.length === 1) { tensors.push({ name, type: 'F32', shape, data: () => new Uint8Array(new Float32Array(n).fill(1).buffer) }); continue; }
    tensors.push({ name, type, shape, data: () => {
      if (type === 'F32') return new Uint8Array(Float32Array.from({ length: n }, normal).buffer);
      if (type === 'BF16') return new Uint8Array(Uint16Array.from({ length: n }, () => f32ToBf16Bits(normal())).buffer);
      const out = new Uint8Array((n / t.blockSize) * t.typeSize);
      for (let i = 0; i < out.length; i++) out[i] = byte();
      for (let o = 0; o < out.length; o += t.typeSize) for (const [at, v] of SCALES[type]) { const h = f32ToF16Bits(v * (0.5 + byte() / 256)); out[o + at] = h & 255; out[o + at + 1] = h >> 8; }
      return out;
    } });
  }
  writeGguf(file, keep, tensors);
}
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const prompt = Array.from({ length: PREFILL }, (_, i) => 1000 + ((i * 37) % 20000));
const rows = [];
const records = [];
/** Seconds of CPU time this process has used (both sides run in it, on their threads). */
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
  const context = await model.createContext({ contextSize: 512, batchSize: PREFILL, threads: THREADS });
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
  // The float model (random init) quantized by writeModelGguf where it can write the type and the model is small; else random blocks.
  const direct = (type) => name !== '8b-slice' && ['F32', 'BF16', 'Q8_0', 'Q4_K'].includes(type);
  const source = types.some(direct) ? ApertusModel.init(config, 0) : null;
  for (const type of types) {
    const file = path.join(tmp, `${name}.${type}.gguf`);
    // llama.cpp needs a vocabulary: the Apertus layout without merges (ids past it are padding).
    if (direct(type)) writeModelGguf(source, file, { type, tokenizer });
    else writeRandomGguf(config, type, file);
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
  `# GGUF inference: ours vs llama.cpp (node-llama-cpp 3.22.1), ${THREADS} thread${THREADS > 1 ? 's' : ''} each`,
  '',
  `Command: \`node packages/gguf/bench/speed.mjs ${process.argv.slice(2).join(' ')}\` (after \`npm run build\`). Random-weight models written`,
  `as GGUF by \`writeModelGguf\` (\`small\`, and \`0.5b\`: hidden 1280, FFN 5120, 24 layers, 20 heads, 4 KV heads, 32k vocabulary; other types and`,
  `\`8b-slice\` — 4 layers of hidden 4096, FFN 21504, 32/8 heads, vocabulary 131072 — as random blocks of the type);`,
  `prefill of ${PREFILL} tokens, then ${DECODE} greedy decode steps; both sides on ${THREADS} thread(s), loaded once, one warm-up round, then ${ROUNDS} interleaved round(s)`,
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
