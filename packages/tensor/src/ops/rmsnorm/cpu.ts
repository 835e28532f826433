/**
 * RMSNorm and its gradient in WebAssembly SIMD on the cpu device memory (the `rmsnorm` and
 * `rmsnormBackward` kernels of the `cpu` backend; `kernels/js/rmsnorm.ts` is the reference).
 *
 *   y_j = w_j · f32(x_j · r),  r = f32(1 / sqrt(Σ x² / n + eps))
 *   dx_j = r·w_j·gy_j − x_j·c,  c = r³ · Σ_k w_k·gy_k·x_k / n;   dw_j += gy_j·x_j·r
 *
 * The sums run in f64 lanes (squares and products of f32 values formed in f64, as the reference
 * does); the elementwise parts are f32 lane operations. Arrays that are not on the heap are
 * staged (`stagedRows`: whole, or by rows when the heap is full), so the bits never depend on where
 * a tensor lives (the sums are per row; gw accumulates row after row either way).
 */
import { f32, f64, forLoop, get, i32, seq, set, v128, ValType, type Code, type FuncDef, Locals } from '../../wasm/encoder';
import type { F32 } from '../../arrays';
import { stagedRows } from '../../memory/heap';
import { instantiateOnHeap } from '../../wasm/module';

const { i32: I32, f32: F32T, f64: F64T, v128: V128 } = ValType;
const c = i32.const;

const sumLanes = (lo: number, hi: number, tail: number): Code =>
  f64.add(
    f64.add(
      f64.add(v128.f64x2_extract_lane(get(lo), 0), v128.f64x2_extract_lane(get(lo), 1)),
      f64.add(v128.f64x2_extract_lane(get(hi), 0), v128.f64x2_extract_lane(get(hi), 1)),
    ),
    get(tail),
  );

/** rmsnorm(x, w, rows, n, eps, out, rstd): pointers in bytes, eps as f64. */
function forwardFn(): FuncDef {
  const A = { x: 0, w: 1, rows: 2, n: 3, eps: 4, out: 5, rstd: 6 };
  const L = new Locals(7);
  const r = L.add(I32), j = L.add(I32), n4 = L.add(I32), px = L.add(I32), po = L.add(I32), pw = L.add(I32);
  const lo = L.add(V128), hi = L.add(V128), t0 = L.add(V128), t1 = L.add(V128), tail = L.add(F64T);
  const rs = L.add(F32T), rv = L.add(V128), xs = L.add(F64T);
  const at = (p: number): Code => i32.add(get(p), i32.shl(get(j), c(2)));
  return {
    name: 'rmsnorm',
    params: [I32, I32, I32, I32, F64T, I32, I32],
    results: [],
    locals: L.types,
    body: seq(
      set(n4, i32.and(get(A.n), c(~3))),
      forLoop(r, c(0), get(A.rows), c(1),
        set(px, i32.add(get(A.x), i32.shl(i32.mul(get(r), get(A.n)), c(2)))),
        set(po, i32.add(get(A.out), i32.shl(i32.mul(get(r), get(A.n)), c(2)))),
        set(lo, v128.zero()), set(hi, v128.zero()), set(tail, f64.const(0)),
        forLoop(j, c(0), get(n4), c(4),
          set(t0, v128.f64x2_promote_low_f32x4(v128.load(at(px)))),
          set(t1, v128.f64x2_promote_low_f32x4(v128.load64_splat(at(px), 8))),
          set(lo, v128.f64x2_add(get(lo), v128.f64x2_mul(get(t0), get(t0)))),
          set(hi, v128.f64x2_add(get(hi), v128.f64x2_mul(get(t1), get(t1)))),
        ),
        forLoop(j, get(n4), get(A.n), c(1),
          set(xs, f64.promote_f32(f32.load(at(px)))),
          set(tail, f64.add(get(tail), f64.mul(get(xs), get(xs)))),
        ),
        set(rs, f32.demote_f64(f64.div(f64.const(1), f64.sqrt(f64.add(f64.div(sumLanes(lo, hi, tail), f64.convert_i32_s(get(A.n))), get(A.eps)))))),
        f32.store(i32.add(get(A.rstd), i32.shl(get(r), c(2))), get(rs)),
        set(rv, v128.f32x4_splat(get(rs))),
        set(pw, get(A.w)),
        forLoop(j, c(0), get(n4), c(4),
          v128.store(at(po), v128.f32x4_mul(v128.load(at(pw)), v128.f32x4_mul(v128.load(at(px)), get(rv))))),
        forLoop(j, get(n4), get(A.n), c(1),
          f32.store(at(po), f32.mul(f32.load(at(pw)), f32.mul(f32.load(at(px)), get(rs))))),
      ),
    ),
  };
}

