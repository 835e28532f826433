// Profile of the GEMM on one thread: where the time of each target product goes (what bounds the
// products that stay under the SIMD peak). It runs the committed `relaxed` module the engine runs
// (module.generated.ts: the wide 6 x 16 tile compiled with V8's revectorizer, or with --narrow the
// 6 x 8 tile without it; optimized at once, as the package compiles it) on its own shared memory
// with the engine's blocking (MC, NC, KC), and times, by CPU time, best of R rounds with the parts
// in a fresh random order each round:
//
// - gemm: the whole product (one `gemm` call, as the engine runs it on one thread);
// - pack B, pack A: every packing call of that product (same blocks, same order);
// - macro: every macro-kernel call on packed blocks (the micro-kernel over all tiles plus the
//   C tile stores, edge tiles and the C read-modify-write of the later K blocks);
// - kernel in L1: the same macro-kernel calls with C in L1 (row stride 0: all tile rows go to
//   one row of NC floats): the micro-kernel's own ceiling on these panels.
//
// Shares are of the gemm time; "% of peak" is against the best `relaxed_madd` probe of the run
// (simd-peak.mjs, one probe per round).
//
//   node packages/tensor/bench/gemm-profile.mjs [--rounds R] [--seconds S] [--rows a,b] [--narrow]
import { build } from 'esbuild';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { pickShapes } from './gemm-common.mjs';
import { cpuDescription } from '@apertus/bench';
import { simdPeak } from './simd-peak.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt; };
const rounds = Number(opt('--rounds', 5));
const seconds = Number(opt('--seconds', 0.15));
const rowsArg = opt('--rows', null);
const wide = !argv.includes('--narrow');

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src/ops/gemm/wasm');
const bundle = await build({
  stdin: {
    contents: `export { GEMM_WASM_RELAXED, GEMM_WASM_RELAXED_WIDE } from './module.generated.ts'; export { DEFAULT_ENGINE_TUNING } from './engine.ts'; export { GEMM_VARIANTS, GEMM_WIDE_TILES } from './variants.ts';`,
    resolveDir: src, loader: 'ts',
  },
  bundle: true, write: false, format: 'esm', platform: 'node', logLevel: 'warning',
});
const { GEMM_WASM_RELAXED, GEMM_WASM_RELAXED_WIDE, DEFAULT_ENGINE_TUNING, GEMM_VARIANTS, GEMM_WIDE_TILES } = await import(`data:text/javascript;base64,${Buffer.from(bundle.outputFiles[0].text).toString('base64')}`);
const { mr, nr } = (wide ? GEMM_WIDE_TILES : GEMM_VARIANTS).relaxed;
const { NC, KC } = DEFAULT_ENGINE_TUNING;
const MC = Math.ceil(DEFAULT_ENGINE_TUNING.MC / mr) * mr;

v8.setFlagsFromString('--no-wasm-dynamic-tiering');
v8.setFlagsFromString('--no-wasm-lazy-compilation');
if (wide) v8.setFlagsFromString('--experimental-wasm-revectorize');
const memory = new WebAssembly.Memory({ initial: 1, maximum: 65536, shared: true });
const ex = new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(wide ? GEMM_WASM_RELAXED_WIDE : GEMM_WASM_RELAXED, 'base64')), { env: { memory } }).exports;
v8.setFlagsFromString('--wasm-dynamic-tiering');
v8.setFlagsFromString('--wasm-lazy-compilation');

/** Best CPU seconds of `fn` over the time budget (one warm-up call, at least 3 timed). */
function best(fn) {
  fn();
  let t = Infinity;
  const end = performance.now() + seconds * 1000;
  for (let n = 0; n < 3 || performance.now() < end; n++) {
    const c0 = process.cpuUsage();
    fn();
    const c = process.cpuUsage(c0);
    t = Math.min(t, (c.user + c.system) / 1e6);
  }
  return t;
}

