// Benchmark: apertus-serve under load on loopback (built dist), against peers in the same run.
//
//   cd packages/serve && npx tsup && node bench/load.mjs [--write] [--quick]
//       [--clients 8] [--duration 10] [--max-tokens 32] [--batch 8]
//
// Model: the `tiny` preset (4 layers, hidden 128, ≈1.1M parameters with the bench tokenizer's
// ≈1.4k vocabulary), random weights, bf16 checkpoint, with a BPE tokenizer trained here.
// The server runs as its own process (the real `apertus-serve` binary); N clients in this process
// stream completions back to back for a fixed time (each request: one of 6 prompts, greedy,
// max_tokens fixed, so every request generates exactly max_tokens tokens). Reported:
// throughput (generated tokens/s), request latency, time to first token (first text chunk) and
// inter-token latency (gaps between text chunks) percentiles, peak server RSS.
// Peers, same run: (a) `generate()` from @apertus/model called sequentially in this process on
// the same requests (no HTTP, no batching); (b) the same server with --max-batch 1 (no
// continuous batching). Ratio = our throughput / peer throughput (> 1: ours is faster).
// With --write, the figures go to tooling/bench/results/serve.json (then `npm run bench:page`).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadRange, writeRecords } from '@apertus/bench';
import { generate } from '@apertus/model';
import { makeCheckpoint } from './checkpoint.mjs';
import { startServer } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const arg = (name, d) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : d;
};
const quick = argv.includes('--quick');
const CLIENTS = arg('clients', 8);
const DURATION = arg('duration', quick ? 3 : 10) * 1000;
const MAX_TOKENS = arg('max-tokens', 32);
const BATCH = arg('batch', 8);

const PROMPTS = [
  'Hello',
  'The capital of Switzerland is',
  'Once upon a time there was a small model that',
  'function add(a, b) { return',
  'Grüezi mitenand, wie gaht es?',
  'Numbers: 1 2 3 4 5 6 7 8 9 10 100 1000 2024 2025. Dates like 2025-09-21 are common. Think step by step: first read the question,',
];
function pct(xs, p) {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}


async function rssOf(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) * 1024;
  } catch {
    return NaN;
  }
}

/** CPU seconds (user + system) the process `pid` has used so far, from /proc (Linux; NaN elsewhere). */
function cpuSecondsOf(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
}

/** N clients streaming completions for DURATION ms; returns the figures. */
async function drive(url, pid, expected) {
  const deadline = Date.now() + DURATION;
  const lat = [], ttft = [], itl = [];
  let tokens = 0, requests = 0, wrong = 0;
  let rssPeak = 0;
  const sampler = setInterval(async () => (rssPeak = Math.max(rssPeak, await rssOf(pid))), 100);
  async function client(c) {
    for (let k = 0; Date.now() < deadline; k++) {
      const prompt = PROMPTS[(c + k) % PROMPTS.length];
      const t0 = performance.now();
      const res = await fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'bench-tiny', prompt, max_tokens: MAX_TOKENS, temperature: 0, stream: true, stream_options: { include_usage: true } }),
      });
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = '', text = '', last = 0, usage = null;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const ev = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
          const j = JSON.parse(ev.slice(6));
          if (j.usage) usage = j.usage;
          const piece = j.choices[0]?.text ?? '';
          if (piece.length > 0) {
            const now = performance.now();
            if (last === 0) ttft.push(now - t0);
            else itl.push(now - last);
            last = now;
            text += piece;
          }
        }
      }
      lat.push(performance.now() - t0);
      requests++;
      tokens += usage.completion_tokens;
      if (text !== expected.get(prompt)) wrong++;
    }
  }
  const t0 = performance.now(), cpu0 = cpuSecondsOf(pid);
  await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
  const seconds = (performance.now() - t0) / 1000, cpuSeconds = cpuSecondsOf(pid) - cpu0;
  clearInterval(sampler);
  return { requests, tokens, seconds, tps: tokens / seconds, cpuSeconds, tpc: tokens / cpuSeconds, rps: requests / seconds, lat, ttft, itl, wrong, rssPeak };
}

const loadBefore = os.loadavg()[0];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-serve-bench-'));
const dir = path.join(tmp, 'bench-tiny');
const tok = makeCheckpoint(dir);
const { loadCheckpoint } = await import('@apertus/model');
const model = loadCheckpoint(dir).model;

