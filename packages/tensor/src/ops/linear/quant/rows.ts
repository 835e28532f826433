// The product kernels, generated per format, variant and tile height T (1 … 4):
//
//   <format>_t<T>(w, rs, r0, r1, nb, xr, nt, y, ldy, sc)   and   <format>_r2 (the same, T = 1)
//
// y[(T·i + t)·ldy + r] = x[T·i + t] · W[r] for weight rows r in [r0, r1) (row r at w + r·rs, nb
// blocks) and nt tiles i of T activation rows, whose records (layout.ts) start at xr; sc is the
// call's scratch (scratchBytes). Tiles are the outer loop (a tile's records stay in L1 while the
// rows stream), rows the inner one; each block of a row is decoded once for the T rows. The
// `_r2` kernels (one activation row, decode) take the rows two at a time (r1 − r0 even), each
// activation vector loaded once for both.
//
// Every output is one sum in a fixed order, whatever T, the variant or the rows a call covers
// (so a split of the rows over threads, or of a batch into tiles, never changes a bit):
// - 32-value formats: per block b the exact integer sums of the four lanes l (values 4l … 4l + 3
//   of each 16), I_bl; D_b = f32(d_w·d_x); acc_l += f32(I_bl)·D_b for b = 0, 1, …; then
//   y = (acc_0 + acc_1) + (acc_2 + acc_3), plus S = Σ_b f32(m_b·s_b) (Q4_1/Q5_1: the min times Q8_1's
//   s, summed in block order) last.
// - super-blocks: I_b = Σ_j sc_j·(Σ_i w_i·x_i) and Mi_b = Σ_j mn_j·bsum_j exactly in i32;
//   A += f32(f32(d·d_x)·f32(I_b)), B += f32(f32(dmin·d_x)·f32(Mi_b)) in block order; y = A − B.
// (reference.ts computes the same, operation for operation.)
//
// Integer dot products: relaxed, `i32x4.relaxed_dot_i8x16_i7x16_add_s(a, b, c)` with b's lanes
// in 0 … 127: unsigned quants u (w = u − offset: the offset times the block sums is taken off
// once per block) as b against the int8 activations; for the signed formats the weights as a
// against the activations split by sign (both 7-bit). simd: both sides widened to i16 and
// `i32x4.dot_i16x8_s`; the 32-value formats' weights permuted (PERM16) so the i32 lanes hold what
// the relaxed form's hold, the super-blocks' weights times their group scale in i16 first.
import { block, br, brIf, f32, get, i32, loop, seq, set, tee, v128, ValType, type Code, type FuncDef } from '../../../wasm/encoder';
import type { QuantDType } from '../../../dtypes/index';
import { Fn } from './fn';
import { f16x4 } from './f16';
import { PERM16 } from './quantize-input';
import { actLayout, isSuper, record, traits, type Traits, type Variant } from './layout';
import { IQ4_LEVELS } from '../../../dtypes/iq4_nl';

const { i32: I32 } = ValType;
const c = i32.const;

/** Scratch bytes of one row of nb blocks (a kernel takes one per row it has in flight). */
const rowScratch = (nb: number): number => Math.ceil(Math.max(4 * nb + 16, 128) / 64) * 64;
/** Scratch bytes a kernel call needs for rows of nb blocks. */
export const scratchBytes = (nb: number): number => 2 * rowScratch(nb);

/** The exported name of a kernel: tile height T, or (R = 2, T = 1) two rows at a time. */
export const kernelName = (name: QuantDType, T: number, R = 1): string => (R === 1 ? `${name}_t${T}` : `${name}_r${R}`);

/** i8x16.shuffle lanes that splat 32-bit lane k. */
const laneSplat = (k: number): number[] => Array.from({ length: 16 }, (_, i) => 4 * k + (i & 3));
/** i8x16.shuffle lanes picking 32-bit lanes (a: 0 … 3, b: 4 … 7). */
const lanes32 = (...ls: number[]): number[] => ls.flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3]);

/** The f32 lanes of a local, summed (a0 + a1) + (a2 + a3). */
const hsumF32 = (x: number): Code => f32.add(f32.add(v128.f32x4_extract_lane(get(x), 0), v128.f32x4_extract_lane(get(x), 1)), f32.add(v128.f32x4_extract_lane(get(x), 2), v128.f32x4_extract_lane(get(x), 3)));

/** An expression whose lane t is Σ of the i32 lanes of vs[t] (T ≤ 4 locals; missing ones count as zero; it sets the two tmp locals first). */
function transposeSum(fn: Fn, vs: number[], tmp: [number, number]): Code {
  const z = fn.splat32(0), g = (k: number): Code => (k < vs.length ? get(vs[k]!) : z);
  if (vs.length === 1) {
    return seq(
      set(tmp[0], v128.i32x4_add(g(0), v128.shuffle(g(0), g(0), lanes32(2, 3, 0, 1)))),
      v128.i32x4_add(get(tmp[0]), v128.shuffle(get(tmp[0]), get(tmp[0]), lanes32(1, 0, 3, 2))),
    );
  }
  return seq(
    set(tmp[0], v128.i32x4_add(v128.shuffle(g(0), g(1), lanes32(0, 1, 4, 5)), v128.shuffle(g(0), g(1), lanes32(2, 3, 6, 7)))),
    set(tmp[1], v128.i32x4_add(v128.shuffle(g(2), g(3), lanes32(0, 1, 4, 5)), v128.shuffle(g(2), g(3), lanes32(2, 3, 6, 7)))),
    v128.i32x4_add(v128.shuffle(get(tmp[0]), get(tmp[1]), lanes32(0, 2, 4, 6)), v128.shuffle(get(tmp[0]), get(tmp[1]), lanes32(1, 3, 5, 7))),
  );
}

