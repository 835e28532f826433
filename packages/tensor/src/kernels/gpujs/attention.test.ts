// gpu.js fused attention (forward + backward) against the JS reference kernels, and a finite-difference check.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { kernelSet } from '../types';
import type { AttentionArgs, AttentionBackwardArgs, F32 } from '../types';
import { createGpujsKernels } from './index';
import { expectAllRanIn, expectWithin, randomF32, SLACK, sumErrorBound, U32 } from './testing';

const jsKernels = kernelSet('reference');

interface Case { B: number; T: number; extra: number; nkv: number; rep: number; d: number; docs: boolean; seed: number }

const caseArb: fc.Arbitrary<Case> = fc.record({
  B: fc.integer({ min: 1, max: 2 }),
  T: fc.integer({ min: 1, max: 6 }),
  extra: fc.integer({ min: 0, max: 4 }), // cached keys before the queries: S = T + extra, qOffset = extra
  nkv: fc.integer({ min: 1, max: 2 }),
  rep: fc.constantFrom(1, 2, 3),
  d: fc.integer({ min: 1, max: 9 }),
  docs: fc.boolean(),
  seed: fc.nat(),
});

/** Random document ids that only grow along a sequence (packed documents), shared by q and k positions. */
function docIds(B: number, S: number, seed: number): Int32Array {
  const ids = new Int32Array(B * S);
  const r = randomF32(B * S, seed, 0, 1);
  for (let b = 0; b < B; b++) {
    let doc = 0;
    for (let s = 0; s < S; s++) {
      if (s > 0 && r[b * S + s]! < 0.3) doc++;
      ids[b * S + s] = doc;
    }
  }
  return ids;
}

function makeArgs(c: Case): AttentionArgs {
  const { B, T, d, nkv, rep } = c;
  const S = T + c.extra;
  const nh = nkv * rep;
  const a: AttentionArgs = {
    B, T, S, nh, nkv, d,
    q: randomF32(B * T * nh * d, c.seed, -1.5, 1.5),
    k: randomF32(B * S * nkv * d, c.seed + 1, -1.5, 1.5),
    v: randomF32(B * S * nkv * d, c.seed + 2),
    scale: 1 / Math.sqrt(d),
    qOffset: c.extra,
    out: new Float32Array(B * T * nh * d),
    lse: new Float32Array(B * nh * T),
  };
  if (c.docs) {
    const docK = docIds(B, S, c.seed + 3);
    a.docK = docK;
    // query t sits at key position qOffset + t
    a.docQ = Int32Array.from({ length: B * T }, (_, i) => docK[Math.floor(i / T) * S + c.extra + (i % T)]!);
  }
  return a;
}

function withGrads(a: AttentionArgs, seed: number): AttentionBackwardArgs {
  return {
    ...a,
    gout: randomF32(a.out.length, seed),
    gq: new Float32Array(a.q.length).fill(NaN), // overwritten, never accumulated
    gk: new Float32Array(a.k.length).fill(NaN),
    gv: new Float32Array(a.v.length).fill(NaN),
  };
}

/** A float32 sum of terms t_k that each carry an error e_k already: Σ e_k + the additions' rounding (in this order). */
class ErrSum {
  readonly terms: number[] = [];
  err = 0;
  add(t: number, e: number): void { this.terms.push(t); this.err += e; }
  bound(): number { return this.err + sumErrorBound(this.terms); }
}

/**
 * Per-element error bounds of the float32 attention kernels (see attention.ts) against the
 * float64 reference, by first-order rounding analysis in the kernels' loop order:
 *  - score z = fl(q·k)·scale: the dot's error (sumErrorBound, one rounding per product) times
 *    scale, + U32·|z| for the product and U32·|z| for scale passed as float32 → dz;
 *  - lse = m + log l: Σ_s p_s·dz_s, the online recurrence's relative error U32·Σ_s(2|z_s − m| + 5)
 *    (exp of a rounded argument, the rescale product, the sum), log and the additions with the
 *    reference's rounding U32·(|log l| + 2|lse|);
 *  - p = exp(z − lse) has relative error dz + U32·(|z − lse| + 1) (+ lse's own error in the forward
 *    pass, where out reads the kernel's lse);
 *  - out, gq, gk, gv are sums of products of these factors: each term's inherited error (ErrSum),
 *    plus the float32 additions in the kernel's order and in the reference's (which accumulates
 *    gk and gv in float32 over (t, h) rather than (h, t)), plus the reference's rounding.
 * D = Σ gout·out and dp = Σ gout·v are float32 dot products (sumErrorBound) feeding dp − D.
 */
