// Benchmark: @apertus/tensor sgemm (WebAssembly SIMD, 1 and 2 threads) against numpy + OpenBLAS
// measured in the same run (the Python peers' numpy, bench/numpy_gemm.py). Prints GFLOPS and
// the ratio ours / numpy; with --write the figures of its targets go to
// tooling/bench/results/gemm.json (then `npm run bench:page`).
//
//   npm run build -w packages/tensor && node packages/tensor/bench/gemm.mjs [--write] [--quick] [--src] [--rounds R] [--only REGEX] [--cpu-time]
//
// Shapes: square n x n x n (n = 256 ... 2048), and the Apertus-8B MLP products for T tokens
// (hidden 4096, intermediate 21504): forward x W^T in both directions (up: K = 4096 -> N = 21504,
// down: K = 21504 -> N = 4096), the backward data products dY W, the weight gradient dY^T X, and
// bf16-weight inference (sgemmBf16; the numpy peer is the same product in f32).
// Timing: one warm-up call, then calls until a time budget is spent (at least 2), best time kept
// (the machine may be shared, so the minimum is the least noisy statistic); --rounds R repeats
// the whole list R times and keeps the best per cell. --cpu-time times each side's process CPU
// seconds at one thread only (a machine loaded by other jobs, where wall times mostly measure the
// share of a core each side got).
//
// It imports the built package (`@apertus/tensor` -> dist/). When that build does not export
// sgemm yet (or with --src), it bundles src/kernels/gemm with esbuild into node_modules/.cache
// and says so.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { cpuDescription, loadRange, writeRecords } from '@apertus/bench';
import { peerPython } from '@apertus/peers';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const write = argv.includes('--write');
const roundsArg = argv.indexOf('--rounds');
const rounds = roundsArg >= 0 ? Math.max(1, Number(argv[roundsArg + 1]) || 1) : 1;
const budgetS = quick ? 0.3 : rounds > 1 ? 0.5 : 1.0;
const PYTHON = peerPython();
const cpuTime = argv.includes('--cpu-time');
/** Milliseconds: wall time, or this process's CPU time with --cpu-time. */
const now = () => { if (!cpuTime) return performance.now(); const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

async function loadGemm() {
  if (!argv.includes('--src')) try {
    const t = await import('@apertus/tensor');
    if (typeof t.sgemm === 'function') return { ...t, wasm: (await import('@apertus/tensor/kernels')).wasm, source: '@apertus/tensor (dist)' };
  } catch {
    // fall through to the src bundle
  }
  const require = createRequire(import.meta.url);
  const esbuild = require(require.resolve('esbuild', { paths: [root] }));
  const dir = path.join(root, 'node_modules/.cache/apertus-gemm-bench');
  mkdirSync(dir, { recursive: true });
  const outfile = path.join(dir, 'gemm.mjs');
  await esbuild.build({
    entryPoints: [path.join(here, '../src/index.ts')],
    bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile, logLevel: 'warning',
  });
  const why = argv.includes('--src') ? '--src' : 'dist lacks sgemm';
  return { ...(await import(pathToFileURL(outfile).href)), source: `src/kernels/gemm (esbuild bundle; ${why})` };
}

/** Deterministic fill in [-1, 1). */
function fill(arr, seed) {
  let s = seed | 0 || 1;
  for (let i = 0; i < arr.length; i++) {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    arr[i] = (s >>> 0) / 2 ** 31 - 1;
  }
  return arr;
}

const H = 4096, I = 21504;
const cases = [];
for (const n of quick ? [256, 512, 1024] : [256, 512, 1024, 2048]) {
  cases.push({ name: `square ${n}`, group: 'square', M: n, N: n, K: n, transA: false, transB: false });
}
for (const T of quick ? [1, 16] : [1, 16, 128, 512]) {
  cases.push({ name: `up   x·Wᵀ   T=${T}`, group: 'model', M: T, N: I, K: H, transA: false, transB: true });
  cases.push({ name: `down x·Wᵀ   T=${T}`, group: 'model', M: T, N: H, K: I, transA: false, transB: true });
  cases.push({ name: `up   dY·W   T=${T}`, group: 'model', M: T, N: H, K: I, transA: false, transB: false });
  cases.push({ name: `down dY·W   T=${T}`, group: 'model', M: T, N: I, K: H, transA: false, transB: false });
}
for (const T of quick ? [128] : [128, 512]) {
  cases.push({ name: `up   dYᵀ·X  T=${T}`, group: 'model', M: I, N: H, K: T, transA: true, transB: false });
}
for (const T of quick ? [1] : [1, 16, 128]) {
  cases.push({ name: `up   x·Wᵀ   T=${T} bf16 W`, group: 'bf16', M: T, N: I, K: H, transA: false, transB: true, bf16: true });
  cases.push({ name: `down x·Wᵀ   T=${T} bf16 W`, group: 'bf16', M: T, N: H, K: I, transA: false, transB: true, bf16: true });
}

// --only <regex> keeps the cases whose name matches (spot checks; combine with --write only if
// you mean to replace the table with the subset).
const onlyArg = argv.indexOf('--only');
if (onlyArg >= 0) {
  const re = new RegExp(argv[onlyArg + 1] ?? '');
  for (let i = cases.length - 1; i >= 0; i--) if (!re.test(cases[i].name)) cases.splice(i, 1);
}

// ---- numpy peer -------------------------------------------------------------------------------
/** A numpy server process (numpy_gemm.py) with `threads` BLAS threads (0: OpenBLAS default). */
function startNumpy(threads) {
  const env = { ...process.env };
  if (threads) env.OPENBLAS_NUM_THREADS = String(threads);
  const child = spawn(PYTHON, [path.join(here, 'numpy_gemm.py')], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const queue = [];
  lines.on('line', (l) => queue.shift()?.resolve(JSON.parse(l)));
  const failed = new Promise((resolve) => child.on('exit', (code) => resolve(null)));
  const next = () => Promise.race([new Promise((resolve) => queue.push({ resolve })), failed]);
  return {
    config: next(),
    async time(c) {
      const reply = next();
      child.stdin.write(JSON.stringify({ name: c.name, M: c.M, N: c.N, K: c.K, transA: c.transA, transB: c.transB, budget: budgetS, min_reps: 2, clock: cpuTime ? 'cpu' : 'wall' }) + '\n');
      const r = await reply;
      return r?.seconds;
    },
    close() { child.stdin.end(); },
  };
}

// ---- ours ---------------------------------------------------------------------------------------
const gemm = await loadGemm();
// Operands live on the cpu device memory, where tensor storage lives (in place, as the model's
// products run), unless --staged: plain arrays, copied in by chunks (`bytesStaged`).
const staged = argv.includes('--staged') || gemm.wasm === undefined;
const f32 = (n) => (staged ? new Float32Array(n) : gemm.wasm.persistentF32(n));
const release = (a) => { if (!staged) gemm.wasm.heapRelease(a); };
const W = fill(f32(H * I), 7);
const WbfStore = staged ? null : f32(H * I / 2);
const Wbf16 = WbfStore === null ? new Uint16Array(H * I) : new Uint16Array(WbfStore.buffer, WbfStore.byteOffset, H * I);
{
  const u = new Uint32Array(W.buffer);
  for (let i = 0; i < u.length; i++) Wbf16[i] = u[i] >>> 16;
}

function timeOurs(c, threads) {
  gemm.setGemmThreads(threads);
  const big = c.group !== 'square';
  const A = fill(f32(c.M * c.K), 3);
  const own = !c.bf16 && !(big && c.K * c.N === W.length);
  const B = c.bf16 ? Wbf16 : own ? fill(f32(c.K * c.N), 5) : W;
  const C = f32(c.M * c.N);
  const args = { transA: c.transA, transB: c.transB, M: c.M, N: c.N, K: c.K, A, B, C };
  const call = c.bf16 ? () => gemm.sgemmBf16(args) : () => gemm.sgemm(args);
  call();
  let best = Infinity, reps = 0;
  const t0 = performance.now();
  while (reps < 2 || performance.now() - t0 < budgetS * 1000) {
    const t = now();
    call();
    best = Math.min(best, now() - t);
    reps++;
  }
  for (const a of own ? [A, B, C] : [A, C]) release(a);
  return best / 1000;
}

const loadStart = loadavg()[0];
const np2 = cpuTime ? null : startNumpy(0);
const np1 = quick && !cpuTime ? null : startNumpy(1);
const npConfig = await (np2 ?? np1).config;
if (npConfig === null) console.error(`numpy peer failed to start (${PYTHON}); numpy columns stay empty`);
if (np1 && np2) await np1.config;
// With --rounds R the whole list is measured R times and each cell keeps its best time: on a
// shared machine a round can fall into a busy period for one side only.
const best = cases.map(() => ({ t1: Infinity, t2: Infinity, n1: Infinity, n2: Infinity }));
for (let round = 0; round < rounds; round++) {
  for (const [i, c] of cases.entries()) {
    // numpy and ours back to back, so both see the same machine load.
    const b = best[i];
    if (npConfig && np2) b.n2 = Math.min(b.n2, (await np2.time(c)) ?? Infinity);
    if (np1 && npConfig) b.n1 = Math.min(b.n1, (await np1.time(c)) ?? Infinity);
    b.t1 = Math.min(b.t1, timeOurs(c, 1));
    if (!cpuTime) b.t2 = Math.min(b.t2, timeOurs(c, 2));
    const g = (t) => (Number.isFinite(t) ? (2 * c.M * c.N * c.K) / t / 1e9 : NaN);
    console.error(`[${round + 1}/${rounds}] ${c.name.padEnd(28)} ours ${g(b.t1).toFixed(1)} / ${g(b.t2).toFixed(1)}  numpy ${g(b.n1).toFixed(1)} / ${g(b.n2).toFixed(1)} GFLOPS`);
  }
}
const rows = cases.map((c, i) => {
  const { t1, t2, n1, n2 } = best[i];
  const g = (t) => (Number.isFinite(t) ? (2 * c.M * c.N * c.K) / t / 1e9 : NaN);
  return { c, ours1: g(t1), ours2: g(t2), np1: g(n1), np2: g(n2), ms2: t2 * 1e3, npms: Number.isFinite(n2) ? n2 * 1e3 : NaN };
});
np2?.close();
np1?.close();

// ---- report -------------------------------------------------------------------------------------
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const pct = (a, b) => (Number.isFinite(a) && Number.isFinite(b) ? `${((100 * a) / b).toFixed(0)} %` : '–');
/** Whether this runtime validates relaxed SIMD (then sgemm uses its `relaxed` FMA variant). */
function relaxedSimd() {
  const v = [0xfd, 0x0c, ...new Array(16).fill(0)]; // v128.const 0
  const body = [0x00, ...v, ...v, ...v, 0xfd, 0x85, 0x02, 0x0b]; // f32x4.relaxed_madd; end
  return WebAssembly.validate(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 5, 1, 0x60, 0, 1, 0x7b, 3, 2, 1, 0,
    10, body.length + 2, 1, body.length, ...body]));
}
const info = typeof gemm.gemmKernelInfo === 'function'
  ? gemm.gemmKernelInfo()
  : relaxedSimd() ? { variant: 'relaxed', microTile: '6x8' } : { variant: 'simd', microTile: '4x8' };
