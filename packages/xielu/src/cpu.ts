/**
 * xIELU forward and backward in WebAssembly SIMD (four f32 lanes), on the cpu device memory; `xieluForwardJs` / `xieluBackwardJs` (`kernels/js/xielu.ts`, float64, rounded
 * once) are the reference, and `simdXielu` the `cpu` backend's `xielu` / `xieluBackward`.
 *
 * Both kernels are in use. The forward was once kept scalar: while xIELU still ran on the host
 * under backend `webgpu`, the tiny model's webgpu gradients were seen to drift from the cpu
 * backend's by up to 5e-3 relative (layers 0–1) with the SIMD forward. On the current code that
 * does not reproduce — `packages/model/bench/device-grads.mjs`: cpu (SIMD forward) against webgpu
 * ≤ 5e-6 of each parameter's largest gradient, ≤ 2e-5 with xIELU on the cpu backend under webgpu
 * (the old path), and the 20-step device parity test passes — and backend `webgpu` now runs its
 * own xIELU kernels, so the host forward is no longer part of that path; the cause was not found.
 *
 *   y  = x·(αp·x + β)                   x > 0
 *   y  = αn·(expm1(min(x, ε)) − x) + β·x  x ≤ 0
 *   gx = g·(2αp·x + β) | g·(αn·expm1(x) + β) (x ≤ ε) | g·(β − αn) (ε < x ≤ 0)
 *   Σp = Σ g·x² (x > 0),  Σn = Σ g·(expm1(min(x, ε)) − x) (x ≤ 0)   (f64 lanes)
 *
 * expm1 of m = max(min(x, ε), −30) ≤ ε < 0 (below −30 expm1 rounds to −1 in f32 anyway): with
 * k = nearest(m·log₂e) and r = m − k·ln2 (Cody–Waite, |r| ≤ ln2/2), expm1(r) = r + r²·P(r) with
 * the Cephes `expf` polynomial, and expm1(m) = 2ᵏ·expm1(r) + (2ᵏ − 1). For k = 0 (|m| < ln2/2)
 * that is expm1(r) itself, so small arguments keep their relative accuracy (exp(m) − 1 would
 * cancel); for k ≤ −1 both terms have the sign of the result. 2ᵏ and 2ᵏ − 1 are exact (k ≥ −44).
 */
import { wasm as W } from '@apertus/tensor/kernels';
import { checkXielu } from './reference';

type F32 = Float32Array;
const { stagedRows } = W;

const { f32, f64, forLoop, get, i32, seq, set, v128, types, Locals } = W;
type Code = W.Code;
const { i32: I32, f32: F32T, f64: F64T, v128: V128 } = types;
const c = i32.const;
const splat = (x: number): Code => v128.f32x4_splat(f32.const(x));
const HIGH = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];

const LOG2E = Math.fround(1.44269504088896341);
const C1 = 0.693359375;
const C2 = Math.fround(-2.12194440e-4);
const P = [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1].map(Math.fround);
const LO = -30;

/** Local slots of one lane group: the input and scratch. */
interface Lanes { x: number; m: number; t: number; k: number; e: number; pos: number; neg: number }

/** e ← expm1(max(min(x, ε), −30)) lane-wise (`eps` the local holding ε splat). */
function expm1Vec(L: Lanes, eps: number): Code {
  const pow2 = v128.i32x4_shl(v128.i32x4_add(get(L.k), v128.i32x4_splat(c(127))), c(23));
  return seq(
    set(L.m, v128.f32x4_max(v128.f32x4_min(get(L.x), get(eps)), splat(LO))),
    set(L.t, v128.f32x4_nearest(v128.f32x4_mul(get(L.m), splat(LOG2E)))),
    set(L.k, v128.i32x4_trunc_sat_f32x4_s(get(L.t))),
    set(L.m, v128.f32x4_sub(get(L.m), v128.f32x4_mul(get(L.t), splat(C1)))),
    set(L.m, v128.f32x4_sub(get(L.m), v128.f32x4_mul(get(L.t), splat(C2)))),
    set(L.e, splat(P[0]!)),
    ...P.slice(1).map((p) => set(L.e, v128.f32x4_add(v128.f32x4_mul(get(L.e), get(L.m)), splat(p)))),
    set(L.e, v128.f32x4_add(v128.f32x4_mul(get(L.e), v128.f32x4_mul(get(L.m), get(L.m))), get(L.m))),
    // 2ᵏ·expm1(r) + (2ᵏ − 1); L.t ← 2ᵏ
    set(L.t, pow2),
    set(L.e, v128.f32x4_add(v128.f32x4_mul(get(L.t), get(L.e)), v128.f32x4_sub(get(L.t), splat(1)))),
  );
}

interface Scalars { ap: number; an: number; beta: number; eps: number }

