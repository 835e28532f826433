// The split of a decode profile (from profile-decode.mjs) into what a step spends its CPU time on:
// the x·Wᵀ products, attention over the KV cache, each other op, the garbage collector and the
// rest (dispatch, allocation, tidy). Samples are counted over the time window of the decode
// steps (`decodeSteps`), so collector samples and GEMM samples whose stack V8 cut off count too.
//
//   node --cpu-prof --cpu-prof-dir=/tmp/prof packages/model/bench/profile-decode.mjs small 8 64 32
//   node packages/model/bench/profile-split.mjs /tmp/prof/*.cpuprofile
//
// A sample goes to the first category (in the order below) with a function on its stack.
import fs from 'node:fs';
import os from 'node:os';

const CATEGORIES = [
  ['products (GEMM)', ['wasmGemm', 'runJobs', 'join']],
  ['attention', ['pagedAttention', 'decodeAttention']],
  ['KV-cache writes', ['update']],
  ['xIELU', ['xielu']],
  ['RMSNorm', ['rmsnorm']],
  ['RoPE', ['rope']],
  ['residual adds', ['add']],
  ['embedding rows', ['embedRows']],
  ['garbage collector', ['(garbage collector)']],
];

const file = process.argv[2];
if (!file) throw new Error('usage: profile-split.mjs PROFILE.cpuprofile');
const p = JSON.parse(fs.readFileSync(file, 'utf8'));
const node = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
/** Function names on the stack of a sample's node, innermost first. */
const stack = (id) => { const names = []; for (let x = id; x !== undefined; x = parent.get(x)) names.push(node.get(x).callFrame.functionName); return names; };

const stacks = new Map();
const at = [];
let t = p.startTime, first = Infinity, last = -Infinity;
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i];
  at.push(t);
  const id = p.samples[i];
  if (!stacks.has(id)) stacks.set(id, stack(id));
  if (stacks.get(id).includes('decodeSteps')) { first = Math.min(first, t); last = Math.max(last, t); }
}
const ms = new Map();
let total = 0;
for (let i = 0; i < p.samples.length; i++) {
  if (at[i] < first || at[i] > last) continue;
  const dt = p.timeDeltas[i + 1] ?? 0, names = stacks.get(p.samples[i]);
  const cat = CATEGORIES.find(([, fns]) => fns.some((f) => names.includes(f)))?.[0] ?? 'rest (dispatch, allocation, tidy, glue)';
  ms.set(cat, (ms.get(cat) ?? 0) + dt);
  total += dt;
}
console.log(`${file}: ${(total / 1000).toFixed(0)} ms of decode steps; 1-minute load average now ${os.loadavg()[0].toFixed(1)}`);
for (const [cat, v] of [...ms].sort((a, b) => b[1] - a[1])) console.log(`${(100 * v / total).toFixed(1).padStart(5)} %  ${cat}`);
