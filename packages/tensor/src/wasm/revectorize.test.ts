// `--experimental-wasm-revectorize` (on in compileOptimized unless APERTUS_REVECTORIZE=0) must not
// change a bit: the same script — GEMMs of every shape class (dot_nt rows, packed tiles, edges,
// transposes, accumulation, bf16 weights), the products of every weight dtype, softmax, RMSNorm
// and attention on the cpu backend — runs in two processes of the built package, one with the
// flag and one without, and the sha256 of every output must agree.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const DIST = path.join(import.meta.dirname, '../../dist/index.js');

const SCRIPT = `
import { createHash } from 'node:crypto';
import * as t from ${JSON.stringify(DIST)};
let s = 7;
const rnd = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5;
const hash = (a) => createHash('sha256').update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength)).digest('hex').slice(0, 16);
const out = [];
t.setGemmThreads(2);
for (const [M, N, K, tA, tB, beta] of [[1, 1, 1, false, true, 0], [3, 37, 19, false, true, 0], [7, 13, 5, false, false, 0.5], [33, 65, 17, true, false, 1],
    [64, 200, 96, false, true, 0], [128, 768, 768, false, true, 0], [130, 129, 513, false, false, 0], [300, 40, 1030, true, true, 0]]) {
  const A = Float32Array.from({ length: M * K }, rnd), B = Float32Array.from({ length: N * K }, rnd), C = Float32Array.from({ length: M * N }, rnd);
  t.sgemm({ transA: tA, transB: tB, M, N, K, A, B, C, beta });
  out.push('gemm ' + [M, N, K, tA, tB, beta].join(',') + ' ' + hash(C));
  const Bh = Uint16Array.from({ length: N * K }, () => t.f32ToBf16Bits(rnd()));
  const D = new Float32Array(M * N);
  t.sgemmBf16({ transA: false, transB: true, M, N, K, A, B: Bh, C: D });
  out.push('bf16 ' + [M, N, K].join(',') + ' ' + hash(D));
}
for (const [name, f] of Object.entries(t.QUANT_FORMATS)) {
  const N = 45, K = 2 * f.blockValues * (f.blockValues === 32 ? 8 : 1), bytes = Uint8Array.from({ length: (N * K / f.blockValues) * f.blockBytes }, () => Math.floor((rnd() + 0.5) * 256));
  for (let o = 0; o < bytes.length; o += f.blockBytes) for (let k = 0; k < f.blockBytes; k += f.blockBytes) { const h = t.f32ToF16Bits(rnd() * 1e-2); bytes[o + (f.blockValues === 32 ? 0 : f.blockBytes - 2)] = h & 255; bytes[o + (f.blockValues === 32 ? 1 : f.blockBytes - 1)] = h >> 8; }
  const w = t.weightTensor(name, [N, K], bytes);
  for (const M of [1, 5, 17]) { const x = t.Tensor.from(Float32Array.from({ length: M * K }, rnd), [M, K]); out.push(name + ' ' + M + ' ' + hash(t.linear(x, w).data)); }
}
for (const dtype of ['f32', 'bf16', 'f16']) {
  const N = 77, K = 264, vals = Float32Array.from({ length: N * K }, rnd);
  const bytes = dtype === 'f32' ? new Uint8Array(vals.buffer) : new Uint8Array(Uint16Array.from(vals, (v) => dtype === 'bf16' ? t.f32ToBf16Bits(v) : t.f32ToF16Bits(v)).buffer);
  const w = t.weightTensor(dtype, [N, K], bytes);
  for (const M of [1, 3, 40]) { const x = t.Tensor.from(Float32Array.from({ length: M * K }, rnd), [M, K]); out.push(dtype + ' ' + M + ' ' + hash(t.linear(x, w).data)); }
}
const x = t.Tensor.from(Float32Array.from({ length: 6 * 96 }, rnd), [6, 96]), g = t.Tensor.from(Float32Array.from({ length: 96 }, rnd), [96]);
out.push('softmax ' + hash(t.softmax(x).data), 'rmsnorm ' + hash(t.rmsnorm(x, g, 1e-5).data));
const q = t.Tensor.from(Float32Array.from({ length: 2 * 4 * 17 * 32 }, rnd), [2, 4, 17, 32]);
out.push('attention ' + hash(t.attention(q, q, q, { causal: true }).data));
console.log(JSON.stringify(out));
`;

function run(revectorize: boolean): string[] {
  const env = { ...process.env, APERTUS_REVECTORIZE: revectorize ? '1' : '0' };
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', SCRIPT], { env, encoding: 'utf8' }).trim()) as string[];
}

describe('revectorize', () => {
  it('gives the same bits as the plain code for the GEMM, every product dtype and the cpu row kernels', () => {
    const on = run(true), off = run(false);
    expect(on.length).toBeGreaterThan(40);
    expect(on).toEqual(off);
  }, 120_000);
});
