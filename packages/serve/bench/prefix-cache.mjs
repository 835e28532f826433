// Benchmark: time to the first token of a second chat turn with a ≈2,000-token history, with and
// without the prefix cache, interleaved in one run.
//
//   npx turbo run build --filter=@apertus/serve && node packages/serve/bench/prefix-cache.mjs [--write] [--quick]
//       [--history 2000] [--reps 3] [--preset small]
//
// Model: the `small` preset (12 layers, hidden 768) with random weights and a BPE vocabulary
// trained here (so prefill dominates, not the LM head), served by the engine's scheduler in this
// process, rendered with the chat template as `apertus-chat` does. A conversation of earlier turns
// is grown to ≈ --history tokens; turn 1 asks one more question and gets a 16-token greedy reply;
// turn 2 (history + question + reply + a new question) is timed from submission to its first token.
// Per repetition, interleaved: (a) without the cache: a fresh scheduler prefills all of turn 2;
// (b) with it: a fresh scheduler with a prefix cache runs turn 1 (not timed), then turn 2 reuses
// its KV. Ratio = median (a) / median (b) (> 1: the cache is faster). Prints the CPU (lscpu) and
// the load average; with --write the figure goes to tooling/bench/results/prefix-cache.json (then
// `npm run bench:page`).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cpuDescription, loadRange, writeRecords } from '@apertus/bench';
import { loadServedModel, Scheduler, ServerMetrics } from '@apertus/serve/engine';
import { CORPUS, makeCheckpoint } from './checkpoint.mjs';

const argv = process.argv.slice(2);
const opt = (name, d) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : d;
};
const quick = argv.includes('--quick');
const HISTORY = Number(opt('history', 2000));
const REPS = Number(opt('reps', quick ? 1 : 3));
const PRESET = opt('preset', 'small');
const REPLY_TOKENS = 16;

/** Run one greedy chat request; resolves with its reply text and the seconds to its first token. */
function ask(scheduler, prompt, maxTokens) {
  const t0 = performance.now();
  let first = 0, text = '';
  return new Promise((resolve, reject) => {
    scheduler.submit({ prompt, maxTokens, sampling: { temperature: 0 }, stopTokenIds: [], mode: 'chat', logprobs: 0 }, (e) => {
      if (e.type === 'logprob' && first === 0) first = performance.now();
      else if (e.type === 'text' && e.channel === 'content') text += e.text;
      else if (e.type === 'done') resolve({ text, ttft: (first - t0) / 1000 });
      else if (e.type === 'error') reject(e.error);
    });
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-prefix-bench-'));
try {
  const dir = path.join(tmp, `bench-${PRESET}`);
  makeCheckpoint(dir, PRESET);
  const served = await loadServedModel(dir);
  const encode = (messages) => served.chat.encode(messages, { addGenerationPrompt: true });
  // Earlier turns up to ≈ HISTORY tokens.
  const history = [];
  for (let i = 0; encode(history).length < HISTORY; i++) {
    history.push({ role: 'user', content: CORPUS[i % CORPUS.length] }, { role: 'assistant', content: CORPUS[(i + 3) % CORPUS.length] });
  }
  const q1 = [...history, { role: 'user', content: 'What is the capital of Switzerland?' }];
  const turn1 = encode(q1);
  const { text: reply } = await ask(new Scheduler(served), turn1, REPLY_TOKENS);
  const turn2 = encode([...q1, { role: 'assistant', content: reply }, { role: 'user', content: 'And which other cities are there?' }]);
  const loadBefore = os.loadavg();
  const cold = [], warm = [];
  let reused = 0;
  for (let r = 0; r < REPS; r++) {
    cold.push((await ask(new Scheduler(served), turn2, 1)).ttft);
    const metrics = new ServerMetrics();
    const cached = new Scheduler(served, { prefixCacheBytes: 2 ** 31, metrics });
    await ask(cached, turn1, REPLY_TOKENS);
    warm.push((await ask(cached, turn2, 1)).ttft);
    reused = metrics.prefixCacheReusedTokens.get();
  }
  const loadAfter = os.loadavg();
  const ratio = median(cold) / median(warm);
  const ms = (x) => (x * 1000).toFixed(0);
  const md = [
    '# Prefix cache: time to first token of a second chat turn',
    '',
    `Command: \`node packages/serve/bench/prefix-cache.mjs --write${quick ? ' --quick' : ''}\` (built packages; ${REPS} interleaved repetitions, medians).`,
    `Model: \`${PRESET}\` preset, random weights, vocabulary ${served.model.config.vocab_size}; turn 1 ${turn1.length} prompt tokens (history ${encode(history).length}) + a ${REPLY_TOKENS}-token reply; turn 2 ${turn2.length} prompt tokens, ${reused} of them reused from the prefix cache.`,
    `CPU: ${cpuDescription()}; Node ${process.version}.`,
    `Load average (1/5/15 min): ${loadBefore.map((x) => x.toFixed(2)).join(' ')} before, ${loadAfter.map((x) => x.toFixed(2)).join(' ')} after.`,
    '',
    '| turn 2, first token | without prefix cache | with prefix cache | ratio |',
    '|---|---:|---:|---:|',
    `| median ms (runs: ${cold.map(ms).join(', ')} / ${warm.map(ms).join(', ')}) | ${ms(median(cold))} | ${ms(median(warm))} | ${ratio.toFixed(1)}× |`,
    '',
  ].join('\n');
  process.stdout.write(md);
  if (argv.includes('--write')) {
    console.log(`wrote ${writeRecords('prefix-cache', [{
      id: 'prefix-cache-ttft',
      target: 'second chat turn with a 2,000-token history: first token ≥ 5× sooner with the prefix cache (#14)',
      status: ratio >= 5 ? 'met' : 'not met',
      figure: `${median(cold).toFixed(1)} s → ${median(warm).toFixed(1)} s (${PRESET}, ${reused} of ${turn2.length} prompt tokens reused)`,
      ratio: `${ratio.toFixed(1)}×`,
      load: loadRange(loadBefore[0], loadAfter[0]),
    }])}`);
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
