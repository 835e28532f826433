// The wide micro-tiles (6 x 16 and 4 x 16, compiled with V8's revectorizer: 256-bit code) must
// give the bits of the plain 128-bit kernels (6 x 8 and 4 x 8, compiled without it). The same
// script runs in child processes, one with APERTUS_REVECTORIZE=0 (what runs where the switch is
// off) and one with the default (on), for both variants; every output's sha256 must agree. The
// script covers the packed GEMM's edges (partial tiles in both directions, several MC, NC and KC
// blocks, every transpose, alpha, beta, bf16 B, staged and in-place operands, 1 and 2 threads) and
// the ops built on it (attention and its backward, a linear layer's gradients, the fused LM-head loss).
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, '../../../node_modules/.cache/gemm-wide-test');
const outfile = join(outDir, 'wide.mjs');

const script = `
import { createHash } from 'node:crypto';
import * as t from ${JSON.stringify(join(here, '../../index.ts'))};
let s = 7;
const rnd = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5;
const fill = (n) => Float32Array.from({ length: n }, rnd);
const hash = (a) => createHash('sha256').update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength)).digest('hex').slice(0, 16);
const out = [];
for (const threads of [1, 2]) {
  t.setGemmThreads(threads);
  for (const [M, N, K, tA, tB, alpha, beta] of [[7, 17, 5, false, false, 1, 0], [13, 33, 530, false, true, 1, 0], [40, 1030, 64, false, false, 0.5, 1],
      [265, 47, 1100, true, false, 1, 0], [100, 200, 96, true, true, 1, 0.5], [300, 2100, 40, false, true, 1, 0], [33, 129, 513, false, false, 2, 0]]) {
    const A = fill(M * K), B = fill(N * K), C = fill(M * N);
    t.sgemm({ transA: tA, transB: tB, M, N, K, A, B, C, alpha, beta });
    out.push('gemm ' + [threads, M, N, K, tA, tB, alpha, beta].join(',') + ' ' + hash(C));
    const Bh = Uint16Array.from(B, (v) => t.f32ToBf16Bits(v)), D = new Float32Array(M * N);
    t.sgemmBf16({ transA: tA, transB: tB, M, N, K, A, B: Bh, C: D });
    out.push('bf16 ' + [threads, M, N, K, tA, tB].join(',') + ' ' + hash(D));
  }
  // Tensor operands live on the cpu heap: the in-place path.
  const x = t.Tensor.from(fill(70 * 96), [70, 96]).requireGrad(), w = t.Tensor.from(fill(130 * 96), [130, 96]).requireGrad();
  const y = t.linear(x, w);
  t.backward(t.sum(t.mul(y, y)));
  out.push('linear ' + threads + ' ' + hash(y.data) + ' ' + hash(x.grad.data) + ' ' + hash(w.grad.data));
  const q = t.Tensor.from(fill(2 * 4 * 70 * 32), [2, 4, 70, 32]).requireGrad(), k = t.Tensor.from(fill(2 * 2 * 70 * 32), [2, 2, 70, 32]).requireGrad();
  const v = t.Tensor.from(fill(2 * 2 * 70 * 32), [2, 2, 70, 32]).requireGrad();
  const o = t.attention(q, k, v, { causal: true });
  t.backward(t.sum(t.mul(o, o)));
  out.push('attention ' + threads + ' ' + [o.data, q.grad.data, k.grad.data, v.grad.data].map(hash).join(' '));
  const h = t.Tensor.from(fill(50 * 64), [50, 64]).requireGrad(), head = t.Tensor.from(fill(300 * 64), [300, 64]).requireGrad();
  const targets = t.Tensor.ints(Array.from({ length: 50 }, (_, i) => (i * 37) % 300), [50]);
  const loss = t.linearCrossEntropy(h, head, targets);
  t.backward(loss);
  out.push('lm-head ' + threads + ' ' + hash(loss.data) + ' ' + hash(h.grad.data) + ' ' + hash(head.grad.data));
}
console.log(JSON.stringify({ tile: t.gemmKernelInfo().microTile, out }));
process.exit(0);
`;

function run(env: Record<string, string>): { tile: string; out: string[] } {
  const stdout = execFileSync(process.execPath, [outfile], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 150_000 });
  return JSON.parse(stdout.trim().split('\n').pop()!) as { tile: string; out: string[] };
}

describe('the wide micro-tiles (256-bit code) give the bits of the 128-bit kernels', { timeout: 180_000 }, () => {
  beforeAll(async () => {
    mkdirSync(outDir, { recursive: true });
    await build({ stdin: { contents: script, resolveDir: here, loader: 'ts' }, bundle: true, platform: 'node', format: 'esm', outfile, external: ['gpu.js', 'webgpu'], logLevel: 'error' });
  }, 60_000);

  it.each([['fma', '6x8', '6x16'], ['simd', '4x8', '4x16']])('APERTUS_GEMM=%s: %s without the revectorizer, %s with it, the same bits', (gemm, narrow, wide) => {
    const plain = run({ APERTUS_GEMM: gemm, APERTUS_REVECTORIZE: '0' });
    const revectorized = run({ APERTUS_GEMM: gemm, APERTUS_REVECTORIZE: '1' });
    expect(plain.tile).toBe(narrow);
    expect(revectorized.tile).toBe(wide);
    expect(plain.out.length).toBe(2 * (2 * 7 + 3));
    expect(revectorized.out).toEqual(plain.out);
  });
});