/** rmsnorm_backward(x, w, rstd, gy, rows, n, gx, gw): pointers in bytes. */
function backwardFn(): FuncDef {
  const A = { x: 0, w: 1, rstd: 2, gy: 3, rows: 4, n: 5, gx: 6, gw: 7 };
  const L = new Locals(8);
  const r = L.add(I32), j = L.add(I32), n4 = L.add(I32), px = L.add(I32), pg = L.add(I32), pd = L.add(I32);
  const lo = L.add(V128), hi = L.add(V128), tg = L.add(V128), tx = L.add(V128), tail = L.add(F64T);
  const rs = L.add(F32T), rv = L.add(V128), cf = L.add(F32T), cv = L.add(V128);
  const at = (p: number): Code => i32.add(get(p), i32.shl(get(j), c(2)));
  const row = (p: number): Code => i32.add(get(p), i32.shl(i32.mul(get(r), get(A.n)), c(2)));
  // Lanes 0, 1 (off = 0) or 2, 3 (off = 8) of w, gy and x, widened to f64 (8-byte loads: a
  // 16-byte load at off = 8 could run past the end of the memory).
  const promote = (p: Code, off: number): Code => v128.f64x2_promote_low_f32x4(v128.load64_splat(p, off));
  const prod = (off: number): Code => v128.f64x2_mul(v128.f64x2_mul(promote(at(A.w), off), promote(at(pg), off)), promote(at(px), off));
  return {
    name: 'rmsnorm_backward',
    params: [I32, I32, I32, I32, I32, I32, I32, I32],
    results: [],
    locals: L.types,
    body: seq(
      set(n4, i32.and(get(A.n), c(~3))),
      forLoop(r, c(0), get(A.rows), c(1),
        set(px, row(A.x)), set(pg, row(A.gy)), set(pd, row(A.gx)),
        set(rs, f32.load(i32.add(get(A.rstd), i32.shl(get(r), c(2))))),
        set(lo, v128.zero()), set(hi, v128.zero()), set(tail, f64.const(0)),
        forLoop(j, c(0), get(n4), c(4),
          set(lo, v128.f64x2_add(get(lo), prod(0))),
          set(hi, v128.f64x2_add(get(hi), prod(8))),
        ),
        forLoop(j, get(n4), get(A.n), c(1),
          set(tail, f64.add(get(tail), f64.mul(f64.mul(f64.promote_f32(f32.load(at(A.w))), f64.promote_f32(f32.load(at(pg)))), f64.promote_f32(f32.load(at(px)))))),
        ),
        // c = Σ · r³ / n, rounded to f32 for the lanes.
        set(cf, f32.demote_f64(f64.div(f64.mul(f64.mul(f64.mul(sumLanes(lo, hi, tail), f64.promote_f32(get(rs))), f64.promote_f32(get(rs))), f64.promote_f32(get(rs))), f64.convert_i32_s(get(A.n))))),
        set(rv, v128.f32x4_splat(get(rs))), set(cv, v128.f32x4_splat(get(cf))),
        forLoop(j, c(0), get(n4), c(4),
          set(tg, v128.load(at(pg))), set(tx, v128.load(at(px))),
          v128.store(at(pd), v128.f32x4_sub(v128.f32x4_mul(v128.f32x4_mul(get(rv), v128.load(at(A.w))), get(tg)), v128.f32x4_mul(get(tx), get(cv)))),
          v128.store(at(A.gw), v128.f32x4_add(v128.load(at(A.gw)), v128.f32x4_mul(v128.f32x4_mul(get(tg), get(tx)), get(rv)))),
        ),
        forLoop(j, get(n4), get(A.n), c(1),
          f32.store(at(pd), f32.sub(f32.mul(f32.mul(get(rs), f32.load(at(A.w))), f32.load(at(pg))), f32.mul(f32.load(at(px)), get(cf)))),
          f32.store(at(A.gw), f32.add(f32.load(at(A.gw)), f32.mul(f32.mul(f32.load(at(pg)), f32.load(at(px))), get(rs)))),
        ),
      ),
    ),
  };
}

/** The module's functions (exported for the validation test). */
export const rmsnormFuncs = (): FuncDef[] => [forwardFn(), backwardFn()];

interface RmsExports {
  rmsnorm(x: number, w: number, rows: number, n: number, eps: number, out: number, rstd: number): void;
  rmsnorm_backward(x: number, w: number, rstd: number, gy: number, rows: number, n: number, gx: number, gw: number): void;
}

let instance: RmsExports | null | undefined;
function ex(): RmsExports {
  if (instance === undefined) instance = instantiateOnHeap<RmsExports>(rmsnormFuncs());
  if (instance === null) throw new Error('cpu rmsnorm: WebAssembly SIMD is not available');
  return instance;
}

/** Whether the module runs here (WebAssembly SIMD). */
export function simdRmsnormAvailable(): boolean {
  if (instance === undefined) instance = instantiateOnHeap<RmsExports>(rmsnormFuncs());
  return instance !== null;
}

/** The cpu (WebAssembly SIMD) `rmsnorm` kernel. */
export function simdRmsnorm(x: F32, w: F32, rows: number, n: number, eps: number, out: F32, rstd: F32): void {
  const m = ex();
  stagedRows('rmsnorm', [x, w, out, rstd], [n, 0, n, 1], [out, rstd], rows, (at, _r0, r) => m.rmsnorm(at[0]!, at[1]!, r, n, eps, at[2]!, at[3]!));
}

/** The cpu (WebAssembly SIMD) `rmsnormBackward` kernel. */
export function simdRmsnormBackward(x: F32, w: F32, rstd: F32, gy: F32, rows: number, n: number, gx: F32, gw: F32): void {
  gw.fill(0); // the wasm kernel accumulates; the contract overwrites
  const m = ex();
  stagedRows('rmsnormBackward', [x, w, rstd, gy, gx, gw], [n, 0, 1, n, n, 0], [gx, gw], rows, (at, _r0, r) => m.rmsnorm_backward(at[0]!, at[1]!, at[2]!, at[3]!, r, n, at[4]!, at[5]!));
}
