import fc from 'fast-check';
import { wasm as wasmKernels } from '@apertus/tensor/kernels';
import { describe, expect, test } from 'vitest';
import type { Arithmetic } from '../arithmetic';
import { fmaF32 } from '../fma';
import { readFileSync } from 'node:fs';
import { adamwCpu, ademamixCpu, fusedStep, simdStepAvailable } from './cpu';
import { adamwReference, ademamixReference, type AdamWConstants, type StepConstants } from './reference';

type Ad = { data: Float32Array; grad: Float32Array; m1: Float32Array | null; m2: Float32Array; nu: Float32Array };
/** The torch-exact AdEMAMix update of `x`: the reference kernel, or the cpu (SIMD) kernel. */
const step = (x: Ad, c: StepConstants, simd: boolean): void =>
  (simd ? ademamixCpu : ademamixReference)({ param: x.data, grad: x.grad, m1: x.m1, m2: x.m2, nu: x.nu, ...c, arithmetic: 'torch-exact' });
type Aw = { data: Float32Array; grad: Float32Array; m: Float32Array; v: Float32Array };
/** The AdamW update of `x` with `arithmetic`: the reference kernel, or the cpu (SIMD) kernel. */
const adamw = (arithmetic: Arithmetic) => (x: Aw, c: AdamWConstants, simd: boolean): void =>
  (simd ? adamwCpu : adamwReference)({ param: x.data, grad: x.grad, m: x.m, v: x.v, ...c, arithmetic });

/** `n` deterministic values f(sin-hash(i, k)) (each hash rounded to f32 first), for vectors longer than one staging chunk. */
const wave = (n: number, k: number, f = (x: number) => x): Float32Array =>
  Float32Array.from({ length: n }, (_, i) => f(Math.fround(Math.sin(i * 12.9898 + k * 78.233) * 0.5)));

/** Float32 values of mixed magnitudes (zeros, tiny, ordinary, large). */
const value = fc.oneof(
  fc.float({ min: -1, max: 1, noNaN: true }),
  fc.float({ min: Math.fround(-1e-20), max: Math.fround(1e-20), noNaN: true }),
  fc.float({ min: -1e4, max: 1e4, noNaN: true }),
  fc.constantFrom(0, -0, 1e-38, 3e-8),
);

describe('torch-exact AdEMAMix step in WebAssembly SIMD', () => {
  test('is available where the cpu heap is, with the CPU\'s fused multiply-add where it has one', () => {
    expect(simdStepAvailable()).toBe(true);
    // The kernel's own CPU flags (x86-64 Linux): with FMA the fused build runs, and every test below checks its bits.
    expect(fusedStep()).toBe(/^flags\s*:.*\bfma\b/m.test(readFileSync('/proc/cpuinfo', 'utf8')));
  });

  test('gives the bits of the scalar torch-exact step (odd lengths, beta1 = 0, weight decay, heap and staged arrays)', () => {
    fc.assert(fc.property(
      fc.array(fc.tuple(value, value, value, value, value), { minLength: 1, maxLength: 41 }),
      fc.record({
        t: fc.integer({ min: 1, max: 5000 }), beta1: fc.constantFrom(0, 0.9), beta2: fc.constantFrom(0.999, 0.95),
        beta3: fc.constantFrom(0.9999, 0.999), alpha: fc.constantFrom(0, 2, 8), weightDecay: fc.constantFrom(0, 0.1), lr: fc.constantFrom(1e-3, 3e-4),
        eps: fc.constantFrom(1e-8, 1e-6), heap: fc.boolean(),
      }),
      (rows, h) => {
        const c: StepConstants = {
          beta1: h.beta1, beta2: h.beta2, beta3: h.beta3, alpha: h.alpha, eps: h.eps, weightDecay: h.weightDecay, lr: h.lr,
          bc1: 1 - h.beta1 ** h.t, bc2: 1 - h.beta2 ** h.t,
        };
        const n = rows.length;
        const make = (heap: boolean) => {
          const arr = (k: number, map: (x: number) => number = (x) => x) => {
            const a = heap ? wasmKernels.scratchF32(n) : new Float32Array(n);
            for (let i = 0; i < n; i++) a[i] = map(rows[i]![k]!);
            return a;
          };
          return { data: arr(0), grad: arr(1), m1: h.beta1 === 0 ? null : arr(2), m2: arr(3), nu: arr(4, (x) => x * x) };
        };
        const ref = make(false), got = make(h.heap);
        step(ref, c, false);
        step(got, c, true);
        for (const k of ['data', 'm1', 'm2', 'nu'] as const) {
          expect(got[k] === null ? null : Array.from(got[k]!)).toEqual(ref[k] === null ? null : Array.from(ref[k]!));
        }
        if (h.heap) for (const a of Object.values(got)) if (a) wasmKernels.heapRelease(a);
      }), { numRuns: 400 });
  });

  test('staged in chunks: a vector longer than one chunk gives the scalar bits', () => {
    const n = 40_003;
    const make = () => ({
      data: wave(n, 1), grad: wave(n, 2, (x) => x * 1e-3), m1: wave(n, 3, (x) => x * 1e-3), m2: wave(n, 4, (x) => x * 1e-3),
      nu: wave(n, 5, (x) => x ** 2 * 1e-6),
    });
    const c: StepConstants = { beta1: 0.9, beta2: 0.999, beta3: 0.9999, alpha: 8, eps: 1e-8, weightDecay: 0.1, lr: 1e-3, bc1: 1 - 0.9 ** 7, bc2: 1 - 0.999 ** 7 };
    const a = make(), b = make();
    step(a, c, false);
    step(b, c, true);
    for (const k of ['data', 'm1', 'm2', 'nu'] as const) expect(b[k]).toEqual(a[k]);
  });

  test('fused multiply-adds where rounding a·b + c to f64 first would round to f32 wrongly (double rounding)', () => {
    // beta1 = 2⁻¹⁵: c1 = 1 − 2⁻¹⁵; g = s·2⁻²⁴(1 + 2⁻¹⁵) and m1 = s·2¹⁵(1 + 2⁻²³), so x = f32(m1·beta1) =
    // s(1 + 2⁻²³) has an odd last bit and g·c1 = s·2⁻²⁴(1 − 2⁻³⁰): the exact x + g·c1 lies 2⁻⁵⁴·s below
    // the f32 midpoint above x, its f64 rounding is that midpoint, which f32 rounding sends (ties to
    // even) up; the correctly rounded FMA stays at x.
    const f = Math.fround, beta1 = 2 ** -15, c1 = f(1 - beta1);
    const scales = [1, -1, 2 ** -3, -(2 ** 5), 2 ** 10, 2 ** -20, 2 ** 40];
    const g = scales.map((s) => s * 2 ** -24 * (1 + 2 ** -15)), m1 = scales.map((s) => s * 2 ** 15 * (1 + 2 ** -23));
    for (let i = 0; i < scales.length; i++) {
      const x = f(m1[i]! * f(beta1));
      expect(fmaF32(g[i]!, c1, x)).toBe(x);
      expect(f(g[i]! * c1 + x)).not.toBe(x);
    }
    const n = scales.length;
    const c: StepConstants = { beta1, beta2: 0.999, beta3: 0.9999, alpha: 8, eps: 1e-8, weightDecay: 0, lr: 1e-3, bc1: 1 - beta1 ** 3, bc2: 1 - 0.999 ** 3 };
    const make = () => ({ data: new Float32Array(n).fill(0.5), grad: Float32Array.from(g), m1: Float32Array.from(m1), m2: new Float32Array(n), nu: new Float32Array(n) });
    const a = make(), b = make();
    step(a, c, false);
    step(b, c, true);
    for (const k of ['data', 'm1', 'm2', 'nu'] as const) expect(Array.from(b[k])).toEqual(Array.from(a[k]));
  });
});

