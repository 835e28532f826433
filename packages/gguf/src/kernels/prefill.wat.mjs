// The WebAssembly text of the relaxed-SIMD many-row (prefill) kernels for Q4_K and Q8_0 weights:
// y[m, r] = x[m, :] · W[r, :] with the activations quantized once (Q8_K for Q4_K: int8 quants, f32
// d8 per 256, i32 sum per 32; Q8_0 split by sign for Q8_0) and the weights read in their stored
// blocks, no unpacking pass. Each call takes a chunk of weight rows (small enough to stay in L2)
// and walks tiles of T activation rows (outer) × one weight row (inner): a block's weights (Q4_K:
// nibbles and 6-bit scales/mins decoded once into registers) are multiplied against the T
// activation rows, so loading and decoding are shared by T rows and the T rows' quants stay in L1
// while the chunk's rows pass.
//
// Q4_K, per 32 values of sub-block j: i16x8.relaxed_dot_i8x16_i7x16_s(x, q) with the nibbles q in
// [0, 15] on the 7-bit side (exact on every CPU; pairs ≤ 2·15·127, two halves summed ≤ 7620 in
// i16), then i32x4.dot_i16x8_s against scale_j (≤ 63) sums the pairs and applies the scale:
// isum = Σ_j scale_j·Σ q·x exactly in i32 (≤ 256·15·127·63). The mins: Σ_j min_j·bsum_j in one
// i32x4.dot_i16x8_s (bsums ≤ 32·127 fit i16). Per super-block, in f32:
// acc += d8·(d·isum − dmin·Σ min·bsum) — ggml's vec_dot_q4_K_q8_K, the same integers.

import { f16, fsum, loadScalesMins, rep } from './wat.mjs';

/** Bytes of one packed Q8_K activation record: T rows' quants of one super-block, their i16 sums of every 32, their d8 (16 bytes). */
export const recordBytes = (T) => 272 * T + 16;
/** Bytes of one packed Q8_0 activation record: T rows' sign-split quants of one block (64 bytes each), their d (4 bytes each, in whole vectors of 4). */
export const q8RecordBytes = (T) => 64 * T + 16 * Math.ceil(T / 4);

/**
 * A packing kernel: activation rows [0, M) (M a multiple of T) of nb blocks each, quantized (block
 * i's `qBytes` of quants at $x + qBytes·i, its f32 scale at $xd + 4i), regrouped at $dst: per tile of
 * T rows, per block, one record of `record` bytes: the T rows' quants ($q = T·qBytes bytes), what
 * `sums` stores, the T scales at offset `dAt`.
 * The kernels then reach every operand of a block from one pointer at constant offsets.
 */
const packer = (name, qBytes, extraParams, { sums = '', dAt = '(local.get $q)', record }) => `
  (func (export "${name}") (param $x i32) (param $xd i32) ${extraParams} (param $M i32) (param $nb i32) (param $T i32) (param $dst i32)
    (local $m i32) (local $b i32) (local $t i32) (local $k i32) (local $src i32) (local $row i32) (local $q i32)
    (local.set $q (i32.mul (local.get $T) (i32.const ${qBytes})))
    (block $mdone (loop $ms
      (br_if $mdone (i32.ge_u (local.get $m) (local.get $M)))
      (local.set $b (i32.const 0))
      (loop $blocks
        (local.set $t (i32.const 0))
        (loop $ts
          (local.set $row (i32.add (i32.mul (i32.add (local.get $m) (local.get $t)) (local.get $nb)) (local.get $b)))
          (local.set $src (i32.add (local.get $x) (i32.mul (local.get $row) (i32.const ${qBytes}))))
          (local.set $k (i32.const 0))
          (loop $copy
            (v128.store (i32.add (i32.add (local.get $dst) (i32.mul (local.get $t) (i32.const ${qBytes}))) (local.get $k)) (v128.load (i32.add (local.get $src) (local.get $k))))
            (br_if $copy (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 16))) (i32.const ${qBytes}))))
          ${sums}
          (f32.store (i32.add (i32.add (local.get $dst) ${dAt}) (i32.shl (local.get $t) (i32.const 2)))
            (f32.load (i32.add (local.get $xd) (i32.shl (local.get $row) (i32.const 2)))))
          (br_if $ts (i32.lt_u (local.tee $t (i32.add (local.get $t) (i32.const 1))) (local.get $T))))
        (local.set $dst (i32.add (local.get $dst) ${record}))
        (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb))))
      (local.set $m (i32.add (local.get $m) (local.get $T)))
      (br $ms)))
  )`;

