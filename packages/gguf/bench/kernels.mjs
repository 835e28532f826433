// Nanoseconds per 32 weights of the relaxed matrix-vector kernels (kernels/decode.wat.mjs) alone,
// M = 1, in CPU time: each shape's product repeated on random blocks resident in the module's
// memory (best of 3), the last shape (131072 rows, 107 MB of Q8_0) streamed from memory. --subnormal
// gives every block f16-subnormal scales (as small weights have). Built from kernels.wat.mjs, so
// it measures the source as it is (no build needed). Prints the load average.
//   node --experimental-wasm-relaxed-simd packages/gguf/bench/kernels.mjs [--types q8_0,q4_k,q6_k] [--shapes 768x768,131072x768] [--subnormal]
import os from 'node:os';
import v8 from 'node:v8';
import { buildBase64 } from '../src/kernels/generate.mjs';

const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i >= 0 ? process.argv[i + 1] : dflt; };
const types = arg('--types', 'q8_0,q4_k,q6_k').split(',');
const shapes = arg('--shapes', '768x768,3072x768,768x3072,131072x768').split(',').map((s) => s.split('x').map(Number));
/** High byte of the f16 scales: 0x2c00 = 0.0625, or 0x0100 (a subnormal). */
const scaleHigh = process.argv.includes('--subnormal') ? 0x01 : 0x2c;
v8.setFlagsFromString('--no-wasm-dynamic-tiering');
const inst = new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(await buildBase64(true), 'base64')), {}).exports;
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
/** Values and bytes per block, and where its f16 scales sit. */
const BLOCKS = { q8_0: { B: 32, bytes: 34, scales: [0] }, q4_k: { B: 256, bytes: 144, scales: [0, 2] }, q6_k: { B: 256, bytes: 210, scales: [208] } };
const maxBytes = Math.max(...shapes.map(([N, K]) => N * K * 34 / 32));
inst.memory.grow(Math.ceil((maxBytes + (1 << 20)) / 65536));
let seed = 1;
const bytes = new Uint8Array(inst.memory.buffer, 0, maxBytes);
for (let i = 0; i < bytes.length; i++) bytes[i] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
console.log(`ns per 32 weights, M = 1 (${scaleHigh === 0x2c ? 'normal' : 'subnormal'} f16 scales); load ${os.loadavg()[0].toFixed(1)}`);
for (const t of types) {
  const { B, bytes: size, scales } = BLOCKS[t], row = [];
  for (const [N, K] of shapes) {
    const nb = K / B, rs = nb * size, mem = new Uint8Array(inst.memory.buffer);
    for (let b = 0; b < N * nb; b++) for (const o of scales) { mem[b * size + o] = 0; mem[b * size + o + 1] = scaleHigh; }
    // Scratch above the weights: activations, their quants (split Q8_0: 2 bytes a value), scales, sums, outputs, kernel scratch.
    const xf = maxBytes, xq = xf + 4 * K, xd = xq + 2 * K, xs = xd + 4 * K, xsf = xs + 4 * K, sc = xsf + 4 * K, y = sc + 4 * K;
    const x = new Float32Array(inst.memory.buffer, xf, K);
    for (let k = 0; k < K; k++) x[k] = Math.sin(0.37 * k);
    if (t === 'q8_0') inst.quant_q8_0(xf, K, xq, xd, 1); else inst.quant_q8_k(xf, K, xq, xd, xs, xsf);
    const kernel = inst[`${t}_1`], reps = Math.max(3, Math.round(3e8 / (N * K)));
    kernel(0, rs, N, nb, xq, 1, y, N, xd, xs, sc);
    let best = Infinity;
    for (let r = 0; r < 3; r++) {
      const t0 = cpu();
      for (let i = 0; i < reps; i++) kernel(0, rs, N, nb, xq, 1, y, N, xd, xs, sc);
      best = Math.min(best, (cpu() - t0) / reps);
    }
    row.push(`[${N}, ${K}] ${(best / (N * K / 32) * 1e9).toFixed(2)}`);
  }
  console.log(`${t}: ${row.join(' | ')}`);
}
