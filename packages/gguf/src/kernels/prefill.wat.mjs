// The WebAssembly text of the relaxed-SIMD many-row (prefill) kernel for Q4_K weights: y[m, r] =
// x[m, :] · W[r, :] with the activations quantized once to Q8_K (int8 quants, f32 d8 per 256, i32
// sum per 32) and the weights read in their stored super-blocks, no unpacking pass. Each call
// takes a chunk of weight rows (small enough to stay in L2) and walks tiles of T activation rows
// (outer) × one weight row (inner): a super-block's nibbles and 6-bit scales/mins are decoded once
// into registers and multiplied against the T activation rows, so the decoding is shared by T
// rows and the T rows' quants stay in L1 while the chunk's rows pass.
//
// Per 32 values of sub-block j: i16x8.relaxed_dot_i8x16_i7x16_s(x, q) with the nibbles q in
// [0, 15] on the 7-bit side (exact on every CPU; pairs ≤ 2·15·127, two halves summed ≤ 7620 in
// i16), then i32x4.dot_i16x8_s against scale_j (≤ 63) sums the pairs and applies the scale:
// isum = Σ_j scale_j·Σ q·x exactly in i32 (≤ 256·15·127·63). The mins: Σ_j min_j·bsum_j in one
// i32x4.dot_i16x8_s (bsums ≤ 32·127 fit i16). Per super-block, in f32:
// acc += d8·(d·isum − dmin·Σ min·bsum) — ggml's vec_dot_q4_K_q8_K, the same integers.

import { f16, fsum, loadScalesMins, rep } from './wat.mjs';

/** Bytes of one packed activation record: T rows' quants of one super-block, their i16 sums of every 32, their d8 (16 bytes). */
export const recordBytes = (T) => 272 * T + 16;

/**
 * `pack_q8_k`: the Q8_K activations of rows [0, M) (quants $x [M, K] int8, d8 $xd [M, nb] f32, sums
 * $xs [M, K/32] i32) regrouped for the kernels at $dst: per tile of T rows (M a multiple of T),
 * per super-block, one record of recordBytes(T) bytes: the T rows' 256 quants, then their eight
 * sums as i16 (≤ 32·127), then their d8. The kernels reach every operand of a super-block from one
 * pointer at constant offsets.
 */
const packQ8K = `
  (func (export "pack_q8_k") (param $x i32) (param $xd i32) (param $xs i32) (param $M i32) (param $nb i32) (param $T i32) (param $dst i32)
    (local $m i32) (local $b i32) (local $t i32) (local $k i32) (local $src i32) (local $row i32) (local $K i32)
    (local.set $K (i32.shl (local.get $nb) (i32.const 8)))
    (block $mdone (loop $ms
      (br_if $mdone (i32.ge_u (local.get $m) (local.get $M)))
      (local.set $b (i32.const 0))
      (loop $blocks
        (local.set $t (i32.const 0))
        (loop $ts
          (local.set $row (i32.add (i32.mul (i32.add (local.get $m) (local.get $t)) (local.get $nb)) (local.get $b)))
          (local.set $src (i32.add (local.get $x) (i32.shl (local.get $row) (i32.const 8))))
          (local.set $k (i32.const 0))
          (loop $copy
            (v128.store (i32.add (i32.add (local.get $dst) (i32.shl (local.get $t) (i32.const 8))) (local.get $k)) (v128.load (i32.add (local.get $src) (local.get $k))))
            (br_if $copy (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 16))) (i32.const 256))))
          (local.set $src (i32.add (local.get $xs) (i32.shl (local.get $row) (i32.const 5))))
          (v128.store (i32.add (i32.add (local.get $dst) (i32.shl (local.get $T) (i32.const 8))) (i32.shl (local.get $t) (i32.const 4)))
            (i16x8.narrow_i32x4_s (v128.load (local.get $src)) (v128.load offset=16 (local.get $src))))
          (f32.store (i32.add (i32.add (local.get $dst) (i32.mul (local.get $T) (i32.const 272))) (i32.shl (local.get $t) (i32.const 2)))
            (f32.load (i32.add (local.get $xd) (i32.shl (local.get $row) (i32.const 2)))))
          (br_if $ts (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $T))))
        (local.set $dst (i32.add (local.get $dst) (i32.add (i32.mul (local.get $T) (i32.const 272)) (i32.const 16))))
        (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb))))
      (local.set $m (i32.add (local.get $m) (local.get $T)))
      (br $ms)))
  )`;

/**
 * `q4_k_rows_T`: rows [0, nr) at $w (stride $rs bytes, $nb super-blocks each) × activation rows
 * [0, M) (M a multiple of T), packed by pack_q8_k at $x, into y[m·ldy + r].
 */
