// Benchmark: @apertus/goldfish (built dist) hash-table mask against a BigInt peer in the same run.
//
//   cd packages/goldfish && npx tsup && node bench/mask.mjs [--write] [--quick]
//
// Ours: int64 window products with 16-bit limbs and the block prefix/suffix trick (≈ 3 limb
// multiplications per label whatever h is). Peer: the straightforward BigInt port the spec sketches
// (`p = BigInt.asIntN(64, p * BigInt(tok))` over every window, then the floor mod), same table and
// threshold. Both must give the same mask (checked). Ratio = peer time / our time (> 1: ours faster).
// With --write, the figures go to tooling/bench/results/goldfish.json (then `npm run bench:page`).
import { loadAverage, loadRange, writeRecords } from '@apertus/bench';
import { goldfishHashTable, goldfishMask } from '@apertus/goldfish';

const loadStart = loadAverage();
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const reps = quick ? 3 : 15;

function median(fn) {
  for (let i = 0; i < 3; i++) fn(); // warm-up (JIT tiers)
  const times = [];
  for (let i = 0; i < reps; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

function bigintMask(labels, rows, len, k, h, table) {
  const keep = new Uint8Array(rows * len).fill(1);
  const M = 1_000_003n;
  const thr = Math.fround(1 / k);
  const big = Array.from(labels, (v) => BigInt(v));
  for (let b = 0; b < rows; b++) {
    for (let i = h - 1; i < len; i++) {
      let p = 1n;
      for (let j = b * len + i - h + 1; j <= b * len + i; j++) p = BigInt.asIntN(64, p * big[j]);
      if (table[Number(((p % M) + M) % M)] < thr) keep[b * len + i] = 0;
    }
  }
  return keep;
}

function randomLabels(n, seed) {
  let s = seed >>> 0;
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = 1 + Math.floor((s / 2 ** 32) * 131071);
  }
  return out;
}

const t0 = process.hrtime.bigint();
const table = goldfishHashTable();
const tableMs = Number(process.hrtime.bigint() - t0) / 1e6;
console.log(`hash table (1,000,003 MT19937 draws, first call): ${tableMs.toFixed(1)} ms`);

const rows = [];
for (const [B, L, k, h] of [
  [8, 4096, 50, 50],
  [8, 4096, 4, 13],
  [1, 4096, 50, 50],
]) {
  const labels = randomLabels(B * L, 7 + h);
  const ours = goldfishMask(labels, { goldfishK: k, goldfishH: h, shape: [B, L] });
  const peer = bigintMask(labels, B, L, k, h, table);
  if (!ours.every((v, i) => v === peer[i])) throw new Error('masks differ');
  const oursMs = median(() => goldfishMask(labels, { goldfishK: k, goldfishH: h, shape: [B, L] }));
  const peerMs = median(() => bigintMask(labels, B, L, k, h, table));
  const name = `mask [${B}, ${L}] k=${k} h=${h}`;
  rows.push({ name, B, L, k, h, oursMs, peerMs, ratio: peerMs / oursMs, tokPerS: (B * L) / (oursMs / 1000) });
  console.log(`${name.padEnd(28)} ours ${oursMs.toFixed(2).padStart(8)} ms (${((B * L) / (oursMs / 1000) / 1e6).toFixed(1)} M labels/s) | BigInt ${peerMs.toFixed(2).padStart(8)} ms | ratio ${(peerMs / oursMs).toFixed(1)}`);
}

if (argv.includes('--write')) {
  const record = (id, r) => ({ id, target: `Goldfish hash-table mask [${r.B}, ${r.L}], k = ${r.k}, h = ${r.h}`, figure: `${r.oursMs.toFixed(2)} ms (${(r.tokPerS / 1e6).toFixed(1)} M labels/s) against ${r.peerMs.toFixed(2)} ms for a BigInt port (identical masks)`, ratio: `${r.ratio.toFixed(1)}×`, load: loadRange(loadStart) });
  console.log(`wrote ${writeRecords('goldfish', [record('goldfish-mask', rows[0]), record('goldfish-mask-k4', rows[1])])}`);
}