describe('AdamW in WebAssembly SIMD: torch-exact (f32 lanes) and fast (f64 lanes)', () => {
  test.each([['torch-exact', adamw('torch-exact')], ['fast', adamw('fast')]] as const)('%s: the bits of the scalar update (odd lengths, weight decay, heap and staged arrays)', (_, update) => {
    fc.assert(fc.property(
      fc.array(fc.tuple(value, value, value, value), { minLength: 1, maxLength: 41 }),
      fc.record({
        t: fc.integer({ min: 1, max: 5000 }), beta1: fc.constantFrom(0, 0.9), beta2: fc.constantFrom(0.999, 0.95),
        weightDecay: fc.constantFrom(0, 0.1), lr: fc.constantFrom(1e-3, 3e-4), eps: fc.constantFrom(1e-8, 1e-6), heap: fc.boolean(),
      }),
      (rows, h) => {
        const c: AdamWConstants = { beta1: h.beta1, beta2: h.beta2, eps: h.eps, weightDecay: h.weightDecay, lr: h.lr, bc1: 1 - h.beta1 ** h.t, bc2: 1 - h.beta2 ** h.t };
        const n = rows.length;
        const make = (heap: boolean) => {
          const arr = (k: number, map: (x: number) => number = (x) => x) => {
            const a = heap ? wasmKernels.scratchF32(n) : new Float32Array(n);
            for (let i = 0; i < n; i++) a[i] = map(rows[i]![k]!);
            return a;
          };
          return { data: arr(0), grad: arr(1), m: arr(2), v: arr(3, (x) => x * x) };
        };
        const ref = make(false), got = make(h.heap);
        update(ref, c, false);
        update(got, c, true);
        for (const k of ['data', 'm', 'v'] as const) expect(Array.from(got[k])).toEqual(Array.from(ref[k]));
        if (h.heap) for (const a of Object.values(got)) wasmKernels.heapRelease(a);
      }), { numRuns: 400 });
  });

  test('staged in chunks: a vector longer than one chunk gives the scalar bits (both arithmetics)', () => {
    const n = 40_003;
    const make = () => ({
      data: wave(n, 1), grad: wave(n, 2, (x) => x * 1e-3), m: wave(n, 3, (x) => x * 1e-3), v: wave(n, 5, (x) => x ** 2 * 1e-6),
    });
    const c: AdamWConstants = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1, lr: 1e-3, bc1: 1 - 0.9 ** 7, bc2: 1 - 0.999 ** 7 };
    for (const update of [adamw('torch-exact'), adamw('fast')]) {
      const a = make(), b = make();
      update(a, c, false);
      update(b, c, true);
      for (const k of ['data', 'm', 'v'] as const) expect(b[k]).toEqual(a[k]);
      expect(b.grad).toEqual(make().grad);
    }
  });
});
