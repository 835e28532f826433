// Benchmark: apertus-serve throughput with the prefix cache on against --no-prefix-cache, under
// load, interleaved in one run.
//
//   npx turbo run build --filter=@apertus/serve && node packages/serve/bench/prefix-cache-load.mjs [--write]
//       [--clients 32] [--duration 180] [--segment 15] [--max-tokens 32] [--batch 8] [--cache-mib 1024]
//
// Two servers (the built `apertus-serve` binary, each its own process, the same `tiny` checkpoint
// as bench/load.mjs): A with `--prefix-cache <cache-mib>` (1024 MiB: the old default, large enough
// that the cache only grows during the run), B with `--no-prefix-cache`. N clients stream chat
// completions back to back, each message unique (client, request number, a corpus line), so only
// the chat template's system prompt is shared and the cache fills with the rest as it did when
// throughput fell with its size. The clients drive A for one segment, then B for one, alternating
// until each had `duration` seconds; A's cache keeps what it stored across its segments. Reported
// per server: generated tokens/s overall and per segment (the trend as A's cache grows), A's
// prefix-cache bytes and hit rate at the end, the ratio A / B (≥ 0.9 is the bar), the CPU and
// the load average. With --write the figure goes to tooling/bench/results/prefix-cache-load.json.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CORPUS, makeCheckpoint } from './checkpoint.mjs';
import { startServer } from './server.mjs';
import { cpuDescription, loadRange, writeRecords } from '@apertus/bench';

const argv = process.argv.slice(2);
const arg = (name, d) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : d;
};
const CLIENTS = arg('clients', 32);
const DURATION = arg('duration', 180) * 1000;
const SEGMENT = arg('segment', 15) * 1000;
const MAX_TOKENS = arg('max-tokens', 32);
const BATCH = arg('batch', 8);
const CACHE_MIB = arg('cache-mib', 1024);


let sequence = 0;

/** N clients streaming chat completions to `url` for `ms`; generated tokens and seconds. */
async function segment(url, ms) {
  const deadline = Date.now() + ms;
  let tokens = 0;
  async function client(c) {
    while (Date.now() < deadline) {
      const k = sequence++;
      const content = `Question ${k} from client ${c}: ${CORPUS[k % CORPUS.length]}`;
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: MAX_TOKENS, temperature: 0, stream: true, stream_options: { include_usage: true } }),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
      const text = await res.text();
      const usage = /"usage":\{"prompt_tokens":\d+,"completion_tokens":(\d+)/.exec(text);
      if (!usage) throw new Error(`no usage in ${text.slice(-300)}`);
      tokens += Number(usage[1]);
    }
  }
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
  return { tokens, seconds: (performance.now() - t0) / 1000 };
}

async function metrics(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const get = (name) => Number(new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { bytes: get('apertus_prefix_cache_bytes'), hit: get('apertus_prefix_cache_lookups_total{result="hit"}'), miss: get('apertus_prefix_cache_lookups_total{result="miss"}'), reused: get('apertus_prefix_cache_reused_tokens_total'), prompt: get('apertus_prompt_tokens_total') };
}

const loadBefore = os.loadavg();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-serve-bench-'));
const dir = path.join(tmp, 'bench-tiny');
makeCheckpoint(dir);
const common = ['--max-batch', String(BATCH), '--max-queue', String(CLIENTS * 2)];
const cached = await startServer(dir, [...common, '--prefix-cache', String(CACHE_MIB)]);
const plain = await startServer(dir, [...common, '--no-prefix-cache']);
const runs = { cached: [], plain: [] };
for (let spent = 0; spent < DURATION; spent += SEGMENT) {
  const ms = Math.min(SEGMENT, DURATION - spent);
  runs.cached.push(await segment(cached.url, ms));
  runs.plain.push(await segment(plain.url, ms));
  process.stderr.write(`segment ${runs.cached.length}: cache on ${(runs.cached.at(-1).tokens / runs.cached.at(-1).seconds).toFixed(0)} tok/s, off ${(runs.plain.at(-1).tokens / runs.plain.at(-1).seconds).toFixed(0)} tok/s\n`);
}
const m = await metrics(cached.url);
for (const s of [cached, plain]) {
  s.child.kill('SIGINT');
  await new Promise((r) => s.child.once('exit', r));
}
fs.rmSync(tmp, { recursive: true, force: true });

const total = (xs) => xs.reduce((a, x) => a + x.tokens, 0) / xs.reduce((a, x) => a + x.seconds, 0);
const on = total(runs.cached), off = total(runs.plain);
const series = (xs) => xs.map((x) => (x.tokens / x.seconds).toFixed(0)).join(', ');
const la = (l) => l.map((x) => x.toFixed(1)).join(' / ');
const md = [
  '# @apertus/serve: prefix cache on against off, under load',
  '',
  `Command: \`node packages/serve/bench/prefix-cache-load.mjs --write\` (${CLIENTS} streaming chat clients, ${DURATION / 1000} s per server in ${SEGMENT / 1000}-s segments alternating between the two servers, ${MAX_TOKENS} tokens per reply, greedy, --max-batch ${BATCH}).`,
  `CPU: ${cpuDescription()}, Node ${process.version}. Load average (1 / 5 / 15 min) ${la(loadBefore)} before, ${la(os.loadavg())} after: the machine is shared, so the two servers are compared segment by segment.`,
  `Model: \`tiny\` preset, random bf16 weights (bench/checkpoint.mjs). Every message is unique: only the chat template's system prompt is shared.`,
  '',
  '| Server | Gen. tok/s | Per segment (tok/s) |',
  '|---|---:|---|',
  `| A: --prefix-cache ${CACHE_MIB} | ${on.toFixed(1)} | ${series(runs.cached)} |`,
  `| B: --no-prefix-cache | ${off.toFixed(1)} | ${series(runs.plain)} |`,
  '',
  `Ratio A / B = ${(on / off).toFixed(3)} (≥ 0.9 is the bar). A's cache at the end: ${(m.bytes / 2 ** 20).toFixed(1)} MiB, ${m.hit} hits / ${m.miss} misses (${((100 * m.hit) / Math.max(1, m.hit + m.miss)).toFixed(1)} %), ${m.reused} prompt tokens reused, ${m.prompt} prefilled.`,
  '',
].join('\n');
console.log(md);
if (argv.includes('--write')) {
  console.log(`wrote ${writeRecords('prefix-cache-load', [{
    id: 'prefix-cache-load',
    target: `${CLIENTS} streaming chat clients for ${DURATION / 1000} s, unique messages: the prefix cache on keeps ≥ 0.9× the throughput of --no-prefix-cache (#31)`,
    status: on / off >= 0.9 ? 'met' : 'not met',
    figure: `${on.toFixed(1)} vs ${off.toFixed(1)} generated tok/s (tiny, --max-batch ${BATCH}); cache ${(m.bytes / 2 ** 20).toFixed(1)} MiB at the end, ${((100 * m.hit) / Math.max(1, m.hit + m.miss)).toFixed(1)} % hits`,
    ratio: `${(on / off).toFixed(3)}×`,
    load: loadRange(loadBefore[0]),
  }])}`);
}