const lines = [];
lines.push(`Machine: ${cpuDescription()}, Node ${process.version}; ` +
  `1-minute load average ${loadStart.toFixed(2)} at the start, ${loadavg()[0].toFixed(2)} at the end (shared machine: best-of timings` +
  (rounds > 1 ? `, best of ${rounds} rounds` : '') + (cpuTime ? '; process CPU time, one thread' : '') + '). ' +
  `Operands ${staged ? 'plain arrays (staged into the wasm memory by chunks)' : 'on the cpu device memory (in place, as tensor storage)'}. ` +
  `Ours from ${gemm.source}` + (info ? `, variant \`${info.variant}\` (${info.microTile} micro-tile)` : '') + '.');
if (npConfig) lines.push(`Peer: numpy ${npConfig.numpy} with ${npConfig.blas.filter((p) => /libopenblas/.test(p)).map((p) => path.basename(p)).join(', ') || npConfig.blas.join(', ')} (default threads = 2; 1-thread column with OPENBLAS_NUM_THREADS=1), timed case by case right before ours.`);
lines.push('');
lines.push('| product | M × N × K | ours 1 thread | ours 2 threads | numpy 1 thread | numpy 2 threads | ours 2T ms | numpy 2T ms | ours/numpy (1T) | ours/numpy (2T) |');
lines.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const { c } = r;
  lines.push(`| ${c.name.replace(/\s+/g, ' ')}${c.transA ? ' (transA)' : ''}${c.transB ? ' (transB)' : ''} | ${c.M} × ${c.N} × ${c.K} | ${f1(r.ours1)} | ${f1(r.ours2)} | ${f1(r.np1)} | ${f1(r.np2)} | ${f1(r.ms2)} | ${f1(r.npms)} | ${pct(r.ours1, r.np1)} | ${pct(r.ours2, r.np2)} |`);
}
lines.push('');
lines.push('GFLOPS = 2·M·N·K / best time. bf16 rows: ours reads bf16 weights (sgemmBf16), numpy the same product in f32.');
const table = lines.join('\n');
console.log(table);

