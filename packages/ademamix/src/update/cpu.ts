/**
 * The float32 optimizer updates in WebAssembly SIMD, each with the bits of its scalar code: the
 * torch-exact AdEMAMix (`stepF32` in reference.ts) and AdamW (`adamwF32`) updates, and AdamW's
 * double-precision `fast` update (`adamwFast`, on f64 lanes). The torch-exact ones: every operation is an f32x4 operation (correctly rounded, as `Math.fround` of
 * the double result is), and torch's fused multiply-adds are correctly rounded f32 FMAs: the
 * CPU's own (`f32x4.relaxed_madd`, where relaxed SIMD validates and a start-up probe finds it
 * fused), else built from f64 lanes: a·b is exact in f64, a·b + c is rounded to odd
 * (the TwoSum error decides whether the even f64 neighbour moves one unit toward the exact
 * value), and rounding that to f32 is then correct (53 ≥ 24 + 2 bits).
 *
 * It runs on the cpu device memory of @apertus/tensor where all arrays already live there (in
 * place); otherwise chunks are staged through a private, unshared memory (V8 copies into a
 * shared one element by element, ~30× slower).
 */
import { wasm as W } from '@apertus/tensor/kernels';
import type { FloatArray } from '../types';
import { checkUpdateLengths, type AdamwUpdateArgs, type AdemamixUpdateArgs } from './kernel';
import { adamwF32, adamwFast, adamwReference, adamwScalars, ademamixReference, stepF32, stepF32Scalars, type AdamWScalars, type SimdStepScalars } from './reference';

const { forLoop, get, i32, i64, seq, set, v128, types, Locals } = W;
type Code = W.Code;
const { i32: I32, f32: F32T, f64: F64T, v128: V128 } = types;
const c = i32.const;
const HIGH = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
const JOIN = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];

const SCALARS = ['b1', 'c1', 'b3', 'c3', 'b2', 'c2', 'bc1', 'sbc2', 'eps', 'alpha', 'wd', 'nlr'] as const;

/** Correctly rounded f32 a·b + c on two f64 lanes (a, b, c f32 values widened), as f64x2. */
function fmaOdd(a: Code, b: Code, cc: Code, L: { p: number; s: number; bb: number; e: number; cl: number }): Code {
  const { p, s, bb, e, cl } = L;
  const one = v128.i64x2_splat(i64.const(1));
  return seq(
    set(cl, cc),
    set(p, v128.f64x2_mul(a, b)),
    set(s, v128.f64x2_add(get(p), get(cl))),
    set(bb, v128.f64x2_sub(get(s), get(p))),
    set(e, v128.f64x2_add(v128.f64x2_sub(get(p), v128.f64x2_sub(get(s), get(bb))), v128.f64x2_sub(get(cl), get(bb)))),
    // s += (sign(s) == sign(e) ? 1 : −1) ulp where e ≠ 0 and s is even.
    set(s, v128.i64x2_add(get(s), v128.and(
      v128.or(v128.i64x2_shr_s(v128.xor(get(s), get(e)), c(63)), one),
      v128.and(v128.f64x2_ne(get(e), v128.zero()), v128.i64x2_eq(v128.and(get(s), one), v128.zero())),
    ))),
  );
}

/**
 * fma32 of three f32x4 locals into local `out` (f32x4): `relaxed_madd` where the module is built
 * `fused` (only where a probe finds it fused: it is then the one correctly rounded result),
 * else emulated on f64 lanes.
 */
function fma32(a: number, b: number, cc: number, out: number, t: { p: number; s: number; bb: number; e: number; cl: number; lo: number }, fused: boolean): Code {
  if (fused) return set(out, v128.f32x4_relaxed_madd(get(a), get(b), get(cc)));
  const low = (x: number): Code => v128.f64x2_promote_low_f32x4(get(x));
  const high = (x: number): Code => v128.f64x2_promote_low_f32x4(v128.shuffle(get(x), get(x), HIGH));
  return seq(
    fmaOdd(low(a), low(b), low(cc), t),
    set(t.lo, v128.f32x4_demote_f64x2_zero(get(t.s))),
    fmaOdd(high(a), high(b), high(cc), t),
    set(out, v128.shuffle(get(t.lo), v128.f32x4_demote_f64x2_zero(get(t.s)), JOIN)),
  );
}

