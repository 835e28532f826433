// gpu.js fused attention (forward + backward) against the JS reference kernels, and a finite-difference check.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { jsKernels } from '../js/index';
import type { AttentionArgs, AttentionBackwardArgs } from '../types';
import { createGpujsKernels } from './index';
import { expectAllRanIn, expectClose, randomF32 } from './testing';

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
        expectClose(a.lse, a0.lse, 'lse', 1e-6, 1e-6);
        expectClose(a.out, a0.out, 'out', 1e-5, 1e-6);
        const g = withGrads(a0, c.seed + 9);
        const g0 = withGrads(a0, c.seed + 9);
        ks.attentionBackward(g);
        jsKernels.attentionBackward(g0);
        expectClose(g.gq, g0.gq, 'gq', 1e-4, 2e-6);
        expectClose(g.gk, g0.gk, 'gk', 1e-4, 2e-6);
        expectClose(g.gv, g0.gv, 'gv', 1e-4, 2e-6);
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