function scalarLocals(L: W.Locals, first: number): { arg: Scalars; vec: Scalars; load: Code } {
  const arg = { ap: first, an: first + 1, beta: first + 2, eps: first + 3 };
  const vec = { ap: L.add(V128), an: L.add(V128), beta: L.add(V128), eps: L.add(V128) };
  const load = seq(...(['ap', 'an', 'beta', 'eps'] as const).map((k) => set(vec[k], v128.f32x4_splat(get(arg[k])))));
  return { arg, vec, load };
}

/** Every element i in [0, n): `body` with local `at` the byte offset 4i, four at a time then one lane (splat) at a time. */
function elements(n: number, i: number, n4: number, vector: (at: Code, one: boolean) => Code): Code {
  return seq(
    set(n4, i32.shl(i32.and(get(n), c(~3)), c(2))),
    forLoop(i, c(0), get(n4), c(16), vector(get(i), false)),
    forLoop(i, get(n4), i32.shl(get(n), c(2)), c(4), vector(get(i), true)),
  );
}

/** xielu_forward(x, y, n, αp, αn, β, ε): pointers in bytes. */
function forwardFn(): W.FuncDef {
  const A = { x: 0, y: 1, n: 2 };
  const L = new Locals(7);
  const s = scalarLocals(L, 3);
  const i = L.add(I32), n4 = L.add(I32);
  const V: Lanes = { x: L.add(V128), m: L.add(V128), t: L.add(V128), k: L.add(V128), e: L.add(V128), pos: L.add(V128), neg: L.add(V128) };
  const { ap, an, beta, eps } = s.vec;
  const mul = v128.f32x4_mul, add = v128.f32x4_add;
  const body = (at: Code, one: boolean): Code => seq(
    set(V.x, one ? v128.f32x4_splat(f32.load(i32.add(get(A.x), at))) : v128.load(i32.add(get(A.x), at))),
    expm1Vec(V, eps),
    set(V.pos, mul(get(V.x), add(mul(get(ap), get(V.x)), get(beta)))),
    set(V.neg, add(mul(get(an), v128.f32x4_sub(get(V.e), get(V.x))), mul(get(beta), get(V.x)))),
    set(V.pos, v128.bitselect(get(V.pos), get(V.neg), v128.f32x4_gt(get(V.x), v128.zero()))),
    one ? f32.store(i32.add(get(A.y), at), v128.f32x4_extract_lane(get(V.pos), 0)) : v128.store(i32.add(get(A.y), at), get(V.pos)),
  );
  return {
    name: 'xielu_forward',
    params: [I32, I32, I32, F32T, F32T, F32T, F32T],
    results: [],
    locals: L.types,
    body: seq(s.load, elements(A.n, i, n4, body)),
  };
}

/** xielu_backward(x, gy, gx, n, αp, αn, β, ε) -> (Σp, Σn): pointers in bytes. */
function backwardFn(): W.FuncDef {
  const A = { x: 0, gy: 1, gx: 2, n: 3 };
  const L = new Locals(8);
  const s = scalarLocals(L, 4);
  const i = L.add(I32), n4 = L.add(I32);
  const V: Lanes = { x: L.add(V128), m: L.add(V128), t: L.add(V128), k: L.add(V128), e: L.add(V128), pos: L.add(V128), neg: L.add(V128) };
  const g = L.add(V128), gp = L.add(V128), gn = L.add(V128), sp = L.add(V128), sn = L.add(V128), twoAp = L.add(V128), mid = L.add(V128);
  const tp = L.add(F64T), tn = L.add(F64T);
  const { ap, an, beta, eps } = s.vec;
  const mul = v128.f32x4_mul, add = v128.f32x4_add;
  const lo = (x: number): Code => v128.f64x2_promote_low_f32x4(get(x));
  const hi = (x: number): Code => v128.f64x2_promote_low_f32x4(v128.shuffle(get(x), get(x), HIGH));
  // Terms of the sums on two lanes, each product formed in f64 as the reference forms it.
  const termP = (h: (x: number) => Code): Code => v128.f64x2_mul(v128.f64x2_mul(h(gp), h(V.x)), h(V.x));
  const termN = (h: (x: number) => Code): Code => v128.f64x2_mul(h(gn), v128.f64x2_sub(h(V.e), h(V.x)));
  const body = (at: Code, one: boolean): Code => {
    const load = (p: number): Code => one ? v128.f32x4_splat(f32.load(i32.add(get(p), at))) : v128.load(i32.add(get(p), at));
    return seq(
      set(V.x, load(A.x)), set(g, load(A.gy)),
      expm1Vec(V, eps),
      set(V.pos, v128.f32x4_gt(get(V.x), v128.zero())),
      set(gp, v128.bitselect(get(g), v128.zero(), get(V.pos))),
      set(gn, v128.bitselect(v128.zero(), get(g), get(V.pos))),
      // ∂y/∂x per branch, then times g.
      set(V.neg, v128.bitselect(add(mul(get(an), get(V.e)), get(beta)), get(mid), v128.f32x4_le(get(V.x), get(eps)))),
      set(V.neg, mul(get(g), v128.bitselect(add(mul(get(twoAp), get(V.x)), get(beta)), get(V.neg), get(V.pos)))),
      one
        ? seq(
          f32.store(i32.add(get(A.gx), at), v128.f32x4_extract_lane(get(V.neg), 0)),
          // A splat lane enters the sums once (lane 0).
          set(tp, f64.add(get(tp), v128.f64x2_extract_lane(termP(lo), 0))),
          set(tn, f64.add(get(tn), v128.f64x2_extract_lane(termN(lo), 0))),
        )
        : seq(
          v128.store(i32.add(get(A.gx), at), get(V.neg)),
          set(sp, v128.f64x2_add(v128.f64x2_add(get(sp), termP(lo)), termP(hi))),
          set(sn, v128.f64x2_add(v128.f64x2_add(get(sn), termN(lo)), termN(hi))),
        ),
    );
  };
  const total = (acc: number, tail: number): Code =>
    f64.add(f64.add(v128.f64x2_extract_lane(get(acc), 0), v128.f64x2_extract_lane(get(acc), 1)), get(tail));
  return {
    name: 'xielu_backward',
    params: [I32, I32, I32, I32, F32T, F32T, F32T, F32T],
    results: [F64T, F64T],
    locals: L.types,
    body: seq(
      s.load,
      set(twoAp, mul(splat(2), get(ap))),
      set(mid, v128.f32x4_sub(get(beta), get(an))),
      set(sp, v128.zero()), set(sn, v128.zero()), set(tp, f64.const(0)), set(tn, f64.const(0)),
      elements(A.n, i, n4, body),
      total(sp, tp), total(sn, tn),
    ),
  };
}