/**
 * step(data, grad, m1, m2, nu, n, scalars...): pointers in bytes, n a multiple of 4; `m1` is
 * ignored when `hasM1` is 0 (beta1 = 0: fast = g), weight decay applies when `wd` ≠ 0.
 */
function stepFn(hasM1: boolean, decay: boolean, fused: boolean): W.FuncDef {
  const A = { data: 0, grad: 1, m1: 2, m2: 3, nu: 4, n: 5 };
  const L = new Locals(6 + SCALARS.length);
  const S = Object.fromEntries(SCALARS.map((k, i) => [k, 6 + i])) as Record<(typeof SCALARS)[number], number>;
  const V = Object.fromEntries(SCALARS.map((k) => [k, L.add(V128)])) as Record<(typeof SCALARS)[number], number>;
  const i = L.add(I32), end = L.add(I32);
  const g = L.add(V128), fast = L.add(V128), slow = L.add(V128), sq = L.add(V128), u = L.add(V128), p = L.add(V128), x = L.add(V128);
  const t = { p: L.add(V128), s: L.add(V128), bb: L.add(V128), e: L.add(V128), cl: L.add(V128), lo: L.add(V128) };
  const at = (base: number): Code => i32.add(get(base), get(i));
  const mul = v128.f32x4_mul, add = v128.f32x4_add, div = v128.f32x4_div;
  return {
    name: `step${hasM1 ? '_m1' : ''}${decay ? '_wd' : ''}`,
    params: [I32, I32, I32, I32, I32, I32, ...SCALARS.map(() => F32T)],
    results: [],
    locals: L.types,
    body: seq(
      ...SCALARS.map((k) => set(V[k], v128.f32x4_splat(get(S[k])))),
      set(end, i32.shl(get(A.n), c(2))),
      forLoop(i, c(0), get(end), c(16),
        set(g, v128.load(at(A.grad))),
        hasM1
          ? seq(set(x, mul(v128.load(at(A.m1)), get(V.b1))), fma32(g, V.c1, x, fast, t, fused), v128.store(at(A.m1), get(fast)))
          : set(fast, get(g)),
        set(x, mul(v128.load(at(A.m2)), get(V.b3))), fma32(g, V.c3, x, slow, t, fused), v128.store(at(A.m2), get(slow)),
        set(p, mul(get(V.c2), get(g))), set(x, mul(v128.load(at(A.nu)), get(V.b2))), fma32(p, g, x, sq, t, fused), v128.store(at(A.nu), get(sq)),
        // u = ((fast / bc1) + alpha·slow) / ((sqrt(sq) / sbc2) + eps)
        set(u, div(add(div(get(fast), get(V.bc1)), mul(get(V.alpha), get(slow))), add(div(v128.f32x4_sqrt(get(sq)), get(V.sbc2)), get(V.eps)))),
        set(p, v128.load(at(A.data))),
        decay ? seq(set(x, get(u)), fma32(p, V.wd, x, u, t, fused)) : [],
        v128.store(at(A.data), add(get(p), mul(get(V.nlr), get(u)))),
      ),
    ),
  };
}

/**
 * adamw(data, grad, m, v, n, b1, c1, b2, c2, decay, sbc2, eps, nstep): the torch-exact float32
 * AdamW update (`adamwF32` in adamw.ts) with its bits; pointers in bytes, n a multiple of 4.
 */
