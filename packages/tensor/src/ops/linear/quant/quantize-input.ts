// The WebAssembly quantizers of a product's input: float32 rows → the records of layout.ts, with
// the float32 operations of dtypes/q8_0.ts, q8_1.ts and q8_k.ts (ggml's x86 quantize_row_q8_0 /
// q8_1 and quantize_row_q8_K_ref), so the quants, scales and sums are the TypeScript ones bit for
// bit: products rounded to nearest even (f32x4.nearest = rint), converted, narrowed to int8.
import { block, br, brIf, f32, get, i32, if_, loop, select, seq, set, tee, v128, ValType, type Code, type FuncDef } from '../../../wasm/encoder';
import { Fn } from './fn';
import { roundF16 } from './f16';
import { record, TILE, type ActLayout, type AuxKind, type Traits, type Variant, actLayout, auxKind, isSuper } from './layout';

const { i32: I32 } = ValType;
const c = i32.const;

/** The lanes of 16 values that the two-step form's i32x4.dot_i16x8_s on the low and high halves pairs into the relaxed form's lanes (4l … 4l + 3 in lane l). */
export const PERM16 = [0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15] as const;

/** The name of the quantizer a format's products use in a variant. */
export function quantizerName(t: Traits, v: Variant): string {
  return `quant_${isSuper(t) ? 'q8_k' : 'q8_0'}_${actLayout(t, v)}_${auxKind(t)}`;
}

/** Every quantizer the given formats need in a variant. */
export function quantizerFns(ts: readonly Traits[], v: Variant): FuncDef[] {
  const seen = new Map<string, FuncDef>();
  for (const t of ts) {
    const name = quantizerName(t, v);
    if (!seen.has(name)) seen.set(name, quantizerFn(name, t, v));
  }
  return [...seen.values()];
}

/** Σ of the four i32 lanes of a local. */
const hsumI32 = (x: number): Code => i32.add(i32.add(v128.i32x4_extract_lane(get(x), 0), v128.i32x4_extract_lane(get(x), 1)), i32.add(v128.i32x4_extract_lane(get(x), 2), v128.i32x4_extract_lane(get(x), 3)));

/** Canonical-lane sums of 16 int8 (lane l: values 4l … 4l + 3). */
const laneSums = (a: Code): Code => v128.i32x4_extadd_pairwise_i16x8_s(v128.i16x8_extadd_pairwise_i8x16_s(a));

/**
 * `quant_<act>_<layout>_<aux>(xf, K, M, dst)`: rows [0, M) of K floats at xf → records at dst
 * (layout.ts): tiles of 4 rows, the last of M mod 4.
 */
