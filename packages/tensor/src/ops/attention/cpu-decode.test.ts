import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import { resetKernels, selectKernels } from '../../registry';
import { attention, pagedAttention, type KVPages } from './index';
import { pagesOf } from '../test-util';
import { Rng } from '../../random';
import { Tensor } from '../../tensor';
import { encodeModule } from '../../wasm/encoder';
import { GEMM_MEMORY_PAGES } from '../gemm/wasm/codegen';
import { wasmApi } from '../../wasm/api';
import { decodeAttentionFuncs, decodeAttentionRuns, DECODE_MAX_ROWS } from './cpu-decode';
import { heapAddress } from '../../memory/heap';
import { kernelSet } from '../../kernels/types';

const jsKernels = kernelSet('reference');
const cpuKernels = kernelSet('wasm');

afterEach(() => resetKernels());

const u = 2 ** -24;

describe('decode attention (WebAssembly SIMD, keys and values read in place)', () => {
  test('the module validates and runs here', () => {
    expect(wasmApi!.validate(encodeModule(decodeAttentionFuncs(), GEMM_MEMORY_PAGES.min, GEMM_MEMORY_PAGES.max))).toBe(true);
    expect(decodeAttentionRuns(64)).toBe(true);
    expect(decodeAttentionRuns(24)).toBe(false);
  });

  test('within the rounding bound of the float64 reference; paged = contiguous bit for bit; any block size, heap or staged', () => {
    fc.assert(fc.property(
      fc.record({
        T: fc.integer({ min: 1, max: DECODE_MAX_ROWS }), past: fc.integer({ min: 0, max: 90 }), nkv: fc.integer({ min: 1, max: 3 }), rep: fc.integer({ min: 1, max: 4 }),
        d: fc.constantFrom(16, 32, 64, 128), bs: fc.integer({ min: 1, max: 40 }), pad: fc.integer({ min: 0, max: 9 }), heap: fc.boolean(),
        qk: fc.double({ min: 0.05, max: 4, noNaN: true }), seed: fc.integer(),
      }),
      ({ T, past, nkv, rep, d, bs, pad, heap, qk, seed }) => {
        const r = new Rng(seed), nh = nkv * rep, S = past + T, row = nkv * d;
        const rnd = (n: number, s: number) => Float32Array.from({ length: n }, () => r.normal() * s);
        const q = rnd(T * nh * d, qk), k = rnd(S * row, qk), v = rnd(S * row, 1);
        const scale = 1 / Math.sqrt(d);
        const ref = { B: 1, T, S, nh, nkv, d, scale, qOffset: past, q, k, v, out: new Float32Array(T * nh * d), lse: new Float32Array(nh * T) };
        jsKernels.attention(ref); // float64 arithmetic, outputs rounded to float32
        const kv = pagesOf(k, v, S, nkv, d, bs, pad, heap);
        const got = pagedAttention(Tensor.from(q.slice(), [1, T, nh, d]), kv, { qOffset: past });
        const qt = Tensor.from(q.slice(), [1, T, nh, d]);
        const whole = attention(qt, Tensor.from(k, [1, S, nkv, d]), Tensor.from(v, [1, S, nkv, d]));
        expect(Array.from(got.data)).toEqual(Array.from(whole.data));
        // Error bound per output element (u = 2⁻²⁴): a score z_s = scale·q·k_s is off by at most
        // (d + 1)·u·A, A = max_s scale·Σ_e |q_e k_se|; z_s − m, exp (Cephes, ≤ 4 ulp) and the two
        // scores' errors make each weight p_s relatively off by ε ≤ 2(d + 1)·u·A + 2u·A + 4u; a
        // convex combination of values moves by at most 2ε·V (V = max_s |v_se|), the float32 sum
        // over S keys adds S·u·V, f32(l), the division and the reference's rounding 3u·V. Twice
        // that covers second-order terms.
        for (let t = 0; t < T; t++) {
          for (let h = 0; h < nh; h++) {
            const g = Math.floor(h / rep), qo = (t * nh + h) * d;
            let A = 0;
            for (let s = 0; s <= past + t; s++) {
              let a = 0;
              for (let e = 0; e < d; e++) a += Math.abs(q[qo + e]! * k[(s * nkv + g) * d + e]!);
              A = Math.max(A, a * scale);
            }
            const eps = 2 * (d + 1) * u * A + 2 * u * A + 4 * u;
            for (let e = 0; e < d; e++) {
              let V = 0;
              for (let s = 0; s <= past + t; s++) V = Math.max(V, Math.abs(v[(s * nkv + g) * d + e]!));
              const bound = 2 * V * (2 * eps + (S + 3) * u);
              expect(Math.abs(got.data[qo + e]! - ref.out[qo + e]!)).toBeLessThanOrEqual(bound);
            }
          }
        }
      }), { numRuns: 60 });
  });

  test('the log-sum-exp for the backward pass: within its bound of the reference', () => {
    fc.assert(fc.property(
      fc.record({ T: fc.integer({ min: 1, max: DECODE_MAX_ROWS }), past: fc.integer({ min: 0, max: 60 }), d: fc.constantFrom(16, 32), seed: fc.integer() }),
      ({ T, past, d, seed }) => {
        const r = new Rng(seed), nh = 2, nkv = 1, S = past + T;
        const rnd = (n: number) => Float32Array.from({ length: n }, () => r.normal());
        const base = { B: 1, T, S, nh, nkv, d, scale: 1 / Math.sqrt(d), qOffset: past, q: rnd(T * nh * d), k: rnd(S * d), v: rnd(S * d) };
        const ref = { ...base, out: new Float32Array(T * nh * d), lse: new Float32Array(nh * T) };
        const got = { ...base, out: new Float32Array(T * nh * d), lse: new Float32Array(nh * T) };
        jsKernels.attention(ref);
        cpuKernels.attention!(got);
        for (let t = 0; t < T; t++) {
          for (let h = 0; h < nh; h++) {
            let A = 0;
            for (let s = 0; s <= past + t; s++) {
              let a = 0;
              for (let e = 0; e < d; e++) a += Math.abs(base.q[(t * nh + h) * d + e]! * base.k[s * d + e]!);
              A = Math.max(A, a * base.scale);
            }
            // lse = m + ln l: m off by (d + 1)·u·A, ln l by the weights' ε (as above) plus S·u, and two roundings of lse.
            const i = h * T + t, eps = 2 * (d + 1) * u * A + 2 * u * A + 4 * u;
            const bound = 2 * ((d + 1) * u * A + eps + S * u + 2 * u * Math.abs(ref.lse[i]!));
            expect(Math.abs(got.lse[i]! - ref.lse[i]!)).toBeLessThanOrEqual(bound);
          }
        }
      }), { numRuns: 40 });
  });

  test('on the js backend the pages are gathered and the reference kernel runs (same bits)', () => {
    selectKernels('reference', ['attention', 'pagedAttention']);
    const r = new Rng(3), T = 2, S = 37, nh = 4, nkv = 2, d = 16, row = nkv * d;
    const q = Float32Array.from({ length: T * nh * d }, () => r.normal()), k = Float32Array.from({ length: S * row }, () => r.normal()), v = Float32Array.from({ length: S * row }, () => r.normal());
    const kv = pagesOf(k, v, S, nkv, d, 5, 2, true);
    expect(heapAddress(kv.blocks[0]!)).toBeGreaterThanOrEqual(0);
    const got = pagedAttention(Tensor.from(q, [1, T, nh, d]), kv);
    const want = attention(Tensor.from(q, [1, T, nh, d]), Tensor.from(k, [1, S, nkv, d]), Tensor.from(v, [1, S, nkv, d]));
    expect(Array.from(got.data)).toEqual(Array.from(want.data));
  });

  test('pages that do not hold the cached length are a ShapeError', () => {
    const kv: KVPages = { blocks: [new Float32Array(64)], blockSize: 4, keys: 0, values: 32, heads: 1, length: 9 };
    expect(() => pagedAttention(Tensor.zeros([1, 1, 1, 8]), kv)).toThrow(/does not fit 9 cached tokens/);
  });
});