function adamwFn(fused: boolean): W.FuncDef {
  const K = ['b1', 'c1', 'b2', 'c2', 'decay', 'sbc2', 'eps', 'nstep'] as const;
  const A = { data: 0, grad: 1, m: 2, v: 3, n: 4 };
  const L = new Locals(5 + K.length);
  const V = Object.fromEntries(K.map((k) => [k, L.add(V128)])) as Record<(typeof K)[number], number>;
  const i = L.add(I32), end = L.add(I32);
  const g = L.add(V128), mi = L.add(V128), vi = L.add(V128), p = L.add(V128), x = L.add(V128);
  const t = { p: L.add(V128), s: L.add(V128), bb: L.add(V128), e: L.add(V128), cl: L.add(V128), lo: L.add(V128) };
  const at = (base: number): Code => i32.add(get(base), get(i));
  const mul = v128.f32x4_mul, add = v128.f32x4_add, div = v128.f32x4_div;
  return {
    name: 'adamw',
    params: [I32, I32, I32, I32, I32, ...K.map(() => F32T)],
    results: [],
    locals: L.types,
    body: seq(
      ...K.map((k, j) => set(V[k], v128.f32x4_splat(get(5 + j)))),
      set(end, i32.shl(get(A.n), c(2))),
      forLoop(i, c(0), get(end), c(16),
        set(g, v128.load(at(A.grad))),
        set(p, mul(v128.load(at(A.data)), get(V.decay))),
        set(x, mul(v128.load(at(A.m)), get(V.b1))), fma32(g, V.c1, x, mi, t, fused), v128.store(at(A.m), get(mi)),
        set(x, mul(get(V.c2), get(g))), set(vi, mul(v128.load(at(A.v)), get(V.b2))), fma32(x, g, vi, vi, t, fused), v128.store(at(A.v), get(vi)),
        v128.store(at(A.data), add(get(p), div(mul(get(V.nstep), get(mi)), add(div(v128.f32x4_sqrt(get(vi)), get(V.sbc2)), get(V.eps))))),
      ),
    ),
  };
}

/**
 * adamw_fast(data, grad, m, v, n, beta1, c1, beta2, c2, decay, sbc2, eps, nstep): the
 * double-precision AdamW update (`arithmetic: 'fast'`, `adamwFast` in adamw.ts) on f64 lanes,
 * with its bits (the same IEEE operations in the same order; m and v read back as stored).
 */
function adamwFastFn(): W.FuncDef {
  const K = ['beta1', 'c1', 'beta2', 'c2', 'decay', 'sbc2', 'eps', 'nstep'] as const;
  const A = { data: 0, grad: 1, m: 2, v: 3, n: 4 };
  const L = new Locals(5 + K.length);
  const V = Object.fromEntries(K.map((k) => [k, L.add(V128)])) as Record<(typeof K)[number], number>;
  const i = L.add(I32), end = L.add(I32);
  const g = L.add(V128), m = L.add(V128), v = L.add(V128), mLo = L.add(V128), vLo = L.add(V128), dLo = L.add(V128);
  const at = (base: number): Code => i32.add(get(base), get(i));
  const { f64x2_add: add, f64x2_mul: mul, f64x2_div: div } = v128;
  const f32of = (x: Code): Code => v128.f32x4_demote_f64x2_zero(x);
  const half = (off: number): Code => seq(
    set(g, v128.f64x2_promote_low_f32x4(v128.load64_splat(at(A.grad), off))),
    // m, v rounded to f32 as stored, then widened again (the update reads the stored values).
    set(m, v128.f64x2_promote_low_f32x4(f32of(add(mul(v128.f64x2_promote_low_f32x4(v128.load64_splat(at(A.m), off)), get(V.beta1)), mul(get(g), get(V.c1)))))),
    set(v, v128.f64x2_promote_low_f32x4(f32of(add(mul(v128.f64x2_promote_low_f32x4(v128.load64_splat(at(A.v), off)), get(V.beta2)), mul(mul(get(V.c2), get(g)), get(g)))))),
  );
  const data = (off: number): Code => add(mul(v128.f64x2_promote_low_f32x4(v128.load64_splat(at(A.data), off)), get(V.decay)),
    div(mul(get(V.nstep), get(m)), add(div(v128.f64x2_sqrt(get(v)), get(V.sbc2)), get(V.eps))));
  const join = (lo: number, hi: Code): Code => v128.shuffle(f32of(get(lo)), f32of(hi), JOIN);
  return {
    name: 'adamw_fast',
    params: [I32, I32, I32, I32, I32, ...K.map(() => F64T)],
    results: [],
    locals: L.types,
    body: seq(
      ...K.map((k, j) => set(V[k], v128.f64x2_splat(get(5 + j)))),
      set(end, i32.shl(get(A.n), c(2))),
      forLoop(i, c(0), get(end), c(16),
        half(0), set(mLo, get(m)), set(vLo, get(v)), set(dLo, data(0)),
        half(8),
        v128.store(at(A.m), join(mLo, get(m))),
        v128.store(at(A.v), join(vLo, get(v))),
        v128.store(at(A.data), join(dLo, data(8))),
      ),
    ),
  };
}