function attentionBounds(g0: AttentionBackwardArgs): { lse: Float64Array; out: Float64Array; gq: Float64Array; gk: Float64Array; gv: Float64Array } {
  const { B, T, S, nh, nkv, d, q, k, v, scale, gout, out, lse } = g0;
  const rep = nh / nkv;
  const lseB = new Float64Array(lse.length);
  const outB = new Float64Array(out.length);
  const gqB = new Float64Array(q.length);
  const kvSums = (): ErrSum[] => Array.from({ length: k.length }, () => new ErrSum());
  const gkKernel = kvSums(), gkRef = kvSums(), gvKernel = kvSums(), gvRef = kvSums();
  /** Terms [value, error] of gk and gv per kv element with their (h, t), to replay the kernel's (h outer, t inner) order. */
  const kvTerms: { ht: number; gk: [number, number]; gv: [number, number] }[][] = Array.from({ length: k.length }, () => []);
  const dotB = (a: F32, ao: number, b: F32, bo: number) => {
    const prods = Array.from({ length: d }, (_, e) => a[ao + e]! * b[bo + e]!);
    return { dot: prods.reduce((x, y) => x + y, 0), err: sumErrorBound(prods, 1) };
  };
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < nh; h++) {
        const g = Math.floor(h / rep);
        const qo = ((b * T + t) * nh + h) * d;
        const li = (b * nh + h) * T + t;
        const L = lse[li]!;
        if (L === -Infinity) continue; // no visible key: exact zeros on both sides
        const keys: { s: number; ko: number; z: number; dz: number; p: number }[] = [];
        for (let s = 0; s <= Math.min(S - 1, g0.qOffset + t); s++) {
          if (g0.docQ !== undefined && g0.docK![b * S + s] !== g0.docQ[b * T + t]) continue;
          const ko = ((b * S + s) * nkv + g) * d;
          const { dot, err } = dotB(q, qo, k, ko);
          const z = dot * scale;
          keys.push({ s, ko, z, dz: scale * err + 2 * U32 * Math.abs(z), p: Math.exp(z - L) });
        }
        const m = Math.max(...keys.map((c) => c.z));
        const l = keys.reduce((x, c) => x + Math.exp(c.z - m), 0);
        let relL = 0;
        for (const c of keys) relL += c.p * c.dz + U32 * (2 * Math.abs(c.z - m) + 5);
        const eL = relL + U32 * (Math.abs(Math.log(l)) + 2 * Math.abs(L));
        lseB[li] = SLACK * eL;
        for (let e = 0; e < d; e++) {
          const o = new ErrSum();
          for (const c of keys) {
            const tv = c.p * v[c.ko + e]!;
            o.add(tv, Math.abs(tv) * (c.dz + eL + U32 * (Math.abs(c.z - L) + 2)));
          }
          outB[qo + e] = SLACK * (o.bound() + U32 * Math.abs(out[qo + e]!));
        }
        // Backward, reading the reference's lse and out.
        const D = dotB(gout, qo, out, qo);
        const gqS = Array.from({ length: d }, () => new ErrSum());
        for (const c of keys) {
          const dp = dotB(gout, qo, v, c.ko);
          const cs = dp.dot - D.dot;
          const eC = dp.err + D.err + U32 * Math.abs(cs);
          const epsP = c.dz + U32 * (Math.abs(c.z - L) + 1);
          for (let e = 0; e < d; e++) {
            const ke = k[c.ko + e]!, qe = q[qo + e]!, ge = gout[qo + e]!;
            const tq = c.p * cs * scale * ke;
            gqS[e]!.add(tq, Math.abs(c.p * scale * ke) * eC + Math.abs(tq) * (epsP + 4 * U32));
            const tk = c.p * cs * scale * qe;
            const ekk = Math.abs(c.p * scale * qe) * eC + Math.abs(tk) * (epsP + 4 * U32);
            const tv = c.p * ge;
            const evv = Math.abs(tv) * (epsP + U32);
            const i = c.ko + e;
            gkRef[i]!.add(tk, ekk);
            gvRef[i]!.add(tv, evv);
            kvTerms[i]!.push({ ht: h * T + t, gk: [tk, ekk], gv: [tv, evv] });
          }
        }
        for (let e = 0; e < d; e++) gqB[qo + e] = SLACK * (gqS[e]!.bound() + U32 * Math.abs(g0.gq[qo + e]!));
      }
    }
  }
  const gkB = new Float64Array(k.length);
  const gvB = new Float64Array(k.length);
  for (let i = 0; i < k.length; i++) {
    for (const term of kvTerms[i]!.sort((x, y) => x.ht - y.ht)) {
      gkKernel[i]!.add(...term.gk);
      gvKernel[i]!.add(...term.gv);
    }
    // The kernel's and the reference's errors add up (the inherited errors are counted once).
    gkB[i] = SLACK * (gkKernel[i]!.bound() + sumErrorBound(gkRef[i]!.terms) + U32 * Math.abs(g0.gk[i]!));
    gvB[i] = SLACK * (gvKernel[i]!.bound() + sumErrorBound(gvRef[i]!.terms) + U32 * Math.abs(g0.gv[i]!));
  }
  return { lse: lseB, out: outB, gq: gqB, gk: gkB, gv: gvB };
}

