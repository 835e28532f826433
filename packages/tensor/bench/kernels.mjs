// Benchmark: gpu.js kernels (synchronous, one mode) vs the plain TypeScript reference kernels,
// on model-sized shapes, measured in the same run. Prints a table with the ratio
// (reference time / gpu.js time: > 1 means gpu.js is faster) and, with --write, puts the range
// into tooling/bench/results/gpujs.json (then `npm run bench:page`). On a CPU (webasm mode) every
// gpu.js call copies its inputs in and its output out and calls back into JS for exp/log, so only
// work-heavy, SIMD-friendly kernels (a GEMM against a naive loop) come out ahead.
//
//   npm run build -w packages/tensor && node packages/tensor/bench/kernels.mjs [--mode webasm] [--write] [--quick]
//
// It imports the built package (`@apertus/tensor` -> dist/). When that build does not export
// `createGpujsKernels` and `jsKernels` yet, it bundles the two kernel folders from src/ with
// esbuild into node_modules/.cache instead, and says so in the output.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { loadRange, writeRecords } from '@apertus/bench';
import { GPU, input } from 'gpu.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt; };
const mode = opt('--mode', 'webasm');
const quick = flag('--quick');
const budgetMs = quick ? 150 : 1000;

async function loadKernels() {
  try {
    const t = await import('@apertus/tensor');
    if (typeof t.createGpujsKernels === 'function' && t.jsKernels) {
      return { createGpujsKernels: t.createGpujsKernels, jsKernels: t.jsKernels, source: '@apertus/tensor (dist)' };
    }
  } catch {
    // fall through to the src bundle
  }
  const require = createRequire(import.meta.url);
  const esbuild = require(require.resolve('esbuild', { paths: [root] }));
  // Inside the root node_modules (git-ignored) so the bundle can resolve gpu.js.
  const dir = path.join(root, 'node_modules/.cache/apertus-gpujs-bench');
  mkdirSync(dir, { recursive: true });
  const entry = path.join(dir, 'entry.ts');
  writeFileSync(entry, [
    `export { createGpujsKernels } from ${JSON.stringify(path.join(here, '../src/kernels/gpujs/index.ts'))};`,
    `export { jsKernels } from ${JSON.stringify(path.join(here, '../src/kernels/js/index.ts'))};`,
  ].join('\n'));
  const outfile = path.join(dir, 'kernels.mjs');
  await esbuild.build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', outfile, external: ['gpu.js'], logLevel: 'error' });
  const m = await import(pathToFileURL(outfile).href);
  return { createGpujsKernels: m.createGpujsKernels, jsKernels: m.jsKernels, source: 'src/ bundled with esbuild (the dist build does not export createGpujsKernels/jsKernels yet)' };
}

/** Deterministic pseudo-random floats in [-1, 1). */
function rnd(n, seed = 1) {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; a[i] = s / 2 ** 31 - 1; }
  return a;
}

/**
 * Median ms of a() and of b(), after one warm-up call each (which includes gpu.js compilation).
 * The two are sampled alternately so that load from other processes hits both alike.
 */
function timePair(a, b) {
  a();
  b();
  const ta = [], tb = [];
  const t0 = performance.now();
  while (ta.length < 3 || (performance.now() - t0 < budgetMs && ta.length < 30)) {
    let t = performance.now();
    a();
    ta.push(performance.now() - t);
    t = performance.now();
    b();
    tb.push(performance.now() - t);
  }
  const med = (v) => v.sort((x, y) => x - y)[v.length >> 1];
  return [med(ta), med(tb)];
}

/** Median ms of fn() after one warm-up call. */
function time(fn) {
  fn();
  const times = [];
  const t0 = performance.now();
  while (times.length < 3 || (performance.now() - t0 < budgetMs && times.length < 30)) {
    const t = performance.now();
    fn();
    times.push(performance.now() - t);
  }
  times.sort((x, y) => x - y);
  return times[times.length >> 1];
}

function jsGemm({ M, N, K, A, B, C }) {
  // Plain i-k-j loop, non-transposed: the JS peer for the gpu.js GEMM (the JS reference has none).
  C.fill(0);
  for (let i = 0; i < M; i++) {
    for (let p = 0; p < K; p++) {
      const a = A[i * K + p];
      const ci = i * N, bp = p * N;
      for (let j = 0; j < N; j++) C[ci + j] += a * B[bp + j];
    }
  }
}

const { createGpujsKernels, jsKernels, source } = await loadKernels();
const gk = createGpujsKernels(mode);
const rows = [];
function bench(name, shape, gpuFn, jsFn) {
  const [g, j] = timePair(gpuFn, jsFn);
  rows.push({ name, shape, g, j });
  console.log(`${name.padEnd(24)} ${shape.padEnd(28)} gpu.js ${g.toFixed(2).padStart(9)} ms   js ${j.toFixed(2).padStart(9)} ms   js/gpu.js ${(j / g).toFixed(2)}`);
}

