/**
 * The row operations of a softmax — max, `exp(x − shift)` with its sum, scaling — in WebAssembly
 * SIMD on the cpu device memory, for the fused LM-head cross-entropy and the attention tiles.
 *
 * exp is the Cephes `expf` scheme, four lanes at a time: x is clamped to [−104, 89] (with
 * `pmax`/`pmin`, one instruction each on x86; NaN passes through as with `max`/`min`),
 * n = nearest(x·log₂e) (read as an integer from t + 1.5·2²³), r = x − n·ln2 (ln2 split in a short head C1, exact in the product, and a
 * tail C2), exp(r) ≈ 1 + r + r²·P(r) with a degree-5 P on |r| ≤ ln2/2, and the result is
 * exp(r)·2^⌊n/2⌋·2^(n−⌊n/2⌋): two power-of-two factors, each a normal float, so results that
 * underflow into subnormals are rounded once and exp(x > 88.72…) becomes +∞. Sums are kept in
 * f64 (lanes 0, 1 and 2, 3 in two f64x2 accumulators; the n mod 4 tail in a scalar).
 *
 * `expShiftScalar` and friends are the same arithmetic in TypeScript, step for step (every
 * operation an f32 operation, the same summation order): they run where an array is not on the
 * heap, so the bits never depend on where a tile lives, and they are the tests' reference.
 */
import {
  encodeModule, f32, f64, forLoop, get, i32, seq, set, v128, ValType,
  type Code, type FuncDef, Locals,
} from '../../wasm/encoder';
import { GEMM_MEMORY_PAGES } from '../gemm/wasm/codegen';
import type { F32 } from '../../arrays';
import { heapAddress } from '../../memory/heap';
import { instantiateOnHeap } from '../../wasm/module';

const LOG2E = Math.fround(1.44269504088896341);
const C1 = 0.693359375;
const C2 = Math.fround(-2.12194440e-4);
const P = [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1].map(Math.fround);
const LO = -104;
const HI = 89;
/** 1.5·2²³: t + ROUND holds the integer t in its low mantissa bits (|t| < 2²²), ROUND_BITS its bit pattern. */
const ROUND = 12582912;
const ROUND_BITS = 0x4b400000;

const { i32: I32, f32: F32T, f64: F64T, v128: V128 } = ValType;
const c = i32.const;
const splat = (x: number): Code => v128.f32x4_splat(f32.const(x));

/**
 * The constants of {@link expVec} as v128 locals, set once before the loops (`init`): V8 does not
 * hoist a splat of a constant out of a loop, and rebuilding fifteen of them per vector cost more
 * than the exp's own arithmetic.
 */
function expConstants(L: Locals): { init: Code; k: (x: number) => Code } {
  const values = [LO, HI, LOG2E, ROUND, C1, C2, ...P, 1];
  const locals = new Map(values.map((v) => [v, L.add(V128)]));
  const bias = L.add(V128), bits = L.add(V128);
  return {
    init: seq(...[...locals].map(([v, l]) => set(l, splat(v))), set(bias, v128.i32x4_splat(c(127))), set(bits, v128.i32x4_splat(c(ROUND_BITS)))),
    k: (x) => get(x === 127 ? bias : x === ROUND_BITS ? bits : locals.get(x)!),
  };
}

/** exp of the f32x4 in local `x`, in place, using the v128 scratch locals `t`, `n` and `half` and the constants `k` ({@link expConstants}). */
function expVec(x: number, t: number, n: number, half: number, k: (x: number) => Code): Code {
  const pow2 = (e: Code): Code => v128.i32x4_shl(v128.i32x4_add(e, k(127)), c(23));
  return seq(
    set(x, v128.f32x4_pmin(v128.f32x4_pmax(get(x), k(LO)), k(HI))),
    set(t, v128.f32x4_nearest(v128.f32x4_mul(get(x), k(LOG2E)))),
    set(n, v128.i32x4_sub(v128.f32x4_add(get(t), k(ROUND)), k(ROUND_BITS))),
    set(x, v128.f32x4_sub(get(x), v128.f32x4_mul(get(t), k(C1)))),
    set(x, v128.f32x4_sub(get(x), v128.f32x4_mul(get(t), k(C2)))),
    // t = P(r) by Horner, then exp(r) = (P·r² + r) + 1.
    set(t, k(P[0]!)),
    ...P.slice(1).map((p) => set(t, v128.f32x4_add(v128.f32x4_mul(get(t), get(x)), k(p)))),
    set(t, v128.f32x4_add(v128.f32x4_add(v128.f32x4_mul(get(t), v128.f32x4_mul(get(x), get(x))), get(x)), k(1))),
    set(half, v128.i32x4_shr_s(get(n), c(1))),
    set(x, v128.f32x4_mul(v128.f32x4_mul(get(t), pow2(get(half))), pow2(v128.i32x4_sub(get(n), get(half))))),
  );
}