/**
 * `pack_q8_k`: the Q8_K activations of rows [0, M) (quants $x [M, K] int8, d8 $xd [M, nb] f32, sums
 * $xs [M, K/32] i32) in records of recordBytes(T): the T rows' 256 quants, their eight sums as
 * i16 (≤ 32·127), their d8.
 */
const packQ8K = packer('pack_q8_k', 256, '(param $xs i32)', {
  sums: `(local.set $src (i32.add (local.get $xs) (i32.shl (local.get $row) (i32.const 5))))
          (v128.store (i32.add (i32.add (local.get $dst) (local.get $q)) (i32.shl (local.get $t) (i32.const 4)))
            (i16x8.narrow_i32x4_s (v128.load (local.get $src)) (v128.load offset=16 (local.get $src))))`,
  dAt: '(i32.mul (local.get $T) (i32.const 272))',
  record: '(i32.add (i32.mul (local.get $T) (i32.const 272)) (i32.const 16))',
});

/**
 * `pack_q8_0`: the sign-split Q8_0 activations of rows [0, M) (quant_q8_0 with split: 64 bytes a
 * block, q⁺ then q⁻; d $xd [M, nb] f32) in records of q8RecordBytes(T): the T rows' 64 bytes, their d.
 */
const packQ80 = packer('pack_q8_0', 64, '', { record: '(i32.add (local.get $q) (i32.shl (i32.shr_u (i32.add (local.get $T) (i32.const 3)) (i32.const 2)) (i32.const 4)))' });

/**
 * A store of the accumulator `v` to 16 bytes of scratch at `at`, placed between activation rows:
 * V8 hoists every load of a basic block to its start (and spills what passes 15 registers) but
 * never moves a load above a store, so each row's activation loads stay next to their use.
 */
const barrier = (at, v) => `(v128.store (local.get ${at}) ${v})\n              `;

/** i8x16.shuffle lanes that splat f32 lane t (one pshufd). */
const lane = (t) => Array.from({ length: 4 }, () => [0, 1, 2, 3].map((k) => 4 * t + k).join(' ')).join(' ');

/**
 * `q4_k_rows_T`: rows [0, nr) at $w (stride $rs bytes, $nb super-blocks each) × activation rows
 * [0, M) (M a multiple of T), packed by pack_q8_k at $x, into y[m·ldy + r]; $scratch: 16 bytes
 * (the stores between rows: 11–16 % faster at 128 rows on the `small` shapes, fewer spills).
 */
