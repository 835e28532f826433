// The paged attention gpu.js kernels in `webgpu` mode (WGSL through Dawn; SwiftShader without a
// GPU) against the reference kernel, every output element within an error bound derived from the
// kernels' float32 operations. A missing adapter fails the suite (webgpuKernelsForSuite).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AttentionCase, eachQueryHead, pagesOf, scoreTerms } from '../../ops/test-util';
import { Rng } from '../../random';
import { kernelSet } from '../types';
import { expectAllRanIn, expectWithin, SLACK, sumErrorBound, U32, webgpuKernelsForSuite } from './testing';

const jsKernels = kernelSet('reference');

const u = U32;
/** WGSL lets an implementation flush subnormal intermediates to zero: one such loss per weight. */
const FLUSH = 2 ** -126;
/** Runs of the property (raised ×20 once locally: `PAGED_WEBGPU_RUNS=160`). */
const RUNS = Number(process.env.PAGED_WEBGPU_RUNS ?? 8);

/**
 * Per-element bound of the two forward kernels (attention.ts) against the float64 reference, for
 * query t (n = qOffset + t + 1 keys) and head h, in the kernels' operations:
 *  - score ẑ_s = fl(fl(q·k_s)·scale): the dot's float32 sum (sumErrorBound, one rounding per
 *    product) times scale, and two roundings u·|z| → δz_s; the running max m̂ is off by max δz;
 *  - lse = m + ln l by the online recurrence: WGSL's exp is within 3 + 2|x| ulp (≤ (6 + 4|x|)·u
 *    relative) of a float32 argument rounded by u·|x|; each term exp(z_s − m) carries that with
 *    |x| ≤ Z = max_s |z_s − m| and both scores' errors; at most n rescalings of l (an exp of
 *    |Δm| summing to ≤ Z, and a product) and n additions; WGSL's ln is within 2⁻²¹ absolute on
 *    [0.5, 2] and 3 ulp elsewhere (l ≥ 1); m + ln l rounds u·|lse|;
 *  - out = Σ_s exp(ẑ_s − lse)·v_s: each weight relatively off by δz_s + e_lse + u·|x| +
 *    (6 + 4|x|)·u (x = z_s − lse) and the product's u, possibly flushed below 2⁻¹²⁶; the float32
 *    sum in key order (sumErrorBound); the reference's rounding u·|out|. SLACK covers second-order terms.
 */
function webgpuBound(a: AttentionCase, ref: Float32Array): Float64Array {
  const { d, scale, v, nkv } = a;
  const bound = new Float64Array(a.T * a.nh * d);
  eachQueryHead(a, (n, g, qo) => {
    const z: number[] = [], dz: number[] = [];
    for (let s = 0; s < n; s++) {
      const prods = scoreTerms(a, qo, g, s), zs = prods.reduce((x, y) => x + y, 0) * scale;
      z.push(zs);
      dz.push(scale * sumErrorBound(prods, 1) + 2 * u * Math.abs(zs));
    }
    const m = Math.max(...z), dm = Math.max(...dz), Z = Math.max(...z.map((x) => m - x));
    const p = z.map((x) => Math.exp(x - m)), l = p.reduce((x, y) => x + y, 0), lse = m + Math.log(l);
    let relL = 0;
    z.forEach((x, s) => { relL += (p[s]! / l) * (dz[s]! + dm + u * (m - x) + (6 + 4 * (m - x)) * u); });
    relL += (7 * n + 5 * Z) * u + n * u;
    const eL = dm + relL + 2 ** -21 + 6 * u * Math.abs(Math.log(l)) + u * Math.abs(lse);
    for (let e = 0; e < d; e++) {
      const terms: number[] = [];
      let err = 0;
      z.forEach((x, s) => {
        const ve = v[(s * nkv + g) * d + e]!, tv = Math.exp(x - lse) * ve, ax = lse - x;
        terms.push(tv);
        err += Math.abs(tv) * (dz[s]! + eL + u * ax + (6 + 4 * ax) * u + u) + FLUSH * Math.abs(ve);
      });
      bound[qo + e] = SLACK * (err + sumErrorBound(terms) + u * Math.abs(ref[qo + e]!));
    }
  });
  return bound;
}

// SwiftShader compiles and runs every WGSL kernel on the CPU: allow for a loaded CI machine.
describe('paged attention in webgpu mode', { timeout: 240_000 }, () => {
  const kernels = webgpuKernelsForSuite();

  it('matches the reference within the float32 bound of its kernels: GQA, any block size, prefill and decode rows (property)', async () => {
    await fc.assert(fc.asyncProperty(
      fc.record({
        T: fc.integer({ min: 1, max: 4 }), past: fc.integer({ min: 0, max: 20 }), nkv: fc.integer({ min: 1, max: 2 }), rep: fc.constantFrom(1, 2),
        d: fc.constantFrom(4, 8, 16), bs: fc.constantFrom(4, 8, 16), pad: fc.integer({ min: 0, max: 3 }), seed: fc.integer(),
      }),
      async ({ T, past, nkv, rep, d, bs, pad, seed }) => {
        const r = new Rng(seed), nh = nkv * rep, S = past + T, row = nkv * d;
        const rnd = (n: number) => Float32Array.from({ length: n }, () => r.normal());
        const c: AttentionCase = { T, nh, nkv, d, scale: 1 / Math.sqrt(d), qOffset: past, q: rnd(T * nh * d), k: rnd(S * row), v: rnd(S * row) };
        // Rows past S in the last block are NaN: no kernel may read them.
        const kv = pagesOf(c.k, c.v, S, nkv, d, bs, pad, false);
        const args = (out: Float32Array) => ({ T, nh, d, q: c.q, kv, scale: c.scale, qOffset: past, out });
        const got = new Float32Array(T * nh * d).fill(NaN), ref = new Float32Array(T * nh * d);
        await kernels().pagedAttention(args(got));
        jsKernels.pagedAttention(args(ref));
        expectWithin(got, ref, webgpuBound(c, ref), 'out');
      }), { numRuns: RUNS });
  });

  it('builds its kernels once per block count: decoding through a block reuses them', async () => {
    const r = new Rng(4), nh = 2, d = 8, bs = 8, S = 16;
    const k = Float32Array.from({ length: S * d }, () => r.normal()), v = Float32Array.from({ length: S * d }, () => r.normal());
    const kv = pagesOf(k, v, S, 1, d, bs, 0, false);
    const before = Object.keys(kernels().builtKernels()).length;
    for (let past = 8; past < 16; past++) {
      await kernels().pagedAttention({ T: 1, nh, d, q: Float32Array.from({ length: nh * d }, () => r.normal()), kv, scale: 0.3, qOffset: past, out: new Float32Array(nh * d) });
    }
    expect(Object.keys(kernels().builtKernels()).length - before).toBeLessThanOrEqual(2);
  });

  it('ran every kernel in webgpu', () => {
    expectAllRanIn(kernels(), 'webgpu', 2);
  });
});