/** One kernel function (R = 2 only with T = 1). */
export function rowsFn(name: QuantDType, v: Variant, T: number, R = 1): FuncDef {
  const t = traits(name);
  if (R !== 1 && T !== 1) throw new Error('two rows at a time only with one activation row');
  return isSuper(t) ? superFn(t, v, T, R) : blockFn(t, v, T, R);
}

/** The loops shared by both kinds: tiles, then rows (R at a time); `perRow` computes and stores the T outputs of rows r … r + R − 1. */
function frame(fn: Fn, t: Traits, v: Variant, T: number, R: number, perRow: (L: FrameLocals) => Code): FuncDef {
  const P = fn.p, rec = record(t, v, T);
  const L: FrameLocals = { r: fn.i32(), p: fn.i32(), xt: fn.i32(), yt: fn.i32(), it: fn.i32(), rec: fn.i32(), end: fn.i32() };
  return fn.def(
    set(L.xt, get(P.xr)),
    set(L.yt, get(P.y)),
    set(L.it, c(0)),
    block(loop(
      brIf(1, i32.ge_u(get(L.it), get(P.nt))),
      set(L.r, get(P.r0)),
      block(loop(
        brIf(1, i32.ge_u(get(L.r), get(P.r1))),
        set(L.p, i32.add(get(P.w), i32.mul(get(L.r), get(P.rs)))),
        set(L.end, i32.add(get(L.p), get(P.rs))),
        set(L.rec, get(L.xt)),
        perRow(L),
        set(L.r, i32.add(get(L.r), c(R))),
        br(0),
      )),
      set(L.xt, i32.add(get(L.xt), i32.mul(get(P.nb), c(rec.bytes)))),
      set(L.yt, i32.add(get(L.yt), i32.shl(i32.mul(get(P.ldy), c(T)), c(2)))),
      set(L.it, i32.add(get(L.it), c(1))),
      br(0),
    )),
  );
}

interface FrameLocals { r: number; p: number; xt: number; yt: number; it: number; rec: number; end: number }

const params = [['w', I32], ['rs', I32], ['r0', I32], ['r1', I32], ['nb', I32], ['xr', I32], ['nt', I32], ['y', I32], ['ldy', I32], ['sc', I32]] as const;

/** Store output t of row r + ρ (value on the stack from `x`). */
const storeY = (fn: Fn, L: FrameLocals, tt: number, x: Code, ρ = 0): Code =>
  f32.store(i32.add(get(L.yt), i32.shl(i32.add(i32.mul(get(fn.p.ldy), c(tt)), get(L.r)), c(2))), x, 4 * ρ);


// ---------------------------------------------------------------------------------------------
// 32-value blocks

/** The two weight vectors (values 0 … 15, 16 … 31) of the block at p, into u0, u1. */
function blockWeights(fn: Fn, t: Traits, p: Code, u: [number, number], tmp: number): Code {
  const nib = (q: Code, high: boolean): Code => (high ? v128.and(v128.i16x8_shr_u(q, c(4)), fn.splat8(15)) : v128.and(q, fn.splat8(15)));
  const bits = [1, 2, 4, 8, 16, 32, 64, 128];
  // Bytes k, k + 1 of the 4 fifth-bit bytes in `tmp` spread to 16 bytes of 0 or 16.
  const fifth = (k: number): Code => {
    const spread = v128.and(v128.swizzle(get(tmp), fn.bytes([...Array(8).fill(k), ...Array(8).fill(k + 1)])), fn.bytes([...bits, ...bits]));
    return v128.and(v128.i8x16_eq(spread, fn.bytes([...bits, ...bits])), fn.splat8(16));
  };
  const kv = fn.bytes([...IQ4_LEVELS]);
  switch (t.format.name) {
    case 'q8_0': return seq(set(u[0], v128.load(p, 2)), set(u[1], v128.load(p, 18)));
    case 'q4_0': return seq(set(u[1], v128.load(p, 2)), set(u[0], nib(get(u[1]), false)), set(u[1], nib(get(u[1]), true)));
    case 'q4_1': return seq(set(u[1], v128.load(p, 4)), set(u[0], nib(get(u[1]), false)), set(u[1], nib(get(u[1]), true)));
    case 'iq4_nl': return seq(set(u[1], v128.load(p, 2)), set(u[0], v128.swizzle(kv, nib(get(u[1]), false))), set(u[1], v128.swizzle(kv, nib(get(u[1]), true))));
    case 'q5_0': case 'q5_1': {
      const [qh, qs] = t.format.name === 'q5_0' ? [2, 6] : [4, 8];
      return seq(
        set(tmp, v128.load32_splat(p, qh)),
        set(u[1], v128.load(p, qs)),
        set(u[0], v128.or(nib(get(u[1]), false), fifth(0))),
        set(u[1], v128.or(nib(get(u[1]), true), fifth(2))),
      );
    }
    default: throw new Error(`not a 32-value format: ${t.format.name}`);
  }
}