const loadBefore = loadavg()[0];
console.log(`gpu.js mode ${gk.mode}; kernels from ${source}; ${cpus().length} CPUs, Node ${process.version}, load average ${loadBefore.toFixed(2)}`);

{ // elementwise
  const n = 512 * 4096, x = rnd(n), o = new Float32Array(n), gy = rnd(n, 2), gx = new Float32Array(n);
  bench('unary exp', '512x4096', () => gk.unary('exp', x, o), () => jsKernels.unary('exp', x, o));
  bench('unary silu', '512x4096', () => gk.unary('silu', x, o), () => jsKernels.unary('silu', x, o));
  jsKernels.unary('silu', x, o);
  bench('unaryBackward silu', '512x4096', () => gk.unaryBackward('silu', x, o, gy, gx), () => jsKernels.unaryBackward('silu', x, o, gy, gx));
  const b = rnd(4096, 3);
  bench('binary add (bcast row)', '[512,4096]+[4096]', () => gk.binary('add', x, [4096, 1], b, [0, 1], [512, 4096], o), () => jsKernels.binary('add', x, [4096, 1], b, [0, 1], [512, 4096], o));
  bench('binary mul (same)', '[512,4096]*[512,4096]', () => gk.binary('mul', x, [4096, 1], gy, [4096, 1], [512, 4096], o), () => jsKernels.binary('mul', x, [4096, 1], gy, [4096, 1], [512, 4096], o));
  const s = new Float32Array(512), arg = new Int32Array(512);
  bench('sum rows', '512x4096 -> 512', () => gk.sum(x, 512, 4096, 1, s), () => jsKernels.sum(x, 512, 4096, 1, s));
  const s2 = new Float32Array(4096);
  bench('sum axis 0', '512x4096 -> 4096', () => gk.sum(x, 1, 512, 4096, s2), () => jsKernels.sum(x, 1, 512, 4096, s2));
  bench('max rows (+argmax)', '512x4096 -> 512', () => gk.max(x, 512, 4096, 1, s, arg), () => jsKernels.max(x, 512, 4096, 1, s, arg));
  bench('softmax', '512x4096', () => gk.softmax(x, 512, 4096, o), () => jsKernels.softmax(x, 512, 4096, o));
  jsKernels.softmax(x, 512, 4096, o);
  bench('softmaxBackward', '512x4096', () => gk.softmaxBackward(o, gy, 512, 4096, gx), () => jsKernels.softmaxBackward(o, gy, 512, 4096, gx));
  bench('logSoftmax', '512x4096', () => gk.logSoftmax(x, 512, 4096, o), () => jsKernels.logSoftmax(x, 512, 4096, o));
}
{ // rmsnorm
  for (const [r, n] of [[512, 512], [512, 4096]]) {
    const x = rnd(r * n), w = rnd(n, 5), o = new Float32Array(r * n), rs = new Float32Array(r);
    bench('rmsnorm', `${r}x${n}`, () => gk.rmsnorm(x, w, r, n, 1e-5, o, rs), () => jsKernels.rmsnorm(x, w, r, n, 1e-5, o, rs));
    const gy = rnd(r * n, 6), gx = new Float32Array(r * n), gw = new Float32Array(n);
    bench('rmsnormBackward', `${r}x${n}`, () => gk.rmsnormBackward(x, w, rs, gy, r, n, gx, gw), () => jsKernels.rmsnormBackward(x, w, rs, gy, r, n, gx, gw));
  }
}
{ // rope, embedding
  const N = 256, heads = 8, d = 64, x = rnd(N * heads * d), o = new Float32Array(N * heads * d);
  const pos = Int32Array.from({ length: N }, (_, i) => i), inv = Float32Array.from({ length: d / 2 }, (_, i) => 12e6 ** (-2 * i / d));
  bench('rope', `N=${N} heads=${heads} d=${d}`, () => gk.rope(x, N, heads, d, pos, inv, false, o), () => jsKernels.rope(x, N, heads, d, pos, inv, false, o));
  const V = 8192, H = 512, T = 512, table = rnd(V * H), ids = Int32Array.from({ length: T }, (_, i) => (i * 7919) % V);
  const eo = new Float32Array(T * H), gy = rnd(T * H, 7), gt = new Float32Array(V * H);
  bench('embedding', `T=${T} V=${V} H=${H}`, () => gk.embedding(ids, table, H, eo), () => jsKernels.embedding(ids, table, H, eo));
  bench('embeddingBackward', `T=${T} V=${V} H=${H}`, () => gk.embeddingBackward(ids, gy, H, gt), () => jsKernels.embeddingBackward(ids, gy, H, gt));
}
{ // attention
  // --quick: a shorter sequence, since the webasm attention kernels take seconds at T = 256.
  const B = 1, T = quick ? 64 : 256, S = T, nh = 8, nkv = 8, d = 64;
  const mk = () => ({ B, T, S, nh, nkv, d, q: rnd(B * T * nh * d, 8), k: rnd(B * S * nkv * d, 9), v: rnd(B * S * nkv * d, 10), scale: 1 / Math.sqrt(d), qOffset: 0, out: new Float32Array(B * T * nh * d), lse: new Float32Array(B * nh * T) });
  const a = mk();
  bench('attention', `T=${T} nh=${nh} d=${d} causal`, () => gk.attention(a), () => jsKernels.attention(a));
  jsKernels.attention(a);
  const ab = { ...a, gout: rnd(B * T * nh * d, 11), gq: new Float32Array(B * T * nh * d), gk: new Float32Array(B * S * nkv * d), gv: new Float32Array(B * S * nkv * d) };
  bench('attentionBackward', `T=${T} nh=${nh} d=${d} causal`, () => gk.attentionBackward(ab), () => jsKernels.attentionBackward(ab));
}
{ // cross-entropy
  const r = 512, V = 8192, logits = rnd(r * V), tg = Int32Array.from({ length: r }, (_, i) => (i * 131) % V);
  const loss = new Float32Array(r), lse = new Float32Array(r), g = new Float32Array(r).fill(1 / r), gl = new Float32Array(r * V);
  bench('crossEntropy', `${r}x${V}`, () => gk.crossEntropy(logits, tg, null, r, V, loss, lse), () => jsKernels.crossEntropy(logits, tg, null, r, V, loss, lse));
  bench('crossEntropyBackward', `${r}x${V}`, () => gk.crossEntropyBackward(logits, tg, null, lse, g, r, V, gl), () => jsKernels.crossEntropyBackward(logits, tg, null, lse, g, r, V, gl));
}
let gemmLine;
{ // gemm vs a plain JS loop; and one asyncMode (worker-thread) measurement straight through gpu.js
  const M = 512, N = 512, K = 512, A = rnd(M * K), Bm = rnd(K * N, 12), C = new Float32Array(M * N);
  bench('gemm (vs JS i-k-j loop)', '512x512x512', () => gk.gemm({ transA: false, transB: false, M, N, K, A, B: Bm, C }), () => jsGemm({ M, N, K, A, B: Bm, C }));
  const g = rows[rows.length - 1].g;
  const gpu = new GPU({ mode });
  const fn = function (a, b) {
    let acc = 0;
    for (let p = 0; p < this.constants.K; p++) acc += a[this.thread.y][p] * b[p][this.thread.x];
    return acc;
  };
  const settings = { output: [N, M], constants: { K }, constantTypes: { K: 'Integer' } };
  const sync = gpu.createKernel(fn, settings);
  const asy = gpu.createKernel(fn, { ...settings, asyncMode: true });
  const ai = input(A, [K, M]), bi = input(Bm, [N, K]);
  const ts = time(() => sync(ai, bi));
  await asy(ai, bi);
  const at = [];
  for (let i = 0; i < (quick ? 3 : 10); i++) { const t = performance.now(); await asy(ai, bi); at.push(performance.now() - t); }
  at.sort((x, y) => x - y);
  const ta = at[at.length >> 1];
  gemmLine = `gpu.js gemm 512³ on ${mode}: KernelSet sync ${g.toFixed(1)} ms (${(2 * M * N * K / g / 1e6).toFixed(2)} GFLOP/s); raw kernel sync ${ts.toFixed(1)} ms; raw kernel asyncMode ${ta.toFixed(1)} ms (${(ts / ta).toFixed(2)}× the sync kernel, path ${asy.kernel._lastRunPath ?? '?'})`;
  console.log(gemmLine);
  gpu.destroy();
}
gk.dispose();

const loadAfter = loadavg()[0];
console.log(`load average at the end: ${loadAfter.toFixed(2)}`);

if (flag('--write')) {
  const ratios = rows.map((r) => r.j / r.g);
  const lo = rows[ratios.indexOf(Math.min(...ratios))], hi = rows[ratios.indexOf(Math.max(...ratios))];
  console.log(`wrote ${writeRecords('gpujs', [{
    id: 'gpujs-webasm-kernels',
    target: `gpu.js kernels on its ${mode} mode against the TypeScript reference kernels, ${rows.length} kernels`,
    figure: `reference / gpu.js time ${(lo.j / lo.g).toFixed(2)} (${lo.name} ${lo.shape}) to ${(hi.j / hi.g).toFixed(2)} (${hi.name} ${hi.shape})`,
    ratio: `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`,
    load: loadRange(loadBefore, loadAfter),
  }])}`);
}
