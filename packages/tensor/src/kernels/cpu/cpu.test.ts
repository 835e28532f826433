import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { backendOf } from '../../backend';
import { Rng } from '../../random';
import { jsKernels } from '../js/index';
import type { AttentionArgs } from '../types';
import { cpuKernels } from './index';

function randn(n: number, r: Rng): Float32Array {
  return Float32Array.from({ length: n }, () => r.normal());
}

/**
 * Largest difference relative to the reference's largest magnitude, never below `floor`: gradients
 * that are zero in exact arithmetic (one query over one key) come out as rounding noise of O(1) terms.
 */
function maxRel(a: Float32Array, b: Float32Array, floor = 1e-6): number {
  let num = 0, den = floor;
  for (let i = 0; i < a.length; i++) { num = Math.max(num, Math.abs(a[i]! - b[i]!)); den = Math.max(den, Math.abs(b[i]!)); }
  return num / den;
}

describe('cpu attention (GEMM tiles) equals the reference kernel', () => {
  test('default backend for attention is cpu', () => {
    expect(backendOf('attention').name).toBe('cpu');
    expect(backendOf('attentionBackward').name).toBe('cpu');
  });
  test('forward and backward, odd sizes across tile borders, GQA, KV offset, documents', () => {
    fc.assert(fc.property(
      fc.record({ B: fc.integer({ min: 1, max: 2 }), T: fc.integer({ min: 1, max: 150 }), extra: fc.integer({ min: 0, max: 70 }), nkv: fc.integer({ min: 1, max: 2 }), rep: fc.integer({ min: 1, max: 3 }), d: fc.constantFrom(1, 4, 8, 13), docs: fc.boolean(), seed: fc.integer() }),
      ({ B, T, extra, nkv, rep, d, docs, seed }) => {
        const r = new Rng(seed);
        const S = T + extra, nh = nkv * rep;
        let docQ: Int32Array | undefined, docK: Int32Array | undefined;
        if (docs) {
          docK = new Int32Array(B * S);
          for (let b = 0; b < B; b++) { let id = 0; for (let s = 0; s < S; s++) { if (s > 0 && r.uniform() < 0.05) id++; docK[b * S + s] = id; } }
          docQ = Int32Array.from({ length: B * T }, (_, i) => docK![Math.floor(i / T) * S + extra + (i % T)]!);
        }
        const base = { B, T, S, nh, nkv, d, scale: 1 / Math.sqrt(d), qOffset: extra, q: randn(B * T * nh * d, r), k: randn(B * S * nkv * d, r), v: randn(B * S * nkv * d, r), ...(docQ ? { docQ, docK } : {}) };
        const mk = (): AttentionArgs => ({ ...base, out: new Float32Array(B * T * nh * d), lse: new Float32Array(B * nh * T) });
        const ref = mk(), got = mk();
        jsKernels.attention(ref);
        cpuKernels.attention!(got);
        expect(maxRel(got.out, ref.out)).toBeLessThan(1e-5);
        expect(maxRel(got.lse, ref.lse)).toBeLessThan(1e-5);
        const gout = randn(B * T * nh * d, r);
        const grads = () => ({ gout, gq: new Float32Array(B * T * nh * d), gk: new Float32Array(B * S * nkv * d), gv: new Float32Array(B * S * nkv * d) });
        const gr = { ...ref, ...grads() }, gg = { ...ref, ...grads() };
        jsKernels.attentionBackward(gr);
        cpuKernels.attentionBackward!(gg);
        expect(maxRel(gg.gq, gr.gq, 1e-2)).toBeLessThan(1e-4);
        expect(maxRel(gg.gk, gr.gk, 1e-2)).toBeLessThan(1e-4);
        expect(maxRel(gg.gv, gr.gv, 1e-2)).toBeLessThan(1e-4);
      }), { numRuns: 40 });
  });
});