function blockFn(t: Traits, v: Variant, T: number, R: number): FuncDef {
  const fn = new Fn(kernelName(t.format.name, T, R), params);
  const P = fn.p, rec = record(t, v, T), layout = actLayout(t, v), BB = t.format.blockBytes, mins = t.format.mins;
  const rows = Array.from({ length: R }, (_, ρ) => ρ);
  const u = rows.map((): [number, number] => [fn.v128(), fn.v128()]), D4 = rows.map(() => fn.v128()), S4 = rows.map(() => fn.v128());
  const wl = rows.map(() => [fn.v128(), fn.v128()]), wh = rows.map(() => [fn.v128(), fn.v128()]);
  const acc = rows.map(() => Array.from({ length: T }, () => fn.v128()));
  const tmp = fn.v128(), h = fn.v128(), hm = fn.v128(), s = fn.v128(), n = fn.v128();
  /** Two rows: the block's activation vectors (16-byte offsets 0, 16, 32, 48 of the record) loaded once for both. */
  const xv = [fn.v128(), fn.v128(), fn.v128(), fn.v128()], xCount = layout === 'plain' ? 2 : 4;
  const b = fn.i32(), q = fn.i32(), pp = rows.map(() => fn.i32()), rr = fn.i32(), sc = rows.map(() => fn.i32());
  const zero = fn.splat32(0);
  const logOffset = Math.log2(t.offset || 1);

  // First pass of row ρ: d_w of every block as f32 at its scratch + 4b (four f16 widened in one
  // vector), and for Q4_1/Q5_1 S4 += m_b·s_b (lanes t) in block order.
  const mTerm = (ρ: number, mf: Code, k: number): Code => set(S4[ρ]!, v128.f32x4_add(get(S4[ρ]!), v128.f32x4_mul(v128.shuffle(mf, mf, laneSplat(k)), v128.load(get(rr), rec.aux + k * rec.bytes))));
  const firstPass = (L: FrameLocals, ρ: number): Code => seq(
    set(S4[ρ]!, v128.zero()),
    set(pp[0]!, ρ === 0 ? get(L.p) : i32.add(get(L.p), get(P.rs))),
    set(q, get(sc[ρ]!)),
    set(rr, get(L.rec)),
    set(b, i32.and(get(P.nb), c(-4))),
    // Whole groups of four blocks.
    block(
      brIf(0, i32.eqz(get(b))),
      loop(
        set(h, v128.load16_lane(get(pp[0]!), v128.load16_lane(get(pp[0]!), v128.load16_lane(get(pp[0]!), v128.load16_lane(get(pp[0]!), zero, 0, t.dAt), 2, t.dAt + BB), 4, t.dAt + 2 * BB), 6, t.dAt + 3 * BB)),
        v128.store(get(q), f16x4(fn, get(h))),
        mins ? seq(
          set(hm, v128.load16_lane(get(pp[0]!), v128.load16_lane(get(pp[0]!), v128.load16_lane(get(pp[0]!), v128.load16_lane(get(pp[0]!), zero, 0, t.dAt + 2), 2, t.dAt + 2 + BB), 4, t.dAt + 2 + 2 * BB), 6, t.dAt + 2 + 3 * BB)),
          set(hm, f16x4(fn, get(hm))),
          ...[0, 1, 2, 3].map((k) => mTerm(ρ, get(hm), k)),
          set(rr, i32.add(get(rr), c(4 * rec.bytes))),
        ) : [],
        set(pp[0]!, i32.add(get(pp[0]!), c(4 * BB))),
        set(q, i32.add(get(q), c(16))),
        brIf(0, i32.ne(tee(b, i32.sub(get(b), c(4))), c(0))),
      ),
    ),
    // The last nb mod 4 blocks, one at a time.
    set(b, i32.and(get(P.nb), c(3))),
    block(
      brIf(0, i32.eqz(get(b))),
      loop(
        set(h, v128.load16_lane(get(pp[0]!), zero, 0, t.dAt)),
        f32.store(get(q), v128.f32x4_extract_lane(f16x4(fn, get(h)), 0)),
        mins ? seq(
          set(hm, f16x4(fn, v128.load16_lane(get(pp[0]!), zero, 0, t.dAt + 2))),
          mTerm(ρ, get(hm), 0),
          set(rr, i32.add(get(rr), c(rec.bytes))),
        ) : [],
        set(pp[0]!, i32.add(get(pp[0]!), c(BB))),
        set(q, i32.add(get(q), c(4))),
        brIf(0, i32.ne(tee(b, i32.sub(get(b), c(1))), c(0))),
      ),
    ),
  );

  /** The block's integer lane sums for activation row tt and weight row ρ into s. */
  const dot = (tt: number, ρ: number): Code => {
    const x = (off: number): Code => (R > 1 ? get(xv[off >> 4]!) : v128.load(get(rr), tt * rec.q + off));
    const [u0, u1] = u[ρ]!;
    switch (layout) {
      case 'plain':
        return set(s, v128.i32x4_relaxed_dot_i8x16_i7x16_add_s(x(16), get(u1), v128.i32x4_relaxed_dot_i8x16_i7x16_add_s(x(0), get(u0), zero)));
      case 'split':
        return seq(
          set(s, v128.i32x4_relaxed_dot_i8x16_i7x16_add_s(get(u1), x(16), v128.i32x4_relaxed_dot_i8x16_i7x16_add_s(get(u0), x(0), zero))),
          set(n, v128.i32x4_relaxed_dot_i8x16_i7x16_add_s(get(u1), x(48), v128.i32x4_relaxed_dot_i8x16_i7x16_add_s(get(u0), x(32), zero))),
          set(s, v128.i32x4_sub(get(s), get(n))),
        );
      default:
        return set(s, v128.i32x4_add(
          v128.i32x4_add(v128.i32x4_dot_i16x8_s(get(wl[ρ]![0]!), x(0)), v128.i32x4_dot_i16x8_s(get(wh[ρ]![0]!), x(16))),
          v128.i32x4_add(v128.i32x4_dot_i16x8_s(get(wl[ρ]![1]!), x(32)), v128.i32x4_dot_i16x8_s(get(wh[ρ]![1]!), x(48))),
        ));
    }
  };

  const mainPass = (L: FrameLocals): Code => seq(
    ...acc.flat().map((a) => set(a, v128.zero())),
    ...rows.map((ρ) => set(pp[ρ]!, ρ === 0 ? get(L.p) : i32.add(get(L.p), get(P.rs)))),
    set(q, c(0)),
    set(rr, get(L.rec)),
    loop(
      ...rows.map((ρ) => seq(
        blockWeights(fn, t, get(pp[ρ]!), u[ρ]!, tmp),
        layout === 'i16p' ? seq(...[0, 1].map((k) => seq(
          set(tmp, v128.swizzle(get(u[ρ]![k]!), fn.bytes([...PERM16]))),
          set(wl[ρ]![k]!, v128.i16x8_extend_low_i8x16_s(get(tmp))),
          set(wh[ρ]![k]!, v128.i16x8_extend_high_i8x16_s(get(tmp))),
        ))) : [],
        set(D4[ρ]!, v128.f32x4_mul(v128.load32_splat(i32.add(get(sc[ρ]!), get(q))), v128.load(get(rr), rec.d))),
      )),
      R > 1 ? seq(...xv.slice(0, xCount).map((x, k) => set(x, v128.load(get(rr), 16 * k)))) : [],
      ...rows.flatMap((ρ) => acc[ρ]!.map((a, tt) => seq(
        dot(tt, ρ),
        t.offset ? set(s, v128.i32x4_sub(get(s), v128.i32x4_shl(v128.load(get(rr), rec.aux + 16 * tt), c(logOffset)))) : [],
        set(a, v128.f32x4_add(get(a), v128.f32x4_mul(v128.f32x4_convert_i32x4_s(get(s)), T === 1 ? get(D4[ρ]!) : v128.shuffle(get(D4[ρ]!), get(D4[ρ]!), laneSplat(tt))))),
      ))),
      ...rows.map((ρ) => set(pp[ρ]!, i32.add(get(pp[ρ]!), c(BB)))),
      set(q, i32.add(get(q), c(4))),
      set(rr, i32.add(get(rr), c(rec.bytes))),
      brIf(0, i32.lt_u(get(pp[0]!), get(L.end))),
    ),
    ...rows.flatMap((ρ) => acc[ρ]!.map((a, tt) => storeY(fn, L, tt, mins ? f32.add(hsumF32(a), v128.f32x4_extract_lane(get(S4[ρ]!), tt)) : hsumF32(a), ρ))),
  );

  return frame(fn, t, v, T, R, (L) => seq(
    // Row 1's scratch after row 0's 4·nb bytes.
    ...rows.map((ρ) => set(sc[ρ]!, ρ === 0 ? get(P.sc) : i32.add(get(P.sc), i32.add(i32.shl(get(P.nb), c(2)), c(16))))),
    ...rows.map((ρ) => firstPass(L, ρ)),
    mainPass(L),
  ));
}