export function q4kRows(T) {
  const ts = (f) => rep(T, f);
  // Sub-block j of the super-block: the nibbles of 32 bytes at $wq (low for even j, high for odd) against its 32 activations at $xq.
  const nib = (high, o) => high
    ? `(v128.and (i16x8.shr_u (v128.load offset=${o} (local.get $wq)) (i32.const 4)) (v128.const i8x16 ${Array(16).fill(15).join(' ')}))`
    : `(v128.and (v128.load offset=${o} (local.get $wq)) (v128.const i8x16 ${Array(16).fill(15).join(' ')}))`;
  const half = (q, sc, o) => ts((t) => `${t > 0 ? barrier('$scratch', `(local.get $s${t - 1})`) : ''}(local.set $s${t} (i32x4.add (local.get $s${t}) (i32x4.dot_i16x8_s (i16x8.add
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
  return `
  (func (export "q4_k_rows_${T}") (param $w i32) (param $rs i32) (param $nr i32) (param $nb i32) (param $x i32) (param $M i32) (param $y i32) (param $ldy i32) (param $scratch i32)
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

/**
 * `q8_0_scales`: the f16 scales of $n consecutive Q8_0 blocks at $w as f32 at $dst (a chunk of
 * rows, once per product: the rows kernel then reads each as one splat load).
 */
const q8Scales = `
  (func (export "q8_0_scales") (param $w i32) (param $n i32) (param $dst i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $dst) (i32.shl (local.get $n) (i32.const 2))))
    (block $done (loop $blocks
      (br_if $done (i32.ge_u (local.get $dst) (local.get $end)))
      (f32.store (local.get $dst) ${f16('(i32.load16_u (local.get $w))')})
      (local.set $w (i32.add (local.get $w) (i32.const 34)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 4)))
      (br $blocks)))
  )`;

/**
 * `q8_0_rows_T`: rows [0, nr) at $w (stride $rs bytes, $nb blocks of 34 bytes each: f16 d, 32
 * int8) × activation rows [0, M) (M a multiple of T), packed by pack_q8_0 at $x, into
 * y[m·ldy + r]; $sc: 16 bytes of scratch, then the rows' block scales as f32 (q8_0_scales). Per
 * block, the 32 weights
 * are loaded once (two vectors, signed: the i8 side) and dotted with each of the T rows' q⁺ and
 * q⁻ (the 7-bit side: exact on every CPU): per 16 values dot(w, q⁺) − dot(w, q⁻) = pair sums
 * w_2i·x_2i + w_2i+1·x_2i+1, each ≤ 2·128·127 = 32512 in i16 (the two halves summed would not
 * fit: they go to i32 by i32x4.dot_i16x8_s with ones), then acc_t += (d_w·d_x,t)·isum_t in f32:
 * ggml's vec_dot_q8_0_q8_0, the same integers, float32 sums in another order. V8's code (T = 4):
 * 76 instructions per block and 4 rows, no spills (0.59 per product; the int16 tiles take 0.88).
 */
export function q8_0Rows(T) {
  const ts = (f) => rep(T, f);
  const half = (t, h) => `(i32x4.dot_i16x8_s (local.get $ones) (i16x8.sub
              (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $w${h}) (v128.load offset=${64 * t + 16 * h} (local.get $xp)))
              (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $w${h}) (v128.load offset=${64 * t + 32 + 16 * h} (local.get $xp)))))`;
  // d_w·d_x for rows 4g … 4g + 3 (one vector of their d_x; a splat for T = 1), taken before their dot products.
  const dd = (g) => `(local.set $dd (f32x4.mul ${T === 1 ? '(v128.load32_splat offset=64 (local.get $xp))' : `(v128.load offset=${64 * T + 16 * g} (local.get $xp))`} (v128.load32_splat (local.get $s))))\n          `;
  const ddt = (t) => (T === 1 ? '(local.get $dd)' : `(i8x16.shuffle ${lane(t % 4)} (local.get $dd) (local.get $dd))`);
  return `
  (func (export "q8_0_rows_${T}") (param $w i32) (param $rs i32) (param $nr i32) (param $nb i32) (param $x i32) (param $M i32) (param $y i32) (param $ldy i32) (param $sc i32)
    (local $m i32) (local $r i32) (local $p i32) (local $end i32) (local $xt i32) (local $xp i32) (local $s i32) (local $w0 v128) (local $w1 v128) (local $dd v128) (local $ones v128)
    ${ts((t) => `(local $acc${t} v128)`)}
    (local.set $ones (v128.const i16x8 1 1 1 1 1 1 1 1))
    (local.set $xt (local.get $x))
    (block $mdone (loop $ms
      (br_if $mdone (i32.ge_u (local.get $m) (local.get $M)))
      (local.set $r (i32.const 0))
      (local.set $s (i32.add (local.get $sc) (i32.const 16)))
      (block $rdone (loop $rows
        (br_if $rdone (i32.ge_u (local.get $r) (local.get $nr)))
        ${ts((t) => `(local.set $acc${t} (v128.const f32x4 0 0 0 0))`)}
        (local.set $p (i32.add (local.get $w) (i32.mul (local.get $r) (local.get $rs))))
        (local.set $end (i32.add (local.get $p) (i32.mul (local.get $nb) (i32.const 34))))
        (local.set $xp (local.get $xt))
        (loop $blocks
          (local.set $w0 (v128.load offset=2 (local.get $p)))
          (local.set $w1 (v128.load offset=18 (local.get $p)))
          ${ts((t) => `${t > 0 ? barrier('$sc', `(local.get $acc${t - 1})`) : ''}${t % 4 === 0 ? dd(t / 4) : ''}(local.set $acc${t} (f32x4.relaxed_madd (f32x4.convert_i32x4_s (i32x4.add ${half(t, 0)} ${half(t, 1)})) ${ddt(t)} (local.get $acc${t})))`)}
          (local.set $s (i32.add (local.get $s) (i32.const 4)))
          (local.set $xp (i32.add (local.get $xp) (i32.const ${q8RecordBytes(T)})))
          (br_if $blocks (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 34))) (local.get $end))))
        ${ts((t) => `(f32.store (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (i32.add (local.get $m) (i32.const ${t})) (local.get $ldy)) (local.get $r)) (i32.const 2))) ${fsum(`(local.get $acc${t})`)})`)}
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rows)))
      (local.set $xt (i32.add (local.get $xt) (i32.mul (local.get $nb) (i32.const ${q8RecordBytes(T)}))))
      (local.set $m (i32.add (local.get $m) (i32.const ${T})))
      (br $ms)))
  )`;
}

/** The kernels of the relaxed module: the packings, and per type tiles of 4 activation rows per weight row and of 1 for the leftover rows. */
export const prefillRelaxed = () => [packQ8K, packQ80, q8Scales, ...[4, 1].flatMap((T) => [q4kRows(T), q8_0Rows(T)])].join('\n');