// Peer (a): sequential generate() in-process, on the same request mix, for the same duration.
const expected = new Map();
for (const p of PROMPTS) expected.set(p, tok.decode(generate(model, tok.encodeIds(p), { temperature: 0, maxTokens: MAX_TOKENS }).tokens, { skipSpecialTokens: true }));
let seqTokens = 0;
const seqLat = [];
const seqStart = performance.now();
for (let k = 0; performance.now() - seqStart < DURATION; k++) {
  const t0 = performance.now();
  seqTokens += generate(model, tok.encodeIds(PROMPTS[k % PROMPTS.length]), { temperature: 0, maxTokens: MAX_TOKENS }).tokens.length;
  seqLat.push(performance.now() - t0);
}
const seqTps = seqTokens / ((performance.now() - seqStart) / 1000);

const runs = [];
for (const batch of [1, BATCH]) {
  const { url, child } = await startServer(dir, ['--max-batch', String(batch), '--max-queue', String(CLIENTS * 2)]);
  runs.push({ batch, ...(await drive(url, child.pid, expected)) });
  child.kill('SIGINT');
  await new Promise((r) => child.once('exit', r));
}
fs.rmSync(tmp, { recursive: true, force: true });

const f = (x) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const cpu = os.cpus();
const lines = [
  '# @apertus/serve load benchmark',
  '',
  `Command: \`cd packages/serve && npx tsup && node bench/load.mjs --write${quick ? ' --quick' : ''}\` (${CLIENTS} streaming clients, ${DURATION / 1000} s per run, ${MAX_TOKENS} tokens per request, greedy).`,
  `Machine: ${cpu.length} x ${cpu[0]?.model.trim()}, Node ${process.version}, ${process.platform}, 1-min load average ${loadBefore.toFixed(1)} before / ${os.loadavg()[0].toFixed(1)} after (the machine is shared; figures vary between runs). Server: the built \`apertus-serve\` binary in its own process; clients in the benchmark process (both on the same cores).`,
  `Model: \`tiny\` preset, random bf16 weights, trained ${tok.vocabSize}-token BPE tokenizer. Every response was checked against \`generate()\` (wrong: count of mismatches).`,
  '',
  '| Configuration | Requests | Gen. tok/s | Gen. tok per server CPU-s | Req/s | Latency p50 / p90 / p99 (ms) | TTFT p50 / p90 / p99 (ms) | ITL p50 / p90 / p99 (ms) | Server RSS peak (MiB) | Wrong |',
  '|---|---:|---:|---:|---:|---|---|---|---:|---:|',
  `| peer: sequential \`generate()\` in-process | ${seqLat.length} | ${f(seqTps)} | – | ${f(seqLat.length / (DURATION / 1000))} | ${f(pct(seqLat, 50))} / ${f(pct(seqLat, 90))} / ${f(pct(seqLat, 99))} | – | – | – | 0 |`,
  ...runs.map((r) => `| apertus-serve --max-batch ${r.batch} | ${r.requests} | ${f(r.tps)} | ${f(r.tpc)} | ${f(r.rps)} | ${f(pct(r.lat, 50))} / ${f(pct(r.lat, 90))} / ${f(pct(r.lat, 99))} | ${f(pct(r.ttft, 50))} / ${f(pct(r.ttft, 90))} / ${f(pct(r.ttft, 99))} | ${f(pct(r.itl, 50))} / ${f(pct(r.itl, 90))} / ${f(pct(r.itl, 99))} | ${f(r.rssPeak / 2 ** 20)} | ${r.wrong} |`),
  '',
  `Ratios (throughput, > 1: faster): batch ${BATCH} server / sequential generate() = ${(runs[1].tps / seqTps).toFixed(2)}; batch ${BATCH} / batch 1 server = ${(runs[1].tps / runs[0].tps).toFixed(2)}; batch 1 server / sequential generate() = ${(runs[0].tps / seqTps).toFixed(2)} (the cost of HTTP + SSE + scheduling). Tokens per server CPU-second (the server process's user + system time, all its threads): batch ${BATCH} / batch 1 = ${(runs[1].tpc / runs[0].tpc).toFixed(2)}.`,
  '',
];
const md = lines.join('\n');
console.log(md);
if (argv.includes('--write')) {
  const b = runs[1];
  console.log(`wrote ${writeRecords('serve', [{
    id: 'serve-batch8',
    target: `apertus-serve, ${CLIENTS} streaming clients, tiny preset, ${MAX_TOKENS} tokens a request, --max-batch ${BATCH}`,
    figure: `${f(b.tps)} generated tok/s, ${f(b.rps)} req/s; latency p50 ${f(pct(b.lat, 50))} ms, time to first token p50 ${f(pct(b.ttft, 50))} ms; ${b.wrong} wrong responses`,
    ratio: `${(b.tps / seqTps).toFixed(2)}× sequential generate() in-process; ${(b.tps / runs[0].tps).toFixed(2)}× --max-batch 1`,
    load: loadRange(loadBefore),
  }])}`);
}
if (runs.some((r) => r.wrong > 0)) process.exitCode = 1;
