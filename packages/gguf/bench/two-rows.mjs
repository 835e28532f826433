// The relaxed Q8_0 and Q4_K matrix-vector kernels one row at a time against two rows at a time,
// with the weights streamed from memory as in a decode step: for each [N, K], as many copies of a
// random [N, K] matrix as fill 96 MB, multiplied in turn (M = 1), the two kernels alternated, best
// of 8 in CPU time; GB/s of stored weights. What `TWO_ROWS_MAX_BYTES` in src/kernels/qmatmul.ts
// rests on. Built from kernels.wat.mjs, so it measures the source as it is (no build needed).
//   node --experimental-wasm-relaxed-simd packages/gguf/bench/two-rows.mjs [--types q8_0,q4_k] [--k 768,1280,3072,4096,5120,6144,8192] [--n 1024]
import os from 'node:os';
import v8 from 'node:v8';
import { buildBase64 } from '../src/kernels/generate.mjs';

const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i >= 0 ? process.argv[i + 1] : dflt; };
v8.setFlagsFromString('--no-wasm-dynamic-tiering');
const inst = new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(await buildBase64(true), 'base64')), {}).exports;
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
/** Values and bytes per block, and where its f16 scales sit. */
const BLOCKS = { q8_0: { B: 32, bytes: 34, scales: [0] }, q4_k: { B: 256, bytes: 144, scales: [0, 2] } };
const TOTAL = 96 << 20, N = Number(arg('--n', 1024)), Ks = arg('--k', '768,1280,2048,3072,4096,5120,6144,8192').split(',').map(Number);
inst.memory.grow(Math.ceil((TOTAL + (8 << 20)) / 65536));
let seed = 1;
const bytes = new Uint8Array(inst.memory.buffer, 0, TOTAL);
for (let i = 0; i < bytes.length; i++) bytes[i] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
console.log(`GB/s of weights streamed, M = 1, N = ${N}; load ${os.loadavg()[0].toFixed(1)}`);
for (const t of arg('--types', 'q8_0,q4_k').split(',')) {
  const { B, bytes: size, scales } = BLOCKS[t];
  for (const K of Ks) {
    const nb = K / B, rs = nb * size, whole = N * rs, copies = Math.floor(TOTAL / whole), mem = new Uint8Array(inst.memory.buffer);
    for (let b = 0; b < copies * N * nb; b++) for (const o of scales) { mem[b * size + o] = 0; mem[b * size + o + 1] = 0x2c; }
    // Scratch above the weights: activations, their quants (split Q8_0: 2 bytes a value), scales, sums, kernel scratch, outputs.
    const xf = TOTAL, xq = xf + 4 * K, xd = xq + 2 * K, xs = xd + 4 * K, xsf = xs + 4 * K, sc = xsf + 4 * K, y = sc + 48 * nb;
    const x = new Float32Array(inst.memory.buffer, xf, K);
    for (let k = 0; k < K; k++) x[k] = Math.sin(0.37 * k);
    if (t === 'q8_0') inst.quant_q8_0(xf, K, xq, xd, 1); else inst.quant_q8_k(xf, K, xq, xd, xs, xsf);
    const best = { 1: Infinity, 2: Infinity };
    for (let r = 0; r < 8; r++) {
      for (const R of r % 2 ? [1, 2] : [2, 1]) {
        const kernel = inst[`${t}_${R}`], t0 = cpu();
        for (let c = 0; c < copies; c++) kernel(c * whole, rs, N, nb, xq, 1, y, N, xd, xs, sc);
        best[R] = Math.min(best[R], (cpu() - t0) / copies);
      }
    }
    const gbs = (R) => (whole / best[R] / 1e9).toFixed(1);
    console.log(`${t} K = ${K} (two rows ${2 * rs} bytes): one row ${gbs(1)} GB/s, two rows ${gbs(2)} GB/s, ${(best[1] / best[2]).toFixed(2)}×`);
  }
}