const loadStart = loadavg()[0];
console.log(`CPU: ${cpuDescription()}`);
console.log(`Node ${process.version}; relaxed module (${mr} × ${nr} tile${wide ? ', revectorized' : ''}), MC ${MC}, NC ${NC}, KC ${KC}; 1-minute load average ${loadStart.toFixed(2)}`);
let peak = 0;
const results = [];
for (const [name, M, N, K, transA, transB] of pickShapes(rowsArg === null ? null : rowsArg.split(','))) {
  // Layout: A, B, C, packed A block, packed B block, tile, one C row.
  const align = (x) => Math.ceil(x / 64) * 64;
  const pA = 64, pB = align(pA + 4 * M * K), pC = align(pB + 4 * K * N);
  const packA = align(pC + 4 * M * N), packB = align(packA + 4 * MC * KC), tile = align(packB + 4 * Math.ceil(NC / nr) * nr * KC);
  const cRow = align(tile + 4 * mr * nr);
  const bytes = cRow + 4 * NC;
  if (bytes > memory.buffer.byteLength) memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / 65536));
  const f = new Float32Array(memory.buffer, 0, bytes / 4);
  let s = 1;
  for (let i = pA / 4; i < pC / 4 + M * N; i++) { s = (s * 1103515245 + 12345) >>> 0; f[i] = s / 2 ** 31 - 1; }
  const rsA = transA ? 1 : K, csA = transA ? M : 1, rsB = transB ? 1 : N, csB = transB ? K : 1;
  // The blocks of gemm(): jc over N by NC, pc over K by KC, ic over M by MC (codegen.ts).
  const blocks = [];
  for (let jc = 0; jc < N; jc += NC) for (let pc = 0; pc < K; pc += KC) for (let ic = 0; ic < M; ic += MC) {
    blocks.push({ jc, pc, ic, nc: Math.min(NC, N - jc), kc: Math.min(KC, K - pc), mc: Math.min(MC, M - ic) });
  }
  const parts = {
    gemm: () => ex.gemm(M, N, K, pA, rsA, csA, pB, rsB, csB, 0, pC, N, 1, 0, packA, packB, tile, MC, NC, KC),
    'pack B': () => { for (const b of blocks) if (b.ic === 0) ex.pack_b(pB + 4 * (b.pc * rsB + b.jc * csB), rsB, csB, b.kc, b.nc, packB); },
    'pack A': () => { for (const b of blocks) ex.pack_a(pA + 4 * (b.ic * rsA + b.pc * csA), rsA, csA, b.mc, b.kc, packA, 1); },
    macro: () => { for (const b of blocks) ex.macro(b.mc, b.nc, b.kc, packA, packB, pC + 4 * (b.ic * N + b.jc), 4 * N, b.pc > 0 ? 1 : 0, tile); },
    // The same macro-kernel calls with a C row stride of 0: every tile row goes to one row of nc
    // floats in L1 (stores only), so C costs next to nothing.
    'kernel in L1': () => { for (const b of blocks) ex.macro(b.mc, b.nc, b.kc, packA, packB, cRow, 0, 0, tile); },
  };
  const t = {};
  for (let r = 0; r < rounds; r++) {
    peak = Math.max(peak, simdPeak(0.1, true).fma ?? 0);
    for (const part of Object.keys(parts).sort(() => Math.random() - 0.5)) t[part] = Math.min(t[part] ?? Infinity, best(parts[part]));
  }
  results.push({ name, M, N, K, flops: 2 * M * N * K, t, load: loadavg()[0] });
  console.error(`${name}: done`);
}
const pct = (x) => `${(100 * x).toFixed(1)} %`;
console.log('');
console.log('| product | M × N × K | gemm GFLOPS | gemm % of peak | pack B | pack A | macro | macro % of peak | kernel in L1 % of peak | load |');
console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const { name, M, N, K, flops, t, load } of results) {
  const g = (x) => flops / x / 1e9;
  console.log(`| ${name} | ${M} × ${N} × ${K} | ${g(t.gemm).toFixed(1)} | ${pct(g(t.gemm) / peak)} | ${pct(t['pack B'] / t.gemm)} | ${pct(t['pack A'] / t.gemm)} | ${pct(t.macro / t.gemm)} | ${pct(g(t.macro) / peak)} | ${pct(g(t['kernel in L1']) / peak)} | ${load.toFixed(1)} |`);
}
console.log('');
console.log(`relaxed_madd peak (best of ${rounds * results.length} probes): ${peak.toFixed(1)} GFLOPS. Shares (pack B, pack A, macro) are of the gemm time; CPU time, best of ${rounds} rounds; 1-minute load average ${loadStart.toFixed(2)} at the start, ${loadavg()[0].toFixed(2)} at the end.`);