/** row_max(p, n) -> f32: the largest of n floats (NaN if any is NaN; −∞ for n = 0). */
function rowMaxFn(): FuncDef {
  const A = { p: 0, n: 1 };
  const L = new Locals(2);
  const end = L.add(I32), end4 = L.add(I32), m = L.add(V128), s = L.add(F32T);
  return {
    name: 'row_max',
    params: [I32, I32],
    results: [F32T],
    locals: L.types,
    body: seq(
      set(end, i32.add(get(A.p), i32.shl(get(A.n), c(2)))),
      set(end4, i32.add(get(A.p), i32.shl(i32.and(get(A.n), c(~3)), c(2)))),
      set(m, splat(-Infinity)),
      forLoop(A.p, get(A.p), get(end4), c(16), set(m, v128.f32x4_max(get(m), v128.load(get(A.p))))),
      set(s, f32.max(f32.max(v128.f32x4_extract_lane(get(m), 0), v128.f32x4_extract_lane(get(m), 1)),
        f32.max(v128.f32x4_extract_lane(get(m), 2), v128.f32x4_extract_lane(get(m), 3)))),
      forLoop(A.p, get(A.p), get(end), c(4), set(s, f32.max(get(s), f32.load(get(A.p))))),
      get(s),
    ),
  };
}

/** exp_shift(src, dst, n, shift) -> f64: dst[i] = exp(src[i] − shift), returns Σ dst[i] (also called inside decode attention). */
export function expFn(): FuncDef {
  const A = { src: 0, dst: 1, n: 2, shift: 3 };
  const L = new Locals(4);
  const end4 = L.add(I32), end = L.add(I32), sh = L.add(V128), x = L.add(V128), t = L.add(V128), n = L.add(V128);
  const lo = L.add(V128), hi = L.add(V128), tail = L.add(F64T), half = L.add(V128);
  const K = expConstants(L);
  const body = seq(
    K.init,
    set(end4, i32.add(get(A.src), i32.shl(i32.and(get(A.n), c(~3)), c(2)))),
    set(end, i32.add(get(A.src), i32.shl(get(A.n), c(2)))),
    set(sh, v128.f32x4_splat(get(A.shift))),
    set(lo, v128.zero()), set(hi, v128.zero()),
    forLoop(A.src, get(A.src), get(end4), c(16),
      set(x, v128.f32x4_sub(v128.load(get(A.src)), get(sh))),
      expVec(x, t, n, half, K.k),
      v128.store(get(A.dst), get(x)),
      set(lo, v128.f64x2_add(get(lo), v128.f64x2_promote_low_f32x4(get(x)))),
      set(hi, v128.f64x2_add(get(hi), v128.f64x2_promote_low_f32x4(v128.shuffle(get(x), get(x), HIGH_TO_LOW)))),
      set(A.dst, i32.add(get(A.dst), c(16))),
    ),
    // The tail, one lane at a time (lane 0 of a splat).
    forLoop(A.src, get(A.src), get(end), c(4),
      set(x, v128.f32x4_splat(f32.load(get(A.src)))),
      set(x, v128.f32x4_sub(get(x), get(sh))),
      expVec(x, t, n, half, K.k),
      f32.store(get(A.dst), v128.f32x4_extract_lane(get(x), 0)),
      set(tail, f64.add(get(tail), f64.promote_f32(v128.f32x4_extract_lane(get(x), 0)))),
      set(A.dst, i32.add(get(A.dst), c(4))),
    ),
    f64.add(
      f64.add(
        f64.add(v128.f64x2_extract_lane(get(lo), 0), v128.f64x2_extract_lane(get(lo), 1)),
        f64.add(v128.f64x2_extract_lane(get(hi), 0), v128.f64x2_extract_lane(get(hi), 1)),
      ),
      get(tail),
    ),
  );
  return { name: 'exp_shift', params: [I32, I32, I32, F32T], results: [F64T], locals: L.types, body };
}
const HIGH_TO_LOW = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];

/** scale(p, n, s): p[i] *= s. */
function scaleFn(): FuncDef {
  const A = { p: 0, n: 1, s: 2 };
  const L = new Locals(3);
  const end = L.add(I32), end4 = L.add(I32), sv = L.add(V128);
  return {
    name: 'scale',
    params: [I32, I32, F32T],
    results: [],
    locals: L.types,
    body: seq(
      set(end, i32.add(get(A.p), i32.shl(get(A.n), c(2)))),
      set(end4, i32.add(get(A.p), i32.shl(i32.and(get(A.n), c(~3)), c(2)))),
      set(sv, v128.f32x4_splat(get(A.s))),
      forLoop(A.p, get(A.p), get(end4), c(16), v128.store(get(A.p), v128.f32x4_mul(v128.load(get(A.p)), get(sv)))),
      forLoop(A.p, get(A.p), get(end), c(4), f32.store(get(A.p), f32.mul(f32.load(get(A.p)), get(A.s)))),
    ),
  };
}