function quantizerFn(name: string, t: Traits, v: Variant): FuncDef {
  const fn = new Fn(name, [['xf', I32], ['K', I32], ['M', I32], ['dst', I32]]);
  const P = fn.p;
  const superBlock = isSuper(t), layout = actLayout(t, v), aux = auxKind(t), B = superBlock ? 256 : 32;
  const r4 = record(t, v, TILE), r1 = record(t, v, 1);
  // Per-T record geometry is linear in T: bytes = T·(q + auxRow) + 16 (+ 16 for s).
  const perRow = r4.q + r4.auxRow, fixed = r4.bytes - TILE * perRow;
  const m = fn.i32(), tl = fn.i32(), tt = fn.i32(), T = fn.i32(), rec = fn.i32(), base = fn.i32(), src = fn.i32(), b = fn.i32(), nb = fn.i32();
  const rb = fn.i32(), qd = fn.i32(), dreg = fn.i32(), ax = fn.i32();
  const amax = fn.f32(), dv = fn.f32(), id = fn.f32(), mx = fn.f32(), tmp = fn.f32();
  const mv = fn.v128(), sv = fn.v128(), A = fn.v128(), Bv = fn.v128(), ls = fn.v128(), j = fn.i32(), bs = fn.i32(), bsPrev = fn.i32();
  void r1;

  /** Store the float `x` as row tt's lane of the 16-byte region at `reg` (all lanes when T = 1; the region zeroed by row 0). */
  const storeLane = (reg: number, x: Code): Code => if_(i32.eq(get(T), c(1)),
    v128.store(get(reg), v128.f32x4_splat(x)),
    seq(if_(i32.eqz(get(tt)), v128.store(get(reg), v128.zero())), f32.store(i32.add(get(reg), i32.shl(get(tt), c(2))), x)));

  /** int8x16 of the 16 floats at src + o times the splat in `sv`, rounded to nearest even (clamped to 127 for Q8_K). */
  const q16 = (o: number): Code => {
    const q = (k: number): Code => {
      const r = v128.i32x4_trunc_sat_f32x4_s(v128.f32x4_nearest(v128.f32x4_mul(v128.load(get(src), o + 16 * k), get(sv))));
      return superBlock ? v128.i32x4_min_s(r, fn.splat32(127)) : r;
    };
    return v128.i8x16_narrow_i16x8_s(v128.i16x8_narrow_i32x4_s(q(0), q(1)), v128.i16x8_narrow_i32x4_s(q(2), q(3)));
  };

  /** Store the 16 quants in local `a`, values [o, o + 16) of the block, at qd in the layout. */
  const storeQuants = (a: number, o: number): Code => {
    switch (layout as ActLayout) {
      case 'plain': return v128.store(get(qd), get(a), o);
      case 'split': {
        const at = 64 * (o >> 5) + (o & 31);
        return seq(v128.store(get(qd), v128.i8x16_max_s(get(a), fn.splat8(0)), at), v128.store(get(qd), v128.i8x16_max_s(v128.i8x16_neg(get(a)), fn.splat8(0)), at + 32));
      }
      case 'i16p': {
        const p = v128.swizzle(get(a), fn.bytes([...PERM16]));
        return seq(v128.store(get(qd), v128.i16x8_extend_low_i8x16_s(p), 2 * o), v128.store(get(qd), v128.i16x8_extend_high_i8x16_s(v128.swizzle(get(a), fn.bytes([...PERM16]))), 2 * o + 16));
      }
      case 'i16': return seq(v128.store(get(qd), v128.i16x8_extend_low_i8x16_s(get(a)), 2 * o), v128.store(get(qd), v128.i16x8_extend_high_i8x16_s(get(a)), 2 * o + 16));
    }
  };

  /** max |x| of the n floats at src into amax. */
  const absMax = (n: number): Code => {
    const body: Code[] = [set(mv, v128.zero())];
    if (n === 32) for (let k = 0; k < 8; k++) body.push(set(mv, v128.f32x4_max(get(mv), v128.f32x4_abs(v128.load(get(src), 16 * k)))));
    else {
      body.push(set(j, c(0)), loop(
        ...Array.from({ length: 8 }, (_, k) => set(mv, v128.f32x4_max(get(mv), v128.f32x4_abs(v128.load(i32.add(get(src), get(j)), 16 * k))))),
        brIf(0, i32.lt_u(tee(j, i32.add(get(j), c(128))), c(4 * n))),
      ));
    }
    body.push(set(amax, f32.max(f32.max(v128.f32x4_extract_lane(get(mv), 0), v128.f32x4_extract_lane(get(mv), 1)), f32.max(v128.f32x4_extract_lane(get(mv), 2), v128.f32x4_extract_lane(get(mv), 3)))));
    return seq(...body);
  };

  const q8_0Block = (): Code => seq(
    absMax(32),
    set(tmp, f32.div(get(amax), f32.const(127))),
    set(dv, roundF16(get(tmp))),
    set(id, select(f32.div(f32.const(127), get(amax)), f32.const(0), f32.ne(get(amax), f32.const(0)))),
    set(sv, v128.f32x4_splat(get(id))),
    set(A, q16(0)),
    set(Bv, q16(64)),
    storeQuants(A, 0),
    storeQuants(Bv, 16),
    storeLane(dreg, get(dv)),
    aux === 'none' ? [] : set(ls, v128.i32x4_add(laneSums(get(A)), laneSums(get(Bv)))),
    aux === 'lanes' ? v128.store(get(ax), get(ls)) : [],
    // Q8_1's s = f16(d·Σq) with d = amax/127 before its rounding (the sign kept: round |v|, then copy the sign).
    aux === 's' ? seq(
      set(tmp, f32.mul(get(tmp), f32.convert_i32_s(hsumI32(ls)))),
      set(mx, f32.abs(get(tmp))),
      storeLane(ax, f32.copysign(roundF16(get(mx)), get(tmp))),
    ) : [],
  );

  const q8_kBlock = (): Code => {
    // Two 16-value chunks per iteration: their per-16 sums, and the per-32 sum of the pair.
    const chunk = (k: 0 | 1): Code => seq(
      set(A, q16(64 * k)),
      storeQuants(A, 16 * k),
      set(ls, laneSums(get(A))),
      set(bs, hsumI32(ls)),
      i32.store16(i32.add(get(ax), i32.shl(get(j), c(1))), get(bs), 2 * k),
      k === 0 ? set(bsPrev, get(bs)) : i32.store16(get(ax), i32.add(get(bsPrev), get(bs)), 32 + 0),
    );
    return seq(
      absMax(256),
      // The first value of largest magnitude.
      set(j, c(0)),
      block(loop(
        set(mx, f32.load(i32.add(get(src), i32.shl(get(j), c(2))))),
        brIf(1, f32.eq(f32.abs(get(mx)), get(amax))),
        brIf(0, i32.lt_u(tee(j, i32.add(get(j), c(1))), c(256))),
      )),
      set(id, select(f32.div(f32.const(-127), get(mx)), f32.const(0), f32.ne(get(amax), f32.const(0)))),
      set(dv, select(f32.div(f32.const(1), get(id)), f32.const(0), f32.ne(get(amax), f32.const(0)))),
      storeLane(dreg, get(dv)),
      set(sv, v128.f32x4_splat(get(id))),
      // j: pair index 0 … 7 (values 32j …); ax and qd advance with it.
      set(j, c(0)),
      loop(
        chunk(0),
        chunk(1),
        set(src, i32.add(get(src), c(128))),
        set(qd, i32.add(get(qd), c(layout === 'plain' ? 32 : 64))),
        set(ax, i32.add(get(ax), c(2))),
        brIf(0, i32.lt_u(tee(j, i32.add(get(j), c(1))), c(8))),
      ),
    );
  };

  const body = seq(
    set(nb, i32.div_u(get(P.K), c(B))),
    set(m, c(0)),
    block(loop(
      brIf(1, i32.ge_u(get(m), get(P.M))),
      set(tl, i32.shr_u(get(m), c(2))),
      set(tt, i32.and(get(m), c(3))),
      set(T, select(c(TILE), i32.and(get(P.M), c(3)), i32.lt_u(get(tl), i32.shr_u(get(P.M), c(2))))),
      set(rec, i32.add(i32.mul(get(T), c(perRow)), c(fixed))),
      set(base, i32.add(get(P.dst), i32.mul(i32.mul(get(tl), get(nb)), c(r4.bytes)))),
      set(src, i32.add(get(P.xf), i32.shl(i32.mul(get(m), get(P.K)), c(2)))),
      set(b, c(0)),
      loop(
        set(rb, i32.add(get(base), i32.mul(get(b), get(rec)))),
        set(qd, i32.add(get(rb), i32.mul(get(tt), c(r4.q)))),
        set(dreg, i32.add(get(rb), i32.mul(get(T), c(r4.q)))),
        set(ax, i32.add(i32.add(get(dreg), c(16)), i32.mul(get(tt), c(r4.auxRow)))),
        superBlock ? q8_kBlock() : seq(q8_0Block(), set(src, i32.add(get(src), c(128)))),
        brIf(0, i32.lt_u(tee(b, i32.add(get(b), c(1))), get(nb))),
      ),
      set(m, i32.add(get(m), c(1))),
      br(0),
    )),
  );
  return fn.def(body);
}