export function q4kRows(T) {
  const ts = (f) => rep(T, f);
  // Sub-block j of the super-block: the nibbles of 32 bytes at $wq (low for even j, high for odd) against its 32 activations at $xq.
  const nib = (high, o) => high
    ? `(v128.and (i16x8.shr_u (v128.load offset=${o} (local.get $wq)) (i32.const 4)) (v128.const i8x16 ${Array(16).fill(15).join(' ')}))`
    : `(v128.and (v128.load offset=${o} (local.get $wq)) (v128.const i8x16 ${Array(16).fill(15).join(' ')}))`;
  const half = (q, sc, o) => ts((t) => `(local.set $s${t} (i32x4.add (local.get $s${t}) (i32x4.dot_i16x8_s (i16x8.add
              (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load offset=${256 * t + o} (local.get $xq)) ${q(0)})
              (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load offset=${256 * t + o + 16} (local.get $xq)) ${q(1)}))
              (local.get ${sc}))))`);
  // One loop over the low nibbles (sub-blocks 0, 2, 4, 6), one over the high (1, 3, 5, 7): few
  // values live at once (V8 spills when both halves are in flight).
  const nibbles = (high) => `(local.set $c (i32.const 0))
          (local.set $wq (i32.add (local.get $p) (i32.const 16)))
          (local.set $xq (i32.add (local.get $xp) (i32.const ${high ? 32 : 0})))
          (local.set $idx (v128.const i16x8 ${Array(8).fill(0x1000 + high).join(' ')}))
          (loop $${high ? 'high' : 'low'}
            (local.set $sc (i8x16.swizzle (local.get $scm) (local.get $idx)))
            (local.set $q0 ${nib(high, 0)})
            (local.set $q1 ${nib(high, 16)})
            ${half((k) => `(local.get $q${k})`, '$sc', 0)}
            (local.set $idx (i16x8.add (local.get $idx) (v128.const i16x8 2 2 2 2 2 2 2 2)))
            (local.set $wq (i32.add (local.get $wq) (i32.const 32)))
            (local.set $xq (i32.add (local.get $xq) (i32.const 64)))
            (br_if $${high ? 'high' : 'low'} (i32.lt_u (local.tee $c (i32.add (local.get $c) (i32.const 1))) (i32.const 4))))`;
  const sub = `${nibbles(0)}
          ${nibbles(1)}`;
  const lane = (t) => Array.from({ length: 4 }, () => [0, 1, 2, 3].map((k) => 4 * t + k).join(' ')).join(' ');
  return `
  (func (export "q4_k_rows_${T}") (param $w i32) (param $rs i32) (param $nr i32) (param $nb i32) (param $x i32) (param $M i32) (param $y i32) (param $ldy i32)
    (local $m i32) (local $r i32) (local $p i32) (local $end i32) (local $xt i32) (local $xp i32) (local $c i32) (local $wq i32) (local $xq i32) (local $idx v128) (local $sv v128) (local $scm v128) (local $q0 v128) (local $q1 v128) (local $sc v128) (local $dd v128) (local $dm v128)
    ${ts((t) => `(local $s${t} v128) (local $acc${t} v128)`)}
    (local.set $xt (local.get $x))
    (block $mdone (loop $ms
      (br_if $mdone (i32.ge_u (local.get $m) (local.get $M)))
      (local.set $r (i32.const 0))
      (block $rdone (loop $rows
        (br_if $rdone (i32.ge_u (local.get $r) (local.get $nr)))
        ${ts((t) => `(local.set $acc${t} (v128.const f32x4 0 0 0 0))`)}
        (local.set $p (i32.add (local.get $w) (i32.mul (local.get $r) (local.get $rs))))
        (local.set $end (i32.add (local.get $p) (i32.mul (local.get $nb) (i32.const 144))))
        (local.set $xp (local.get $xt))
        (loop $blocks
          ${ts((t) => `(local.set $s${t} (v128.const i32x4 0 0 0 0))`)}
          ${loadScalesMins}
          ${sub}
          ;; d·d8 and dmin·d8 for the T rows, then per row: acc += d·d8·isum − dmin·d8·Σ min_j·bsum_j
          (local.set $sv (v128.load offset=${272 * T} (local.get $xp)))
          (local.set $dd (f32x4.mul (local.get $sv) (f32x4.splat ${f16('(i32.load16_u (local.get $p))')})))
          (local.set $dm (f32x4.mul (local.get $sv) (f32x4.splat ${f16('(i32.load16_u offset=2 (local.get $p))')})))
          (local.set $sv (i16x8.extend_high_i8x16_u (local.get $scm)))
          ${ts((t) => `(local.set $acc${t} (f32x4.add (local.get $acc${t}) (f32x4.sub
            (f32x4.mul (f32x4.convert_i32x4_s (local.get $s${t})) (i8x16.shuffle ${lane(t)} (local.get $dd) (local.get $dd)))
            (f32x4.mul (f32x4.convert_i32x4_s (i32x4.dot_i16x8_s (local.get $sv) (v128.load offset=${256 * T + 16 * t} (local.get $xp))))
              (i8x16.shuffle ${lane(t)} (local.get $dm) (local.get $dm))))))`)}
          (local.set $xp (i32.add (local.get $xp) (i32.const ${272 * T + 16})))
          (br_if $blocks (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 144))) (local.get $end))))
        ${ts((t) => `(f32.store (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (i32.add (local.get $m) (i32.const ${t})) (local.get $ldy)) (local.get $r)) (i32.const 2))) ${fsum(`(local.get $acc${t})`)})`)}
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rows)))
      (local.set $xt (i32.add (local.get $xt) (i32.mul (local.get $nb) (i32.const ${272 * T + 16}))))
      (local.set $m (i32.add (local.get $m) (i32.const ${T})))
      (br $ms)))
  )`;
}

/** The kernels of the relaxed module: the packing, tiles of 4 activation rows per weight row, and 1 for the leftover rows. */
export const prefillRelaxed = () => [packQ8K, ...[4, 1].map(q4kRows)].join('\n');
