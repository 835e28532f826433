// The unpacked x·Wᵀ kernel (`dot_nt`) alone, on one thread, over the products of one `small`
// decode step (every linear layer and the LM head: 403 MB of f32 weights, so W streams from
// memory), with and without its page touches and its k chunks: the committed `relaxed` module
// (DOT_CLASSES: pages touched `ahead` tiles on, row groups over `chunk` k steps at a time) against
// the same generator with `ahead` = 0, and with whole rows per row group, each compiled as the
// package compiles it (optimized at once), on one shared memory. Per round, each module runs one
// step (dot_pack + dot_nt for every product), in alternation; the best CPU time of R rounds is
// kept. Prints lscpu, the load average, ms and GFLOPS per step and the ratio.
//
//   node packages/tensor/bench/dot-nt.mjs [--rows 1,2,4,8,16] [--rounds R]
import { build } from 'esbuild';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { cpuDescription } from '@apertus/bench';

const argv = process.argv.slice(2);
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt; };
const rounds = Number(opt('--rounds', 8));
const rowsList = opt('--rows', '1,2,4,8,16').split(',').map(Number);

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src/kernels/gemm/wasm');
const bundle = await build({
  stdin: {
    contents: `export { GEMM_WASM_RELAXED } from './module.generated.ts'; export { GEMM_VARIANTS } from './variants.ts';
      export { DOT_CLASSES, dotNtFn, dotPackFn } from './dot-nt.ts'; export { encodeModule } from './encoder.ts';`,
    resolveDir: src, loader: 'ts',
  },
  bundle: true, write: false, format: 'esm', platform: 'node', logLevel: 'warning',
});
const { GEMM_WASM_RELAXED, GEMM_VARIANTS, DOT_CLASSES, dotNtFn, dotPackFn, encodeModule } =
  await import(`data:text/javascript;base64,${Buffer.from(bundle.outputFiles[0].text).toString('base64')}`);

const H = 768, I = 3072, Q = 768, KV = 256, V = 32768;
/** [N, K] of every product of one step. */
const shapes = [];
for (let l = 0; l < 12; l++) shapes.push([Q, H], [KV, H], [KV, H], [H, Q], [I, H], [H, I]);
shapes.push([V, H]);
const weights = shapes.reduce((s, [N, K]) => s + N * K, 0);
const maxM = Math.max(...rowsList);

v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
v8.setFlagsFromString('--no-wasm-dynamic-tiering');
const memory = new WebAssembly.Memory({ initial: Math.ceil((4 * weights + (16 << 20)) / 65536), maximum: 65536, shared: true });
const bare = DOT_CLASSES.map((x) => ({ ...x, ahead: 0 }));
const whole = DOT_CLASSES.map(({ chunk: _, ...x }) => x);
const o = GEMM_VARIANTS.relaxed;
const modules = [
  ['page touches (committed)', Buffer.from(GEMM_WASM_RELAXED, 'base64')],
  ['no touches (ahead = 0)', encodeModule([dotNtFn(o, bare), dotPackFn(o, bare)], 1, 65536)],
  ['no chunks', encodeModule([dotNtFn(o, whole), dotPackFn(o, whole)], 1, 65536)],
].map(([name, bytes]) => ({ name, ex: new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } }).exports }));
v8.setFlagsFromString('--wasm-dynamic-tiering');

// Layout: x [maxM, 3072] | C | packed x | accumulator scratch (at 15 MiB) | W of every product, back to back (from 16 MiB).
const f32 = new Float32Array(memory.buffer);
const pX = 0, pC = 4 * maxM * I, pPacked = pC + 4 * maxM * V, pAcc = 15 << 20, pW0 = 16 << 20;
let seed = 1;
const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32 - 0.5;
for (let i = 0; i < maxM * I; i++) f32[pX / 4 + i] = rnd();
for (let i = 0; i < weights; i++) f32[pW0 / 4 + i] = 0.04 * rnd();
const pW = [];
for (let i = 0, p = pW0; i < shapes.length; p += 4 * shapes[i][0] * shapes[i][1], i++) pW.push(p);

const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
function step(ex, M) {
  const t0 = cpuMs();
  shapes.forEach(([N, K], i) => {
    ex.dot_pack(M, K, pX, K, 1, pPacked);
    ex.dot_nt(M, N, K, pPacked, pW[i], K, 0, pC, N, 0, pAcc);
  });
  return cpuMs() - t0;
}

console.log(`CPU: ${cpuDescription()}`);
console.log(`Node ${process.version}; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')} (start)`);
console.log(`small decode step: ${shapes.length} products, ${(4 * weights / 1e6).toFixed(0)} MB of f32 weights; one thread, CPU time, best of ${rounds} alternating rounds`);
console.log('| M | committed ms (GFLOPS) | no touches ms (GFLOPS) | no chunks ms (GFLOPS) | no touches / committed | no chunks / committed |');
console.log('|---:|---:|---:|---:|---:|---:|');
for (const M of rowsList) {
  const best = modules.map(() => Infinity);
  modules.forEach(({ ex }) => step(ex, M));
  for (let r = 0; r < rounds; r++) modules.forEach(({ ex }, i) => { best[i] = Math.min(best[i], step(ex, M)); });
  const gf = (ms) => ((2 * M * weights) / ms / 1e6).toFixed(1);
  const cell = (i) => `${best[i].toFixed(1)} (${gf(best[i])})`;
  console.log(`| ${M} | ${cell(0)} | ${cell(1)} | ${cell(2)} | ${(best[1] / best[0]).toFixed(2)} | ${(best[2] / best[0]).toFixed(2)} |`);
}
console.log(`load average ${loadavg().map((x) => x.toFixed(1)).join(' ')} (end)`);
