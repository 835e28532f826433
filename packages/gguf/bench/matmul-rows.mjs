// GMAC/s of `linear` with M activation rows on stored quantized weights (`weightTensor`; CPU time,
// best of --rounds), for the built @apertus/tensor or, to compare builds in one process, for each
// `dist` folder given (a copy of packages/tensor/dist kept beside node_modules, so that its
// imports resolve): the builds alternate within each round. Prints the load average.
//   node packages/gguf/bench/matmul-rows.mjs [--type Q8_0] [--rows 128] [--shapes 768x768,3072x768,768x3072] [--rounds 3] [dist ...]
import os from 'node:os';
import path from 'node:path';

const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i >= 0 ? process.argv[i + 1] : dflt; };
const M = Number(arg('--rows', 128)), type = arg('--type', 'Q8_0'), rounds = Number(arg('--rounds', 3));
const shapes = arg('--shapes', '768x768,3072x768,768x3072').split(',').map((s) => s.split('x').map(Number));
const dists = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
const builds = dists.length ? await Promise.all(dists.map((d) => import(path.resolve(d, 'index.js')))) : [await import('@apertus/tensor')];
const dtype = type.toLowerCase();
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
/** The same pseudo-random weights for every build. */
const weights = (n) => { let s = 1; return Float32Array.from({ length: n }, () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32 - 0.5) * 0.1); };
const mats = builds.map((t) => shapes.map(([N, K]) => t.weightTensor(dtype, [N, K], t.QUANTIZERS[dtype](weights(N * K)))));
const xs = builds.map((t) => shapes.map(([, K]) => t.Tensor.from(Float32Array.from({ length: M * K }, (_, i) => Math.sin(i * 0.37)), [M, K])));
const best = builds.map(() => shapes.map(() => Infinity));
for (let r = 0; r < rounds; r++) {
  builds.forEach((t, b) => shapes.forEach(([N, K], s) => {
    const q = mats[b][s], x = xs[b][s], reps = Math.max(2, Math.round(2e8 / (M * N * K)));
    t.linear(x, q).dispose();
    const t0 = cpu();
    for (let i = 0; i < reps; i++) t.linear(x, q).dispose();
    best[b][s] = Math.min(best[b][s], (cpu() - t0) / reps);
  }));
}
const load = os.loadavg().map((v) => v.toFixed(1)).join(' ');
builds.forEach((_, b) => console.log(`${type}, ${M} rows, ${dists[b] ?? '@apertus/tensor'}: ${shapes.map(([N, K], s) => `[${N}, ${K}] ${(M * N * K / best[b][s] / 1e9).toFixed(1)}`).join(' | ')} GMAC/s; load ${load}`));