// ---------------------------------------------------------------------------------------------
// Super-blocks (k-quants, IQ4_XS)

/** How a super-block's 256 weights are walked: `iters` iterations of `groups` groups (16 or 32 values each) over `values` activations. */
interface SuperPlan {
  iters: number;
  values: number;
  groups: number;
  /** Before the iterations (pointers into the block at p). */
  init(p: Code): Code;
  /** Chunk k (16 weights, unsigned or signed int8) of group g of the iteration; `x` the value offset of its activations in the iteration. */
  chunk(g: number, k: number): { u: Code; x: number };
  /** After each iteration. */
  next(): Code;
}

function superPlan(fn: Fn, t: Traits): SuperPlan {
  const wq = fn.i32(), ph = fn.i32(), m = [fn.v128(), fn.v128()];
  const m15 = fn.splat8(15), m3 = fn.splat8(3);
  const shr = (x: Code, k: number): Code => (k === 0 ? x : v128.i16x8_shr_u(x, c(k)));
  /** The bits of each byte of x moved by `by` (left when positive) and kept where `mask` is set: one i16 shift and the mask, which clears what the shift brings in from the neighbouring byte. */
  const moved = (x: Code, by: number, mask: number): Code => v128.and(by > 0 ? v128.i16x8_shl(x, c(by)) : shr(x, -by), fn.splat8(mask));
  const ld = (ptr: number, off: number): Code => v128.load(get(ptr), off);
  switch (t.format.name) {
    case 'q4_k': return {
      iters: 4, values: 64, groups: 2,
      init: (p) => set(wq, i32.add(p, c(16))),
      chunk: (g, k) => ({ u: v128.and(shr(ld(wq, 16 * k), 4 * g), m15), x: 32 * g + 16 * k }),
      next: () => set(wq, i32.add(get(wq), c(32))),
    };
    case 'q5_k': return {
      iters: 4, values: 64, groups: 2,
      init: (p) => seq(set(wq, i32.add(p, c(48))), set(m[0]!, v128.load(p, 16)), set(m[1]!, v128.load(p, 32))),
      chunk: (g, k) => ({ u: v128.or(v128.and(shr(ld(wq, 16 * k), 4 * g), m15), moved(get(m[k]!), 4 - g, 16)), x: 32 * g + 16 * k }),
      next: () => seq(set(wq, i32.add(get(wq), c(32))), set(m[0]!, shr(get(m[0]!), 2)), set(m[1]!, shr(get(m[1]!), 2))),
    };
    case 'q6_k': return {
      // Iteration h: values 128h + 32k + 16j + l: nibble k >> 1 of ql[64h + 32(k & 1) + 16j + l], bits 2k, 2k + 1 of qh[32h + 16j + l].
      iters: 2, values: 128, groups: 8,
      init: (p) => seq(set(wq, p), set(ph, i32.add(p, c(128)))),
      chunk: (g) => {
        const k = g >> 1, j = g & 1;
        return { u: v128.or(v128.and(shr(ld(wq, 32 * (k & 1) + 16 * j), 4 * (k >> 1)), m15), moved(ld(ph, 16 * j), 4 - 2 * k, 48)), x: 32 * k + 16 * j };
      },
      next: () => seq(set(wq, i32.add(get(wq), c(64))), set(ph, i32.add(get(ph), c(32)))),
    };
    case 'q2_k': return {
      iters: 2, values: 128, groups: 8,
      init: (p) => set(wq, i32.add(p, c(16))),
      chunk: (g) => ({ u: v128.and(shr(ld(wq, 16 * (g & 1)), 2 * (g >> 1)), m3), x: 16 * g }),
      next: () => set(wq, i32.add(get(wq), c(32))),
    };
    case 'q3_k': return {
      // The high bit of value 128h + 32s + l is bit 4h + s of hmask[l]: m holds hmask shifted by 4h.
      iters: 2, values: 128, groups: 8,
      init: (p) => seq(set(wq, i32.add(p, c(32))), set(m[0]!, v128.load(p, 0)), set(m[1]!, v128.load(p, 16))),
      chunk: (g) => {
        const s = g >> 1, j = g & 1;
        return { u: v128.or(v128.and(shr(ld(wq, 16 * j), 2 * s), m3), moved(get(m[j]!), 2 - s, 4)), x: 16 * g };
      },
      next: () => seq(set(wq, i32.add(get(wq), c(32))), set(m[0]!, shr(get(m[0]!), 4)), set(m[1]!, shr(get(m[1]!), 4))),
    };
    case 'iq4_xs': {
      const kv = fn.bytes([...IQ4_LEVELS]);
      return {
        iters: 8, values: 32, groups: 1,
        init: (p) => set(wq, i32.add(p, c(8))),
        chunk: (_g, k) => ({ u: v128.swizzle(kv, v128.and(shr(ld(wq, 0), 4 * k), m15)), x: 16 * k }),
        next: () => set(wq, i32.add(get(wq), c(16))),
      };
    }
    default: throw new Error(`not a super-block format: ${t.format.name}`);
  }
}

