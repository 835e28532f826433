// Prefill and decode tokens/s on one thread: our GGUF inference vs llama.cpp (node-llama-cpp
// 3.22.1, its prebuilt CPU binary) on the same file, for F32, BF16, Q8_0 and Q4_K.
//   node packages/gguf/bench/speed.mjs [--quick] [--write]
// Each case writes a random-weight model of the preset as GGUF, then times both sides back to back
// (ours first), so both see the same machine load. Prints a markdown table; --write puts it in
// tooling/bench/results/gguf.md.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApertusModel, KVCache, presetConfig, step } from '@apertus/model';
import { setGemmThreads } from '@apertus/tensor';
import { loadGguf, writeModelGguf } from '@apertus/gguf';
import { buildApertusTokenizerConfig, buildApertusTokenizerJson } from '@apertus/tokenizer';
import { getLlama } from 'node-llama-cpp';

const here = path.dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
const PREFILL = quick ? 32 : 128, DECODE = quick ? 8 : 32;
const presets = [['small', presetConfig('small')]];
const types = ['F32', 'BF16', 'Q8_0', 'Q4_K'];
setGemmThreads(1);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-bench-'));
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const prompt = Array.from({ length: PREFILL }, (_, i) => 1000 + ((i * 37) % 20000));
const rows = [];

function ours(file) {
  const { model } = loadGguf(file, { tokenizer: false });
  const cache = new KVCache(model.config, PREFILL + DECODE + 1);
  let t = performance.now();
  let logits = step(model, [{ cache, tokens: prompt }]);
  const prefill = PREFILL / ((performance.now() - t) / 1000);
  t = performance.now();
  for (let i = 0; i < DECODE; i++) {
    let best = 0;
    for (let j = 1; j < logits.length; j++) if (logits[j] > logits[best]) best = j;
    logits = step(model, [{ cache, tokens: [best] }]);
  }
  return { prefill, decode: DECODE / ((performance.now() - t) / 1000) };
}

async function theirs(file) {
  const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  const context = await model.createContext({ contextSize: 512, batchSize: PREFILL, threads: 1 });
  const seq = context.getSequence();
  let t = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(prompt);
  const prefill = PREFILL / ((performance.now() - t) / 1000);
  t = performance.now();
  let n = 0;
  for await (const _ of seq.evaluate([1001], { temperature: 0 })) if (++n === DECODE) break;
  const decode = DECODE / ((performance.now() - t) / 1000);
  await context.dispose();
  await model.dispose();
  return { prefill, decode };
}

for (const [name, config] of presets) {
  const source = ApertusModel.init(config, 0);
  for (const type of types) {
    const file = path.join(tmp, `${name}.${type}.gguf`);
    // llama.cpp needs a vocabulary: the Apertus layout without merges (ids past it are padding).
    writeModelGguf(source, file, { type, tokenizer: { json: buildApertusTokenizerJson({ merges: [] }), config: buildApertusTokenizerConfig() } });
    const load = os.loadavg()[0];
    const a = ours(file), b = await theirs(file);
    rows.push(`| ${name} | ${type} | ${a.prefill.toFixed(1)} | ${b.prefill.toFixed(1)} | ${(a.prefill / b.prefill).toFixed(2)}× | ${a.decode.toFixed(2)} | ${b.decode.toFixed(2)} | ${(a.decode / b.decode).toFixed(2)}× | ${load.toFixed(1)} |`);
    console.log(rows.at(-1));
    fs.rmSync(file);
  }
}
await llama.dispose();
fs.rmSync(tmp, { recursive: true, force: true });

const table = [
  `# GGUF inference: ours vs llama.cpp (node-llama-cpp 3.22.1), one thread`,
  '',
  `Command: \`node packages/gguf/bench/speed.mjs --write${quick ? ' --quick' : ''}\` (after \`npm run build\`). Random-weight models written`,
  `as GGUF by \`writeModelGguf\`; prefill of ${PREFILL} tokens, then ${DECODE} greedy decode steps; both sides on`,
  'one thread, back to back on the same file. llama.cpp runs with its defaults (f16 KV cache).',
  `Machine: ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores, shared with other jobs (load average in the table).`,
  '',
  '| model | type | prefill tok/s (ours) | prefill tok/s (llama.cpp) | ratio | decode tok/s (ours) | decode tok/s (llama.cpp) | ratio | load avg |',
  '|---|---|---|---|---|---|---|---|---|',
  ...rows,
  '',
].join('\n');
console.log('\n' + table);
if (process.argv.includes('--write')) fs.writeFileSync(path.join(here, '../../../tooling/bench/results/gguf.md'), table);
