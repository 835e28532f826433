// Embedding, RoPE, the optimizer updates, clipping's reductions and xIELU on the device, against
// the reference kernels (float64 inside, rounded where stored) within bounds from the kernels'
// float32 operations (`Rounded`: straight-line error propagation).
import { describe, expect, test } from 'vitest';
import { expectWithin, randomF32, randomI32, Rounded, SLACK, U32 } from '../../kernels/float-testing';
import { jsKernels } from '../../kernels/js/index';
import { webgpuForSuite } from '../testing';

describe('embedding, RoPE, updates and xIELU on the device', { timeout: 240_000 }, () => {
  const { ks, host } = webgpuForSuite();

  test('embedding gathers exactly; its backward sums each id\'s rows in token order', () => {
    const V = 50, H = 33, ids = randomI32(70, 1, 0, V);
    ids[3] = ids[9] = ids[20] = 7;
    const table = randomF32(V * H, 2), out = new Float32Array(70 * H), out0 = new Float32Array(70 * H);
    ks().embedding!(ids, table, H, out);
    host(out);
    jsKernels.embedding(ids, table, H, out0);
    expect(Array.from(out)).toEqual(Array.from(out0));
    const gy = randomF32(70 * H, 3), g = new Float32Array(V * H).fill(9), g0 = new Float32Array(V * H);
    ks().embeddingBackward!(ids, gy, H, g);
    host(g);
    jsKernels.embeddingBackward(ids, gy, H, g0);
    // The same additions in the same order as the reference (which sums in float32 too).
    expect(Array.from(g)).toEqual(Array.from(g0));
  });

  test('RoPE and its inverse, at positions up to 131071 (the table grows by doubling)', () => {
    const N = 6, heads = 3, d = 16, half = d / 2;
    const invFreq = Float32Array.from({ length: half }, (_, i) => Math.fround(500000 ** (-(2 * i) / d)));
    const x = randomF32(N * heads * d, 4);
    for (const positions of [Int32Array.of(0, 1, 2, 3, 4, 5), Int32Array.of(7, 4095, 4096, 70000, 131071, 9)]) {
      for (const inverse of [false, true]) {
        const y = new Float32Array(x.length), y0 = new Float32Array(x.length);
        ks().rope!(x, N, heads, d, positions, invFreq, inverse, y);
        host(y);
        jsKernels.rope(x, N, heads, d, positions, invFreq, inverse, y0);
        // x1·c − x2·s: two products and a difference in float32 (the reference rounds once), with c, s the same float32 table values.
        const bound = Float64Array.from(y0, (v, i) => {
          const o = i - (i % d), j = i % half;
          return SLACK * U32 * (Math.abs(x[o + j]!) + Math.abs(x[o + j + half]!) + 2 * Math.abs(v));
        });
        expectWithin(y, y0, bound, `rope positions ${positions[1]} inverse ${inverse}`);
      }
    }
  });

  test('AdEMAMix and AdamW update parameter and state in place', () => {
    const n = 1000;
    const s = { beta1: 0.9, beta2: 0.999, beta3: 0.9999, alpha: 8, bc1: 0.19, bc2: 0.002, eps: 1e-8, weightDecay: 0.1, lr: 3e-3 };
    for (const fast of [true, false]) {
      const init = () => ({ param: randomF32(n, 5), grad: randomF32(n, 6, -0.1, 0.1), m1: fast ? randomF32(n, 7, -0.01, 0.01) : null, m2: randomF32(n, 8, -0.01, 0.01), nu: randomF32(n, 9, 0, 1e-4) });
      const a = init(), b = init(), before = init();
      ks().ademamixUpdate!({ ...a, ...s });
      host(a.param, a.m2, a.nu, ...(a.m1 ? [a.m1] : []));
      jsKernels.ademamixUpdate({ ...b, ...s });
      const bounds = { param: new Float64Array(n), m1: new Float64Array(n), m2: new Float64Array(n), nu: new Float64Array(n) };
      const P = Rounded.param;
      for (let i = 0; i < n; i++) {
        const g = Rounded.exact(before.grad[i]!);
        const m1 = fast ? Rounded.exact(before.m1![i]!).mul(P(s.beta1)).add(g.mul(Rounded.exact(1).sub(P(s.beta1)))) : g;
        const m2 = Rounded.exact(before.m2[i]!).mul(P(s.beta3)).add(g.mul(Rounded.exact(1).sub(P(s.beta3))));
        const nu = Rounded.exact(before.nu[i]!).mul(P(s.beta2)).add(Rounded.exact(1).sub(P(s.beta2)).mul(g).mul(g));
        const w = Rounded.exact(before.param[i]!);
        const u = m1.div(P(s.bc1)).add(P(s.alpha).mul(m2)).div(nu.sqrt().div(P(Math.sqrt(s.bc2))).add(P(s.eps))).add(w.mul(P(s.weightDecay)));
        const p = w.sub(P(s.lr).mul(u));
        // Each stored value: its propagated error and the reference's own rounding.
        bounds.param[i] = SLACK * (p.e + U32 * Math.abs(p.v));
        bounds.m1[i] = SLACK * (m1.e + U32 * Math.abs(m1.v));
        bounds.m2[i] = SLACK * (m2.e + U32 * Math.abs(m2.v));
        bounds.nu[i] = SLACK * (nu.e + U32 * Math.abs(nu.v));
      }
      expectWithin(a.param, b.param, bounds.param, `AdEMAMix param (m1: ${fast})`);
      expectWithin(a.m2, b.m2, bounds.m2, 'AdEMAMix m2');
      expectWithin(a.nu, b.nu, bounds.nu, 'AdEMAMix nu');
      if (fast) expectWithin(a.m1!, b.m1!, bounds.m1, 'AdEMAMix m1');
    }
    const t = { beta1: 0.9, beta2: 0.95, bc1: 0.1, bc2: 0.05, eps: 1e-8, weightDecay: 0.1, lr: 1e-3 };
    const init = () => ({ param: randomF32(n, 10), grad: randomF32(n, 11, -0.1, 0.1), m: randomF32(n, 12, -0.01, 0.01), v: randomF32(n, 13, 0, 1e-4) });
    const a = init(), b = init(), before = init();
    ks().adamwUpdate!({ ...a, ...t });
    host(a.param, a.m, a.v);
    jsKernels.adamwUpdate({ ...b, ...t });
    const bp = new Float64Array(n), bm = new Float64Array(n), bv = new Float64Array(n), P = Rounded.param;
    for (let i = 0; i < n; i++) {
      const g = Rounded.exact(before.grad[i]!);
      const m = Rounded.exact(before.m[i]!).mul(P(t.beta1)).add(g.mul(Rounded.exact(1).sub(P(t.beta1))));
      const v = Rounded.exact(before.v[i]!).mul(P(t.beta2)).add(Rounded.exact(1).sub(P(t.beta2)).mul(g).mul(g));
      const p = Rounded.exact(before.param[i]!).mul(P(1 - t.lr * t.weightDecay)).add(P(-t.lr / t.bc1).mul(m).div(v.sqrt().div(P(Math.sqrt(t.bc2))).add(P(t.eps))));
      bp[i] = SLACK * (p.e + U32 * Math.abs(p.v));
      bm[i] = SLACK * (m.e + U32 * Math.abs(m.v));
      bv[i] = SLACK * (v.e + U32 * Math.abs(v.v));
    }
    expectWithin(a.param, b.param, bp, 'AdamW param');
    expectWithin(a.m, b.m, bm, 'AdamW m');
    expectWithin(a.v, b.v, bv, 'AdamW v');
  });

  test('sumSquares accumulates in place or into a new value; scaleBy in place and not', () => {
    for (const n of [0, 1, 300, 100_000]) {
      const x = randomF32(n, n + 1);
      const sq = Array.from(x, (v) => v * v), exact = sq.reduce((a, v) => a + v, 0);
      // Two passes of workgroup sums: every square through ⌈n/threads⌉ + 32 + ⌈groups/256⌉ + 32 additions.
      const groups = Math.max(1, Math.min(1024, Math.ceil(n / 4096)));
      const bound = (acc: number) => SLACK * (U32 * (1 + Math.ceil(n / (256 * groups)) + 64 + Math.ceil(groups / 256)) * exact + U32 * (exact + acc));
      const acc = Float32Array.of(2.5);
      ks().sumSquares!(x, acc, acc);
      host(acc);
      expectWithin(acc, [2.5 + exact], [bound(2.5)], `sumSquares in place n=${n}`);
      const out = new Float32Array(1);
      ks().sumSquares!(x, null, out);
      host(out);
      expectWithin(out, [exact], [bound(0)], `sumSquares n=${n}`);
      const y = new Float32Array(n), y0 = new Float32Array(n);
      ks().scaleBy!(x, 0.3, y);
      host(y);
      jsKernels.scaleBy(x, 0.3, y0);
      expectWithin(y, y0, Float64Array.from(y0, (v) => SLACK * 3 * U32 * Math.abs(v)), 'scaleBy');
      ks().scaleBy!(x, 0.3, x);
      host(x);
      expectWithin(x, y0, Float64Array.from(y0, (v) => SLACK * 3 * U32 * Math.abs(v)), 'scaleBy in place');
    }
  });

  test('xIELU forward and backward with its parameter sums, on both sides of 0 and ε', () => {
    // β and ε as the model holds them: float32 buffers (read with item()).
    const n = 20_000, beta = 0.5, eps = Math.fround(-1e-6);
    const x = randomF32(n, 14, -4, 3);
    x[0] = 0; x[1] = -1e-7; x[2] = -1e-6; x[3] = -2e-6; x[4] = 1e-7;
    const ap = Float32Array.of(0.8), spn = Float32Array.of(0.3), an = beta + 0.3;
    const y = new Float32Array(n), y0 = new Float32Array(n);
    ks().xielu!(x, ap, spn, beta, eps, y);
    host(y);
    jsKernels.xielu(x, ap, spn, beta, eps, y0);
    const expm1 = (m: number) => new Rounded(Math.expm1(m), (Math.abs(m) < 0.34657359 ? 3 : 3 * Math.exp(m) / Math.max(Math.abs(Math.expm1(m)), 1e-300) + 1) * U32 * Math.abs(Math.expm1(m)));
    const fwd = (v: number) => {
      const X = Rounded.exact(v);
      if (v > 0) return X.mul(Rounded.exact(0.8).mul(X).add(beta));
      return Rounded.param(beta).add(0.3).mul(expm1(Math.min(v, eps)).sub(X)).add(Rounded.param(beta).mul(X));
    };
    expectWithin(y, y0, Float64Array.from(x, (v, i) => { const r = fwd(v); return SLACK * (r.e + U32 * Math.abs(y0[i]!)); }), 'xielu');
    const gy = randomF32(n, 15), gx = new Float32Array(n), gx0 = new Float32Array(n);
    const sP = new Float32Array(1), sN = new Float32Array(1), sP0 = new Float32Array(1), sN0 = new Float32Array(1);
    ks().xieluBackward!(x, gy, ap, spn, beta, eps, gx, sP, sN);
    host(gx, sP, sN);
    jsKernels.xieluBackward(x, gy, ap, spn, beta, eps, gx0, sP0, sN0);
    const bgx = Float64Array.from(x, (v, i) => {
      const g = Rounded.exact(gy[i]!);
      const d = v > 0 ? Rounded.exact(2).mul(0.8).mul(v).add(beta) : v > eps ? Rounded.param(beta).sub(Rounded.param(beta).add(0.3)) : Rounded.param(beta).add(0.3).mul(expm1(v)).add(beta);
      return SLACK * (g.mul(d).e + U32 * Math.abs(gx0[i]!));
    });
    expectWithin(gx, gx0, bgx, 'xieluBackward gx');
    const pTerms: number[] = [], nTerms: number[] = [], nErr: number[] = [];
    for (let i = 0; i < n; i++) {
      const v = x[i]!, g = gy[i]!;
      if (v > 0) pTerms.push(g * v * v);
      else { const e = expm1(Math.min(v, eps)); nTerms.push(g * (e.v - v)); nErr.push(Math.abs(g) * (e.e + U32 * Math.abs(e.v - v))); }
    }
    const groups = Math.max(1, Math.min(1024, Math.ceil(n / 4096)));
    const depth = Math.ceil(n / (256 * groups)) + 64 + Math.ceil(groups / 256);
    const sumBound = (t: number[], extra: number, c: number) => SLACK * (U32 * (c + depth) * t.reduce((a, v) => a + Math.abs(v), 0) + extra + U32 * Math.abs(t.reduce((a, v) => a + v, 0)));
    expectWithin(sP, sP0, [sumBound(pTerms, 0, 2)], 'xielu sumP');
    expectWithin(sN, sN0, [sumBound(nTerms, nErr.reduce((a, v) => a + v, 0), 1)], 'xielu sumN');
  });
});