/**
 * The group scales (and mins) of the super-block at p as i16: sc16 at sc + 64 (16 or 8 lanes),
 * mn16 at sc + 96; with `i32Scales` the scales also as i32 at sc (one splat load each).
 */
function superScales(fn: Fn, t: Traits, v: Variant, p: Code, sc: Code, x: [number, number, number], i32Scales: boolean): Code {
  const [va, vb, vc] = x;
  const G = 256 / t.format.groupValues;
  const m15 = fn.splat8(15);
  const store16 = (lo: Code, hi: Code | null, at: number): Code => seq(v128.store(sc, lo, at), hi === null ? [] : v128.store(sc, hi, at + 16));
  let decode: Code;
  switch (t.format.name) {
    case 'q2_k': decode = seq(
      set(va, v128.load(p, 0)),
      set(vb, v128.and(get(va), m15)),
      set(vc, v128.and(v128.i16x8_shr_u(get(va), c(4)), m15)),
      store16(v128.i16x8_extend_low_i8x16_u(get(vb)), v128.i16x8_extend_high_i8x16_u(get(vb)), 64),
      store16(v128.i16x8_extend_low_i8x16_u(get(vc)), v128.i16x8_extend_high_i8x16_u(get(vc)), 96),
    ); break;
    case 'q3_k': {
      // Bytes 0 … 11 of the scales; low 4 bits of scale j: byte j (j < 8) low nibble, byte j − 8 high;
      // high 2 bits: bits 2(j >> 2), +1 of byte 8 + (j & 3), moved to bits 14, 15 by a multiply and shifted down.
      const hi = (half: number): Code => v128.i16x8_shr_u(v128.i16x8_mul(
        v128.i16x8_extend_low_i8x16_u(v128.swizzle(get(va), fn.bytes([8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11]))),
        fn.bytes(v128ConstI16(half === 0 ? [1 << 14, 1 << 14, 1 << 14, 1 << 14, 1 << 12, 1 << 12, 1 << 12, 1 << 12] : [1 << 10, 1 << 10, 1 << 10, 1 << 10, 1 << 8, 1 << 8, 1 << 8, 1 << 8]))), c(14));
      const low = v128.shuffle(v128.and(get(va), m15), v128.and(v128.i16x8_shr_u(get(va), c(4)), m15), [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]);
      decode = seq(
        set(va, v128.load32_lane(p, v128.load64_zero(p, 96), 2, 104)),
        set(vb, low),
        store16(
          v128.i16x8_sub(v128.or(v128.i16x8_extend_low_i8x16_u(get(vb)), v128.i16x8_shl(hi(0), c(4))), fn.splat16(32)),
          v128.i16x8_sub(v128.or(v128.i16x8_extend_high_i8x16_u(get(vb)), v128.i16x8_shl(hi(1), c(4))), fn.splat16(32)), 64),
      );
      break;
    }
    case 'q4_k': case 'q5_k': {
      // ggml's get_scale_min_k4 for all eight at once: lanes 0–7 the scales, 8–15 the mins.
      const words = v128.shuffle(get(va), get(va), [0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11]);
      const scm = v128.or(
        v128.and(v128.bitselect(v128.i16x8_shr_u(words, c(4)), words, fn.bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, -1, -1])), fn.bytes([63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 15, 15, 15, 15])),
        v128.and(v128.i16x8_shr_u(v128.shuffle(get(va), get(va), [0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7]), c(2)), fn.bytes([0, 0, 0, 0, 48, 48, 48, 48, 0, 0, 0, 0, 48, 48, 48, 48])),
      );
      decode = seq(
        set(va, v128.load(p, 4)),
        set(vb, scm),
        v128.store(sc, v128.i16x8_extend_low_i8x16_u(get(vb)), 64),
        v128.store(sc, v128.i16x8_extend_high_i8x16_u(get(vb)), 96),
      );
      break;
    }
    case 'q6_k': decode = seq(
      set(va, v128.load(p, 192)),
      store16(v128.i16x8_extend_low_i8x16_s(get(va)), v128.i16x8_extend_high_i8x16_s(get(va)), 64),
    ); break;
    case 'iq4_xs': {
      const lo = v128.and(v128.i16x8_shr_u(v128.i16x8_mul(v128.i16x8_extend_low_i8x16_u(v128.swizzle(get(va), fn.bytes([4, 4, 5, 5, 6, 6, 7, 7, 4, 4, 5, 5, 6, 6, 7, 7]))), fn.bytes(v128ConstI16([16, 1, 16, 1, 16, 1, 16, 1]))), c(4)), fn.splat16(15));
      const hi = v128.i16x8_shr_u(v128.i16x8_mul(v128.swizzle(get(va), fn.bytes([2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3])), fn.bytes(v128ConstI16([1 << 14, 1 << 12, 1 << 10, 1 << 8, 1 << 6, 1 << 4, 1 << 2, 1]))), c(14));
      decode = seq(
        set(va, v128.load64_zero(p, 0)),
        v128.store(sc, v128.i16x8_sub(v128.or(lo, v128.i16x8_shl(hi, c(4))), fn.splat16(32)), 64),
      );
      break;
    }
    default: throw new Error(`not a super-block format: ${t.format.name}`);
  }
  if (!i32Scales) return decode;
  // The i32 scales for the relaxed form's splat loads.
  const i32s: Code[] = [];
  for (let k = 0; k < G / 8; k++) {
    i32s.push(set(va, v128.load(sc, 64 + 16 * k)), v128.store(sc, v128.i32x4_extend_low_i16x8_s(get(va)), 32 * k), v128.store(sc, v128.i32x4_extend_high_i16x8_s(get(va)), 32 * k + 16));
  }
  return seq(decode, ...i32s);
}

