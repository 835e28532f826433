// Benchmarks of @apertus/data against peers measured in the same run.
// Run from the repository root after a build:
//   (cd packages/data && npx tsup) && node packages/data/bench/data.bench.mjs
// Figures are printed as Markdown; nothing here is asserted.
import { spawnSync } from 'node:child_process';
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  EMAIL_REGEX,
  IBAN_REGEX,
  IPV4_REGEX,
  PackedDataset,
  RobotsTxt,
  ShardWriter,
  ShardedTokens,
  replacePii,
} from '@apertus/data';

function time(fn, minMs = 400) {
  for (let w = 0; w < 3; w++) fn(); // warm up the JIT
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < minMs) {
    fn();
    n++;
    t = performance.now();
  }
  return (t - t0) / n; // ms per call
}

const rows = [];
const row = (what, ours, peer, unit, peerName) =>
  rows.push(`| ${what} | ${ours} ${unit} | ${peer ?? '—'} ${peer === undefined ? '' : unit} | ${peer === undefined ? '—' : (Number(ours) / Number(peer)).toFixed(2)} | ${peerName} |`);

// 1. PII replacement: ours (Python-compatible \b, distinct-match loop) vs plain chained String.replace
const para =
  'Contact john.doe@example.com or the admin at 192.168.10.20 for details. Transfers go to CH93 0076 2011 6238 5295 7. ' +
  'Version 1.2.3.4 of the tool was released by dev-team@lists.example.org last week. ';
const text = para.repeat(2000) + 'Plain prose without any personal data in it at all, just words. '.repeat(4000);
const mb = Buffer.byteLength(text) / 1e6;
const oursPii = time(() => replacePii(text));
const naivePii = time(() => text.replace(EMAIL_REGEX, '<email-pii>').replace(IPV4_REGEX, '<ip-pii>').replace(IBAN_REGEX, '<iban-pii>'));
row('PII replacement', (mb / (oursPii / 1000)).toFixed(1), (mb / (naivePii / 1000)).toFixed(1), 'MB/s', 'chained String.replace with the same regexes');

// 2. robots.txt: parse + 15 agent checks per URL; peer: protego (Python) when installed
const robotsTxt = `User-agent: *\nDisallow: /private\nAllow: /private/public\n\nUser-agent: GPTBot\nDisallow: /articles/\n\nUser-agent: CCBot/2.0\nDisallow: /\n${Array.from({ length: 60 }, (_, i) => `Disallow: /*/section${i}/*.php$`).join('\n')}\n`;
const agents = ['AI2Bot', 'Applebot-Extended', 'Bytespider', 'CCBot', 'CCBot/2.0', 'CCBot/1.0', 'ClaudeBot', 'cohere-training-data-crawler', 'Diffbot', 'FacebookBot', 'Meta-ExternalAgent', 'Google-Extended', 'GPTBot', 'PanguBot', '*'];
const urls = Array.from({ length: 200 }, (_, i) => `https://example.com/${i % 3 === 0 ? 'articles' : 'blog'}/x${i}/section${i % 70}/page.php`);
const robots = RobotsTxt.parse(robotsTxt);
const oursRobots = time(() => {
  for (const u of urls) for (const a of agents) robots.isAllowed(u, a);
});
const checksPerSec = (urls.length * agents.length) / (oursRobots / 1000);
let peerChecks;
const py = spawnSync(
  '/usr/bin/python3',
  [
    '-c',
    `import json,sys,time
from protego import Protego
d=json.load(sys.stdin); rp=Protego.parse(d["robots"])
t0=time.perf_counter(); n=0
while time.perf_counter()-t0<0.4:
    for u in d["urls"]:
        for a in d["agents"]: rp.can_fetch(u,a)
    n+=1
print(n*len(d["urls"])*len(d["agents"])/(time.perf_counter()-t0))`,
  ],
  { input: JSON.stringify({ robots: robotsTxt, urls, agents }), encoding: 'utf8' },
);
if (py.status === 0) peerChecks = Number(py.stdout.trim());
row('robots.txt checks (URL × agent)', (checksPerSec / 1e3).toFixed(0), peerChecks === undefined ? undefined : (peerChecks / 1e3).toFixed(0), 'k checks/s', 'protego 0.2.1 (Python, Debian python3-protego)');

// 3. shard writing: ours (id checks, BoD/EoD, index, fsync + rename) vs one raw write + fsync of the same uint32 tokens
const dir = mkdtempSync(path.join(tmpdir(), 'apertus-bench-'));
const docs = Array.from({ length: 2000 }, (_, i) => Uint32Array.from({ length: 1000 + (i % 500) }, (_, j) => 3 + ((i * 7919 + j) % 131000)));
const totalTokens = docs.reduce((s, d) => s + d.length + 2, 0);
let k = 0;
const oursWrite = time(() => {
  const w = new ShardWriter({ directory: path.join(dir, `w${k++}`), vocabSize: 131072, bodId: 1, eodId: 2 });
  for (const d of docs) w.addDocument(d);
  w.close();
}, 1500);
const flat = new Uint32Array(totalTokens);
const rawWrite = time(() => {
  const fd = openSync(path.join(dir, 'raw.bin'), 'w');
  writeSync(fd, flat);
  fsyncSync(fd);
  closeSync(fd);
}, 1500);
row('shard writing', (totalTokens / oursWrite / 1e3).toFixed(1), (totalTokens / rawWrite / 1e3).toFixed(1), 'M tokens/s', 'one write + fsync of the same tokens (no checks, no index)');

// 4. packed samples from disk (seqLength 4096): ours (window + doc ids + masks) vs the raw window read alone
const tokens = ShardedTokens.open(path.join(dir, 'w0', 'shard.manifest.json'));
const ds = new PackedDataset(tokens, { seqLength: 4096 });
let i = 0;
const oursSample = time(() => ds.sample(i++ % ds.numSamples));
let j = 0;
const rawSample = time(() => {
  const s = (j++ % ds.numSamples) * 4096;
  tokens.readTokens(s, s + 4097);
});
row('packed sample read (L = 4096)', (1000 / oursSample).toFixed(0), (1000 / rawSample).toFixed(0), 'samples/s', 'ShardedTokens.readTokens of the same window');
tokens.close();
rmSync(dir, { recursive: true, force: true });

console.log(`Node ${process.version}, ${process.platform}/${process.arch}\n`);
console.log('| benchmark | @apertus/data | peer | ratio | peer |');
console.log('|---|---|---|---|---|');
for (const r of rows) console.log(r);