interface StepExports {
  [name: string]: (...args: number[]) => void;
}

/** probe(a, b, c): lane 0 of `relaxed_madd(a, b, c)` on splats, to tell whether it is fused here. */
function probeFn(): W.FuncDef {
  const sp = (k: number): Code => v128.f32x4_splat(get(k));
  return { name: 'probe', params: [F32T, F32T, F32T], results: [F32T], locals: [], body: v128.f32x4_extract_lane(v128.f32x4_relaxed_madd(sp(0), sp(1), sp(2)), 0) };
}

/** The module's functions: the fused build (relaxed SIMD) has the probe too. */
const FUNCS = (fused: boolean): W.FuncDef[] => [
  stepFn(false, false, fused), stepFn(true, false, fused), stepFn(false, true, fused), stepFn(true, true, fused), adamwFn(fused), adamwFastFn(),
  ...(fused ? [probeFn()] : []),
];

/** Elements per staged chunk (5 arrays × 64 KiB). */
const CHUNK = 16384;

let onHeap: StepExports | null | undefined;
let staging: { exports: StepExports; views: Float32Array[] } | null | undefined;

/**
 * Whether a fused build runs here: `relaxed_madd(a, a, −1)` with a = 1 + 2⁻¹² is 2⁻¹¹ + 2⁻²⁴
 * when fused and 2⁻¹¹ when the product is rounded first (V8 lowers it to mul + add without FMA).
 */
function isFused(ex: StepExports | undefined): boolean {
  const a = 1 + 2 ** -12;
  return ex !== undefined && (ex.probe as unknown as (a: number, b: number, c: number) => number)(a, a, -1) === 2 ** -11 + 2 ** -24;
}

/** Instantiate the fused build where relaxed SIMD validates and is fused here, else the emulating one. */
function build<T extends { exports: StepExports }>(make: (funcs: W.FuncDef[]) => T | null): T | null {
  const fused = make(FUNCS(true));
  return fused !== null && isFused(fused.exports) ? fused : make(FUNCS(false));
}

function heapModule(): StepExports | null {
  if (onHeap === undefined) onHeap = build((funcs) => { const e = W.instantiateOnHeap<StepExports>(funcs); return e === null ? null : { exports: e }; })?.exports ?? null;
  return onHeap ?? null;
}

/** The module on a private memory holding five chunk buffers (copies into it are memcpy). */
function stagingModule(): { exports: StepExports; views: Float32Array[] } | null {
  if (staging === undefined) {
    const m = build((funcs) => { const r = W.instantiatePrivate<StepExports>(funcs, 5 * 4 * CHUNK); return r === null ? null : { exports: r.exports, memory: r.memory }; });
    staging = m === null ? null : { exports: m.exports, views: [0, 1, 2, 3, 4].map((j) => new Float32Array(m.memory, 4 * CHUNK * j, CHUNK)) };
  }
  return staging;
}

/** Whether the optimizer kernels use the CPU's fused multiply-add (`relaxed_madd`) rather than emulating it. */
export function fusedStep(): boolean {
  return isFused(heapModule() ?? undefined);
}

/** Whether the SIMD step can run here (WebAssembly SIMD). */
export function simdStepAvailable(): boolean {
  return heapModule() !== null && stagingModule() !== null;
}