/** Bytes of eight i16 lanes. */
function v128ConstI16(lanes: readonly number[]): number[] {
  return lanes.flatMap((l) => [l & 255, (l >> 8) & 255]);
}

function superFn(t: Traits, v: Variant, T: number, R: number): FuncDef {
  const fn = new Fn(kernelName(t.format.name, T, R), params);
  const P = fn.p, rec = record(t, v, T), layout = actLayout(t, v), BB = t.format.blockBytes, f = t.format;
  const G = 256 / f.groupValues, chunksPerGroup = f.groupValues / 16, bpv = layout === 'plain' ? 1 : 2;
  // Relaxed groups of 16 unsigned quants take the i16 form (their scales as i16, like the simd build's).
  const short = chunksPerGroup === 1 && !t.signed, i16Scales = v === 'simd' || short;
  const rows = Array.from({ length: R }, (_, ρ) => ρ);
  const plans = rows.map(() => superPlan(fn, t));
  const isum = rows.map(() => Array.from({ length: T }, () => fn.v128())), mi = rows.map(() => Array.from({ length: T }, () => fn.v128()));
  const A4 = rows.map(() => fn.v128()), B4 = rows.map(() => fn.v128());
  const u0 = fn.v128(), u1 = fn.v128(), d = fn.v128(), dn = fn.v128(), scs = fn.v128(), wl = fn.v128(), wh = fn.v128();
  const dd = fn.v128(), dx = fn.v128(), I4 = fn.v128(), tmpA = fn.v128(), tmpB = fn.v128(), va = fn.v128(), vb = fn.v128(), vc = fn.v128();
  /** Two rows: a group's activation vectors, loaded once for both (chunk k: [x or x⁺ or i16 low half, x⁻ or i16 high half]). */
  const xv = [[fn.v128(), fn.v128()], [fn.v128(), fn.v128()]];
  const pp = rows.map(() => fn.i32()), sp = rows.map(() => fn.i32()), scr = rows.map(() => fn.i32()), rr = fn.i32(), xq = fn.i32(), k = fn.i32();
  const zero = fn.splat32(0);
  const logOffset = Math.log2(t.offset || 1);

  /** Activation bytes of value offset x (within the iteration) of row tt, chunk of 16 (`half` 1: x⁻ of the split layout, or the high i16 half). */
  const xLoad = (tt: number, x: number, half = 0): Code => {
    const off = layout === 'split' ? 64 * (x >> 5) + (x & 31) + 32 * half : bpv * x + 16 * half;
    return v128.load(get(xq), tt * rec.q + off);
  };

  /** Group g of the iteration, for every row: its scale splat, then the scaled dot product of each activation row added to isum. */
  const group = (g: number): Code => {
    const out: Code[] = [];
    const second = layout === 'split' || v === 'simd';
    // Two weight rows: the group's activation vectors once, for both.
    const xs = (tt: number, kk: number, x: number, half = 0): Code => (R > 1 ? get(xv[kk]![half]!) : xLoad(tt, x, half));
    if (R > 1) {
      for (let kk = 0; kk < chunksPerGroup; kk++) {
        const x = plans[0]!.chunk(g, kk).x;
        out.push(set(xv[kk]![0]!, xLoad(0, x)));
        if (second) out.push(set(xv[kk]![1]!, xLoad(0, x, 1)));
      }
    }
    for (const ρ of rows) {
      const chunks = Array.from({ length: chunksPerGroup }, (_, kk) => plans[ρ]!.chunk(g, kk));
      const sums = isum[ρ]!;
      if (v === 'relaxed' && short) {
        // Groups of 16 (Q2_K, Q3_K, Q6_K): the pair sums in i16 (≤ 2·127·63), times the scale and summed in i32 by one i32x4.dot_i16x8_s.
        out.push(set(scs, v128.load16_splat(get(sp[ρ]!), 2 * g)), set(u0, chunks[0]!.u));
        sums.forEach((acc, tt) => out.push(set(acc, v128.i32x4_add(get(acc), v128.i32x4_dot_i16x8_s(v128.i16x8_relaxed_dot_i8x16_i7x16_s(xs(tt, 0, chunks[0]!.x), get(u0)), get(scs))))));
      } else if (v === 'relaxed') {
        out.push(set(scs, v128.load32_splat(get(sp[ρ]!), 4 * g)));
        out.push(set(u0, chunks[0]!.u));
        if (chunksPerGroup === 2) out.push(set(u1, chunks[1]!.u));
        const us = [u0, u1];
        sums.forEach((acc, tt) => {
          if (t.signed) {
            let e: Code = zero, en: Code = zero;
            chunks.forEach((ch, kk) => { e = v128.i32x4_relaxed_dot_i8x16_i7x16_add_s(get(us[kk]!), xs(tt, kk, ch.x), e); en = v128.i32x4_relaxed_dot_i8x16_i7x16_add_s(get(us[kk]!), xs(tt, kk, ch.x, 1), en); });
            out.push(set(d, e), set(dn, en), set(d, v128.i32x4_sub(get(d), get(dn))));
          } else {
            let e: Code = zero;
            chunks.forEach((ch, kk) => { e = v128.i32x4_relaxed_dot_i8x16_i7x16_add_s(xs(tt, kk, ch.x), get(us[kk]!), e); });
            out.push(set(d, e));
          }
          out.push(set(acc, v128.i32x4_add(get(acc), v128.i32x4_mul(get(d), get(scs)))));
        });
      } else {
        out.push(set(scs, v128.load16_splat(get(sp[ρ]!), 2 * g)));
        chunks.forEach((ch, kk) => {
          out.push(set(u0, ch.u), set(wl, v128.i16x8_mul(v128.i16x8_extend_low_i8x16_s(get(u0)), get(scs))), set(wh, v128.i16x8_mul(v128.i16x8_extend_high_i8x16_s(get(u0)), get(scs))));
          sums.forEach((acc, tt) => out.push(set(acc, v128.i32x4_add(get(acc), v128.i32x4_add(v128.i32x4_dot_i16x8_s(get(wl), xs(tt, kk, ch.x)), v128.i32x4_dot_i16x8_s(get(wh), xs(tt, kk, ch.x, 1)))))));
        });
      }
    }
    return seq(...out);
  };

  const bs = (tt: number, off: number): Code => v128.load(get(rr), rec.aux + 48 * tt + off);
  const sc16 = (ρ: number, half: number): Code => v128.load(get(scr[ρ]!), 64 + 16 * half);
  const mn16 = (ρ: number, half: number): Code => v128.load(get(scr[ρ]!), 96 + 16 * half);

  const perBlock = (): Code => seq(
    ...rows.map((ρ) => seq(
      superScales(fn, t, v, get(pp[ρ]!), get(scr[ρ]!), [va, vb, vc], !i16Scales),
      ...isum[ρ]!.map((a) => set(a, v128.zero())),
      plans[ρ]!.init(get(pp[ρ]!)),
      set(sp[ρ]!, i32.add(get(scr[ρ]!), c(i16Scales ? 64 : 0))),
    )),
    set(xq, get(rr)),
    set(k, c(0)),
    loop(
      ...Array.from({ length: plans[0]!.groups }, (_, g) => group(g)),
      ...rows.map((ρ) => seq(plans[ρ]!.next(), set(sp[ρ]!, i32.add(get(sp[ρ]!), c(plans[ρ]!.groups * (i16Scales ? 2 : 4)))))),
      set(xq, i32.add(get(xq), c(plans[0]!.values * bpv))),
      brIf(0, i32.lt_u(tee(k, i32.add(get(k), c(1))), c(plans[0]!.iters))),
    ),
    set(dx, v128.load(get(rr), rec.d)),
    ...rows.map((ρ) => seq(
      // The offset's share, offset·Σ_j sc_j·bsum_j, per row (groups of 16: the 16 per-16 sums).
      ...(t.offset ? isum[ρ]!.map((a, tt) => set(a, v128.i32x4_sub(get(a), v128.i32x4_shl(
        G === 16 ? v128.i32x4_add(v128.i32x4_dot_i16x8_s(sc16(ρ, 0), bs(tt, 0)), v128.i32x4_dot_i16x8_s(sc16(ρ, 1), bs(tt, 16))) : v128.i32x4_dot_i16x8_s(sc16(ρ, 0), bs(tt, 32)),
        c(logOffset))))) : []),
      // Σ_j mn_j·bsum_j per row.
      ...(f.mins ? mi[ρ]!.map((a, tt) => set(a, G === 16 ? v128.i32x4_add(v128.i32x4_dot_i16x8_s(mn16(ρ, 0), bs(tt, 0)), v128.i32x4_dot_i16x8_s(mn16(ρ, 1), bs(tt, 16))) : v128.i32x4_dot_i16x8_s(mn16(ρ, 0), bs(tt, 32)))) : []),
      // d (and dmin) widened: lanes 0 (and 1).
      set(dd, f16x4(fn, v128.i32x4_extend_low_i16x8_u(f.mins ? v128.load32_zero(get(pp[ρ]!), t.dAt) : v128.load16_lane(get(pp[ρ]!), zero, 0, t.dAt)))),
      set(I4, transposeSum(fn, isum[ρ]!, [tmpA, tmpB])),
      set(A4[ρ]!, v128.f32x4_add(get(A4[ρ]!), v128.f32x4_mul(v128.f32x4_mul(v128.shuffle(get(dd), get(dd), laneSplat(0)), get(dx)), v128.f32x4_convert_i32x4_s(get(I4))))),
      f.mins ? seq(
        set(I4, transposeSum(fn, mi[ρ]!, [tmpA, tmpB])),
        set(B4[ρ]!, v128.f32x4_add(get(B4[ρ]!), v128.f32x4_mul(v128.f32x4_mul(v128.shuffle(get(dd), get(dd), laneSplat(1)), get(dx)), v128.f32x4_convert_i32x4_s(get(I4))))),
      ) : [],
    )),
  );

  return frame(fn, t, v, T, R, (L) => seq(
    ...rows.map((ρ) => seq(
      set(A4[ρ]!, v128.zero()),
      set(B4[ρ]!, v128.zero()),
      set(pp[ρ]!, ρ === 0 ? get(L.p) : i32.add(get(L.p), get(P.rs))),
      set(scr[ρ]!, i32.add(get(P.sc), c(128 * ρ))),
    )),
    set(rr, get(L.rec)),
    loop(
      perBlock(),
      ...rows.map((ρ) => set(pp[ρ]!, i32.add(get(pp[ρ]!), c(BB)))),
      set(rr, i32.add(get(rr), c(rec.bytes))),
      brIf(0, i32.lt_u(get(pp[0]!), get(L.end))),
    ),
    ...rows.flatMap((ρ) => Array.from({ length: T }, (_, tt) => storeY(fn, L, tt, v128.f32x4_extract_lane(f.mins ? v128.f32x4_sub(get(A4[ρ]!), get(B4[ρ]!)) : get(A4[ρ]!), tt), ρ))),
  ));
}