for (const mode of ['webasm', 'cpu'] as const) {
  describe(`attention (${mode})`, () => {
    const ks = createGpujsKernels(mode);
    afterAll(() => ks.dispose());

    it('forward and backward match the reference: GQA, qOffset, document masks (property)', () => {
      fc.assert(fc.property(caseArb, (c) => {
        const a = makeArgs(c);
        const a0 = { ...makeArgs(c) };
        ks.attention(a);
        jsKernels.attention(a0);
        const g = withGrads(a0, c.seed + 9);
        const g0 = withGrads(a0, c.seed + 9);
        ks.attentionBackward(g);
        jsKernels.attentionBackward(g0);
        const bound = attentionBounds(g0);
        expectWithin(a.lse, a0.lse, bound.lse, 'lse');
        expectWithin(a.out, a0.out, bound.out, 'out');
        expectWithin(g.gq, g0.gq, bound.gq, 'gq');
        expectWithin(g.gk, g0.gk, bound.gk, 'gk');
        expectWithin(g.gv, g0.gv, bound.gv, 'gv');
      }), { numRuns: mode === 'cpu' ? 5 : 12 });
    });

    it('a query whose document starts after its own position sees no key: out 0, lse -Infinity, zero grads', () => {
      const c: Case = { B: 1, T: 3, extra: 0, nkv: 1, rep: 1, d: 2, docs: false, seed: 5 };
      const a = makeArgs(c);
      a.docQ = Int32Array.from([0, 1, 0]);
      a.docK = Int32Array.from([0, 0, 1]); // query 1 (doc 1) sees keys 0..1, both doc 0
      ks.attention(a);
      expect(a.lse[1]).toBe(-Infinity);
      expect(Array.from(a.out.subarray(2, 4))).toEqual([0, 0]);
      const g = withGrads(a, 6);
      ks.attentionBackward(g);
      expect(Array.from(g.gq.subarray(2, 4))).toEqual([0, 0]);
      expect(g.gk.every(Number.isFinite)).toBe(true);
    });

    it(`ran every kernel in ${mode} (no silent fallback)`, () => expectAllRanIn(ks, mode, 6));
  });
}

describe('attention backward vs finite differences (cpu mode, float64 arithmetic)', () => {
  it('d(sum(out * gout))/d(q, k, v) matches central differences', () => {
    const ks = createGpujsKernels('cpu');
    const c: Case = { B: 1, T: 3, extra: 1, nkv: 1, rep: 2, d: 3, docs: false, seed: 42 };
    const a = makeArgs(c);
    ks.attention(a);
    const g = withGrads(a, 43);
    ks.attentionBackward(g);
    const f = (args: AttentionArgs) => {
      ks.attention(args);
      let s = 0;
      for (let i = 0; i < args.out.length; i++) s += args.out[i]! * g.gout[i]!;
      return s;
    };
    const h = 1e-2;
    for (const [name, grad] of [['q', g.gq], ['k', g.gk], ['v', g.gv]] as const) {
      for (let i = 0; i < grad.length; i++) {
        const plus = makeArgs(c);
        const minus = makeArgs(c);
        plus[name][i]! += h;
        minus[name][i]! -= h;
        const fd = (f(plus) - f(minus)) / (2 * h);
        expect(Math.abs(fd - grad[i]!), `${name}[${i}]: fd ${fd} vs ${grad[i]}`).toBeLessThan(2e-3);
      }
    }
    ks.dispose();
  });
});