/**
 * Run function `name` on elements [0, n4) (n4 = data.length rounded down to 4) of `arrays`
 * (data, grad, then the state buffers; all but `readOnly` written back); returns n4, the caller
 * finishes the tail with the scalar code. Arrays that all live on the cpu heap are updated in
 * place; otherwise chunks are staged through a private memory. Returns 0 where SIMD is missing.
 */
function run(name: string, arrays: Float32Array[], scalars: number[], readOnly: readonly number[] = [1]): number {
  const n4 = arrays[0]!.length & ~3;
  const at = arrays.map((a) => W.heapAddress(a));
  const heap = heapModule();
  if (heap !== null && at.every((p) => p >= 0)) {
    heap[name]!(...at, n4, ...scalars);
    return n4;
  }
  const st = stagingModule();
  if (st === null) return 0;
  const fn = st.exports[name]!, v = st.views;
  const ptrs = arrays.map((_, j) => 4 * CHUNK * j);
  for (let o = 0; o < n4; o += CHUNK) {
    const k = Math.min(CHUNK, n4 - o);
    arrays.forEach((a, j) => v[j]!.set(a.subarray(o, o + k)));
    fn(...ptrs, k, ...scalars);
    arrays.forEach((a, j) => { if (!readOnly.includes(j)) a.set(v[j]!.subarray(0, k), o); });
  }
  return n4;
}

/**
 * The AdEMAMix update on elements [0, n4) of float32 arrays (see `run`); `m1` null when β1 = 0.
 */
export function stepF32Simd(data: Float32Array, grad: FloatArray, m1: Float32Array | null, m2: Float32Array, nu: Float32Array, s: SimdStepScalars): number {
  if (!(grad instanceof Float32Array)) return 0;
  // Without m1 the data array stands in for it (ignored by the function, never written back).
  return run(`step${m1 ? '_m1' : ''}${s.wd !== 0 ? '_wd' : ''}`, [data, grad, m1 ?? data, m2, nu], SCALARS.map((k) => s[k]), m1 ? [1] : [1, 2]);
}


/** The AdamW update on elements [0, n4) of float32 arrays, torch-exact or `fast` (see `run`). */
export function adamwSimd(fast: boolean, data: Float32Array, grad: FloatArray, m: Float32Array, v: Float32Array, s: AdamWScalars): number {
  if (!(grad instanceof Float32Array)) return 0;
  return run(fast ? 'adamw_fast' : 'adamw', [data, grad, m, v], [s.b1, s.c1, s.b2, s.c2, s.decay, s.sbc2, s.eps, s.nstep]);
}

/**
 * The cpu AdEMAMix kernel (float32): the torch-exact update in SIMD on groups of 4, the rest in
 * the reference loop with the same bits; the `fast` update in the reference loop.
 */
export function ademamixCpu(a: AdemamixUpdateArgs): void {
  if (a.arithmetic === 'fast' || !(a.param instanceof Float32Array)) { ademamixReference(a); return; }
  checkUpdateLengths('ademamixUpdate', a.param, { grad: a.grad, m1: a.m1, m2: a.m2, nu: a.nu });
  const m1 = a.m1 as Float32Array | null, m2 = a.m2 as Float32Array, nu = a.nu as Float32Array;
  stepF32(a.param, a.grad, m1, m2, nu, a, stepF32Simd(a.param, a.grad, m1, m2, nu, stepF32Scalars(a)));
}

/** The cpu AdamW kernel (float32): torch-exact or `fast`, in SIMD on groups of 4 and the reference loop for the rest. */
export function adamwCpu(a: AdamwUpdateArgs): void {
  if (!(a.param instanceof Float32Array)) { adamwReference(a); return; }
  checkUpdateLengths('adamwUpdate', a.param, { grad: a.grad, m: a.m, v: a.v });
  const fast = a.arithmetic === 'fast', m = a.m as Float32Array, v = a.v as Float32Array;
  const start = adamwSimd(fast, a.param, a.grad, m, v, adamwScalars(a, fast));
  (fast ? adamwFast : adamwF32)(a.param, a.grad, m, v, a, start);
}