const FUNCS = (): FuncDef[] => [rowMaxFn(), expFn(), scaleFn()];

/** The module bytes (for the validation test). */
export function softmaxRowsModule(): Uint8Array {
  return encodeModule(FUNCS(), GEMM_MEMORY_PAGES.min, GEMM_MEMORY_PAGES.max);
}

interface RowExports {
  row_max(p: number, n: number): number;
  exp_shift(src: number, dst: number, n: number, shift: number): number;
  scale(p: number, n: number, s: number): void;
}

let instance: RowExports | null | undefined;

function rows(): RowExports | null {
  if (instance === undefined) instance = instantiateOnHeap<RowExports>(FUNCS());
  return instance;
}

// ---------------------------------------------------------------------------------------------
// The same arithmetic in TypeScript.

const f = Math.fround;

/** Round to the nearest integer, ties to even (`f32x4.nearest`). */
function nearest(v: number): number {
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** exp of an f32 value with exactly the arithmetic of the SIMD lanes. */
export function expf(x: number): number {
  x = Math.min(Math.max(x, LO), HI);
  const t = nearest(f(x * LOG2E));
  const n = Number.isNaN(t) ? 0 : t;
  let r = f(x - f(t * C1));
  r = f(r - f(t * C2));
  let p = P[0]!;
  for (let i = 1; i < P.length; i++) p = f(f(p * r) + P[i]!);
  p = f(f(f(p * f(r * r)) + r) + 1);
  const half = n >> 1;
  return f(f(p * 2 ** half) * 2 ** (n - half));
}

/** The scalar twin of `row_max`. */
export function rowMaxScalar(x: F32, o: number, n: number): number {
  const n4 = n & ~3;
  const m = [-Infinity, -Infinity, -Infinity, -Infinity];
  for (let j = 0; j < n4; j += 4) for (let l = 0; l < 4; l++) m[l] = Math.max(m[l]!, x[o + j + l]!);
  let s = Math.max(Math.max(m[0]!, m[1]!), Math.max(m[2]!, m[3]!));
  for (let j = n4; j < n; j++) s = Math.max(s, x[o + j]!);
  return s;
}

/** The scalar twin of `exp_shift`. */
export function expShiftScalar(src: F32, o: number, n: number, shift: number, dst: F32, d: number): number {
  const sh = f(shift), n4 = n & ~3;
  let a0 = 0, a1 = 0, b0 = 0, b1 = 0, tail = 0;
  for (let j = 0; j < n4; j += 4) {
    const e0 = expf(f(src[o + j]! - sh)), e1 = expf(f(src[o + j + 1]! - sh));
    const e2 = expf(f(src[o + j + 2]! - sh)), e3 = expf(f(src[o + j + 3]! - sh));
    dst[d + j] = e0; dst[d + j + 1] = e1; dst[d + j + 2] = e2; dst[d + j + 3] = e3;
    a0 += e0; a1 += e1; b0 += e2; b1 += e3;
  }
  for (let j = n4; j < n; j++) { const e = expf(f(src[o + j]! - sh)); dst[d + j] = e; tail += e; }
  return ((a0 + a1) + (b0 + b1)) + tail;
}

// ---------------------------------------------------------------------------------------------
// Entry points: SIMD when the arrays are on the heap, else the scalar twins (same bits).

/** max of x[o .. o + n). */
export function rowMax(x: F32, o: number, n: number): number {
  const ex = rows(), p = heapAddress(x);
  return ex !== null && p >= 0 ? ex.row_max(p + 4 * o, n) : rowMaxScalar(x, o, n);
}

/** dst[d + j] = exp(src[o + j] − shift) for j < n (dst may be src with d = o); returns the sum. */
export function expShift(src: F32, o: number, n: number, shift: number, dst: F32 = src, d: number = o): number {
  const ex = rows(), ps = heapAddress(src), pd = heapAddress(dst);
  return ex !== null && ps >= 0 && pd >= 0
    ? ex.exp_shift(ps + 4 * o, pd + 4 * d, n, shift)
    : expShiftScalar(src, o, n, shift, dst, d);
}

/** x[o + j] *= f32(s) for j < n. */
export function scaleRow(x: F32, o: number, n: number, s: number): void {
  const ex = rows(), p = heapAddress(x);
  if (ex !== null && p >= 0) { ex.scale(p + 4 * o, n, s); return; }
  const sf = f(s);
  for (let j = 0; j < n; j++) x[o + j]! *= sf;
}