if (write) {
  const ratio = (r) => r.ours2 / r.np2;
  const span = (xs, f) => `${f(Math.min(...xs))}–${f(Math.max(...xs))}`;
  const x2 = (x) => x.toFixed(2), p0 = (x) => (100 * x).toFixed(0);
  const kernel = `${info.variant === 'relaxed' ? 'relaxed-SIMD FMA' : 'plain SIMD'} kernel, ${info.microTile.replace('x', '×')} tile`;
  const records = [];
  const sq = rows.find((r) => r.c.name === 'square 1024');
  if (sq) records.push({ id: 'gemm-1024', target: 'GEMM ≥ 20 GFLOPS at 1024² on 2 cores (#2)', status: sq.ours2 >= 20 ? 'met' : 'not met', figure: `${f1(sq.ours2)} GFLOPS on 2 threads, ${f1(sq.ours1)} on one (${kernel})`, ratio: `${x2(ratio(sq))}× numpy (2 threads each)` });
  const f32 = rows.filter((r) => r.c.group !== 'bf16' && Number.isFinite(ratio(r)));
  if (f32.length > 0) {
    const met = f32.filter((r) => ratio(r) >= 0.4).length;
    records.push({ id: 'gemm-vs-numpy', target: 'GEMM ≥ 40 % of numpy + OpenBLAS at 1024² and the 8B MLP shapes (#8)', status: met === f32.length ? 'met' : met > 0 ? 'partly met' : 'not met', figure: `${span(f32.map(ratio), p0)} % of numpy over ${f32.length} f32 shapes${sq ? ` (${p0(ratio(sq))} % at 1024²)` : ''}`, ratio: `${span(f32.map(ratio), x2)}× numpy (2 threads)` });
  }
  const bf16 = rows.filter((r) => r.c.group === 'bf16' && Number.isFinite(ratio(r)));
  if (bf16.length > 0) records.push({ id: 'gemm-bf16-weights', target: 'bf16 weights multiplied without converting the model (#8)', status: 'met', figure: `bf16 weights stay bf16 and are widened while packed: ${span(bf16.map((r) => r.ours2), f1)} GFLOPS on 2 threads over ${bf16.length} products`, ratio: `${span(bf16.map(ratio), x2)}× numpy on f32` });
  console.error(`wrote ${path.relative(root, writeRecords('gemm', records.map((r) => ({ ...r, load: loadRange(loadStart) }))))}`);
}