/** The module's functions (exported for the validation test). */
export const xieluFuncs = (): W.FuncDef[] => [forwardFn(), backwardFn()];

interface XieluExports {
  xielu_forward(x: number, y: number, n: number, ap: number, an: number, beta: number, eps: number): void;
  xielu_backward(x: number, gy: number, gx: number, n: number, ap: number, an: number, beta: number, eps: number): [number, number];
}

let instance: XieluExports | null | undefined;
function module(): XieluExports | null {
  if (instance === undefined) instance = W.instantiateOnHeap<XieluExports>(xieluFuncs());
  return instance;
}

/** Whether the SIMD kernels can run here (WebAssembly SIMD and the cpu heap). */
export function xieluSimdAvailable(): boolean {
  return module() !== null;
}

/**
 * y = xielu(x) with αp = softplus(a_p), αn = β + softplus(a_n), all four rounded to f32. Operands
 * not on the heap are staged (`stagedRows`), so the bits never depend on where a tensor lives.
 */
export function xieluForwardSimd(x: Float32Array, y: Float32Array, alpha_p: number, alpha_n: number, beta: number, eps: number): void {
  const m = module()!;
  stagedRows('xielu', [x, y], [1, 1], [y], x.length, (at, _r0, n) => m.xielu_forward(at[0]!, at[1]!, n, alpha_p, alpha_n, beta, eps));
}

/** gx = gy·∂y/∂x; returns [Σ gy·x² over x > 0, Σ gy·(expm1(min(x, ε)) − x) over x ≤ 0] (staged chunks add their sums). */
export function xieluBackwardSimd(x: Float32Array, gy: Float32Array, gx: Float32Array, alpha_p: number, alpha_n: number, beta: number, eps: number): [number, number] {
  const m = module()!;
  const sums: [number, number] = [0, 0];
  stagedRows('xieluBackward', [x, gy, gx], [1, 1, 1], [gx], x.length, (at, _r0, n) => {
    const [p, q] = m.xielu_backward(at[0]!, at[1]!, at[2]!, n, alpha_p, alpha_n, beta, eps);
    sums[0] += p; sums[1] += q;
  });
  return sums;
}

/** The cpu device's xIELU kernels (where WebAssembly SIMD is available). */
export const simdXielu = {
  xielu(x: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, out: F32): void {
    checkXielu('xielu', x, alpha_p, softplus_n, { out });
    xieluForwardSimd(x, out, alpha_p[0]!, beta + softplus_n[0]!, beta, eps);
  },
  xieluBackward(x: F32, gy: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, gx: F32, sumP: F32, sumN: F32): void {
    checkXielu('xieluBackward', x, alpha_p, softplus_n, { gy, gx, sumP, sumN });
    [sumP[0], sumN[0]] = xieluBackwardSimd(x, gy, gx, alpha_p[0]!, beta + softplus_n[0]!, beta, eps);
  },
};
