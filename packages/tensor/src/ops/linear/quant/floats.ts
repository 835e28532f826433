// The float products' kernels in the product module: F32 and BF16 rows are the GEMM's `dot_pack`
// / `dot_nt` (its generator, emitted into this module so they run on any memory that holds
// weights), F16 rows a kernel of their own:
//
//   f16_rows(w, r0, r1, K, x, M, y, ldy)
//
// y[m·ldy + r] = x[m] · W[r] for rows r in [r0, r1) of K f16 values (row r at w + 2rK) and
// activation rows m < M of K floats at x (already rounded to f16, as llama.cpp rounds the input of
// an F16 product), K a multiple of 8. Per row and activation row, eight f16 are widened at a time
// and multiplied into two f32x4 accumulators (lanes 0–3 and 4–7 of each 8; `relaxed_madd` in the
// relaxed variant), y = Σ of the lanes of their sum.
import { block, br, brIf, f32, get, i32, loop, set, v128, ValType, type Code, type FuncDef } from '../../../wasm/encoder';
import { dotNtFn, dotPackFn } from '../../gemm/wasm/dot-nt';
import { Fn } from './fn';
import { f16x4 } from './f16';
import type { Variant } from './layout';

const { i32: I32 } = ValType;
const c = i32.const;

/** `dot_pack` and `dot_nt` with the variant's multiply-add (relaxed: `relaxed_madd`). */
export function dotFns(v: Variant): FuncDef[] {
  const o = { mr: 4, nr: 8, kUnroll: 1, relaxed: v === 'relaxed' };
  return [dotPackFn(o), dotNtFn(o)];
}

/** The F16 rows kernel (see the file comment). */
export function f16RowsFn(v: Variant): FuncDef {
  const fn = new Fn('f16_rows', [['w', I32], ['r0', I32], ['r1', I32], ['K', I32], ['x', I32], ['M', I32], ['y', I32], ['ldy', I32]]);
  const P = fn.p;
  const r = fn.i32(), m = fn.i32(), pw = fn.i32(), px = fn.i32(), end = fn.i32();
  const a0 = fn.v128(), a1 = fn.v128(), wv = fn.v128(), h = fn.v128();
  const madd = (acc: number, a: Code, b: Code): Code =>
    set(acc, v === 'relaxed' ? v128.f32x4_relaxed_madd(a, b, get(acc)) : v128.f32x4_add(get(acc), v128.f32x4_mul(a, b)));
  return fn.def(
    set(r, get(P.r0)),
    block(loop(
      brIf(1, i32.ge_u(get(r), get(P.r1))),
      set(m, c(0)),
      block(loop(
        brIf(1, i32.ge_u(get(m), get(P.M))),
        set(a0, v128.zero()),
        set(a1, v128.zero()),
        set(pw, i32.add(get(P.w), i32.shl(i32.mul(get(r), get(P.K)), c(1)))),
        set(end, i32.add(get(pw), i32.shl(get(P.K), c(1)))),
        set(px, i32.add(get(P.x), i32.shl(i32.mul(get(m), get(P.K)), c(2)))),
        loop(
          set(wv, v128.load(get(pw))),
          set(h, v128.i32x4_extend_low_i16x8_u(get(wv))),
          madd(a0, f16x4(fn, get(h)), v128.load(get(px))),
          set(h, v128.i32x4_extend_high_i16x8_u(get(wv))),
          madd(a1, f16x4(fn, get(h)), v128.load(get(px), 16)),
          set(px, i32.add(get(px), c(32))),
          set(pw, i32.add(get(pw), c(16))),
          brIf(0, i32.lt_u(get(pw), get(end))),
        ),
        set(a0, v128.f32x4_add(get(a0), get(a1))),
        f32.store(i32.add(get(P.y), i32.shl(i32.add(i32.mul(get(m), get(P.ldy)), get(r)), c(2))),
          f32.add(f32.add(v128.f32x4_extract_lane(get(a0), 0), v128.f32x4_extract_lane(get(a0), 1)), f32.add(v128.f32x4_extract_lane(get(a0), 2), v128.f32x4_extract_lane(get(a0), 3)))),
        set(m, i32.add(get(m), c(1))),
        br(0),
      )),
      set(r, i32.add(get(r), c(1))),
      br(0),
    )),
  );
}
