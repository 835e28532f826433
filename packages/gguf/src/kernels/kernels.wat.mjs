// The WebAssembly text of the matrix kernels (SIMD128): y[m, r] = x[m, :] · W[r, :] for weights
// resident in the module's memory, stored as F32, BF16, Q8_0, Q4_K or Q6_K. The matrix-vector
// kernels (decode) walk the rows one at a time and, for each row, every activation row m: the row
// stays in L1 while all M activation rows pass. The generators take R rows per step, but R = 1 is
// what is built: V8 spills registers with more rows in flight (measured on Zen 4: a Q4_K kernel at
// R = 4 ran at half the speed of R = 1, F32 at 0.55×, F32 and BF16 at R = 2 0.62–0.67×); only the
// relaxed Q8_0 kernel has a two-row form (decode.wat.mjs).
//
// Float kernels: f32x4 products (bf16 widened in-register: bits << 16), four accumulators per row.
// Quantized kernels: activations arrive quantized as ggml quantizes them (int8 Q8_0 blocks for
// Q8_0, Q8_K super-blocks with per-32 sums for the k-quants, see qmatmul.ts); integer dot products
// in i32x4 lanes (i32x4.dot_i16x8_s on sign-extended quants), scaled in f32x4 lanes once per
// block, summed across lanes once per output. Loops over sub-blocks are unrolled here.
//
// Two modules are built: WAT (SIMD128) and WAT_RELAXED, where relaxed SIMD runs (Node 20 behind a
// V8 flag that qmatmul.ts sets). The relaxed one differs in the matrix-vector kernels: F32/BF16
// use f32x4.relaxed_madd (fused where the CPU has FMA), Q8_0, Q4_K and Q6_K are those of
// decode.wat.mjs (int8 dot products); it adds the many-row Q4_K and Q8_0 kernels of prefill.wat.mjs.
// i32x4.relaxed_dot_i8x16_i7x16_add_s is not used: V8 11 (Node 20) on x64 compiles it in its
// baseline code (Liftoff, which runs until the optimized code is ready) to a sum that ignores the
// accumulator and doubles the dot product, and in TurboFan to pmaddubsw + pmaddwd + paddd with
// the i16 ones rebuilt at each use (no vpdpbusd, though the CPU has AVX-VNNI): nothing over the
// two-step form. The pieces the three files share are in wat.mjs.

import { decodeRelaxed } from './decode.wat.mjs';
import { f16, fsum, kernel, loadScalesMins, locals, rep } from './wat.mjs';
import { prefillRelaxed } from './prefill.wat.mjs';

/** Σ of 16 int8 lanes of q times the pre-extended activation halves xl/xh (i16x8), as an i32x4. */
const dotx = (q, xl, xh) => `(i32x4.add (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s ${q}) (local.get ${xl})) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s ${q}) (local.get ${xh})))`;

/** a + w·x: fused (relaxed_madd) in the relaxed module. */
const madd = (relaxed, a, w, x) => relaxed ? `(f32x4.relaxed_madd ${w} ${x} ${a})` : `(f32x4.add ${a} (f32x4.mul ${w} ${x}))`;

/**
 * The float kernels' loop over one row: four f32x4 accumulators $a{i}_0 … $a{i}_3 per row (four
 * independent chains of additions, so the adds or fused multiply-adds of one step do not wait on
 * each other), `step(u, i)` the product of 4 values of row i (u = 0 … 3 within the 16 of a step);
 * a leftover 8 values (K ≡ 8 mod 16) go to accumulators 0 and 1. $k counts bytes of x.
 */
function floatLoop(R, step) {
  const acc = (i, u, e) => `(local.set $a${i}_${u} ${e(`(local.get $a${i}_${u})`)})`;
  return `
        ${rep(R, (i) => [0, 1, 2, 3].map((u) => `(local.set $a${i}_${u} (v128.const f32x4 0 0 0 0))`).join(' '))}
        (local.set $xp (i32.add (local.get $x) (i32.shl (i32.mul (local.get $m) (local.get $n)) (i32.const 2))))
        (local.set $k (i32.const 0))
        (if (i32.ge_u (local.get $n) (i32.const 16)) (then (loop $ks
          ${rep(R, (i) => [0, 1, 2, 3].map((u) => acc(i, u, (a) => step(u, i, a))).join('\n          '))}
          (br_if $ks (i32.le_u (local.tee $k (i32.add (local.get $k) (i32.const 64))) (i32.shl (i32.sub (local.get $n) (i32.const 16)) (i32.const 2)))))))
        (if (i32.lt_u (local.get $k) (i32.shl (local.get $n) (i32.const 2))) (then
          ${rep(R, (i) => [0, 1].map((u) => acc(i, u, (a) => step(u, i, a))).join('\n          '))}))
        ${rep(R, (i) => `(local.set $out${i} ${fsum(`(f32x4.add (f32x4.add (local.get $a${i}_0) (local.get $a${i}_1)) (f32x4.add (local.get $a${i}_2) (local.get $a${i}_3)))`)})`)}`;
}
const floatLocals = (R) => `(local $k i32) (local $xp i32) ${rep(R, (i) => [0, 1, 2, 3].map((u) => `(local $a${i}_${u} v128)`).join(' '))}`;

/** F32 weights, $n = K (a multiple of 8); x float32 [M, K]. */
function f32(R, relaxed) {
  const step = (u, i, a) => madd(relaxed, a, `(v128.load offset=${16 * u} (i32.add (local.get $w${i}) (local.get $k)))`, `(v128.load offset=${16 * u} (i32.add (local.get $xp) (local.get $k)))`);
  return kernel(`f32_${R}`, R, '', floatLocals(R), floatLoop(R, step));
}

/**
 * BF16 weights, $n = K (a multiple of 8); x float32 [M, K] with every 8 values stored evens first
 * (x0 x2 x4 x6 x1 x3 x5 x7: `split_pairs`). Eight bf16 weights are four i32 lanes w_2j | w_2j+1 << 16,
 * so the even weights as f32 are the lanes << 16 and the odd ones the lanes with the low half cleared.
 */
function bf16(R, relaxed) {
  const step = (u, i, a) => {
    const w = `(v128.load offset=${8 * (u & ~1)} (i32.add (local.get $w${i}) (i32.shr_u (local.get $k) (i32.const 1))))`;
    const wf = u & 1 ? `(v128.and ${w} (v128.const i32x4 0xffff0000 0xffff0000 0xffff0000 0xffff0000))` : `(i32x4.shl ${w} (i32.const 16))`;
    return madd(relaxed, a, wf, `(v128.load offset=${16 * u} (i32.add (local.get $xp) (local.get $k)))`);
  };
  return kernel(`bf16_${R}`, R, '', floatLocals(R), floatLoop(R, step));
}

/** n floats at $x (n a multiple of 8) reordered in place, per 8: the even-indexed four, then the odd (the BF16 kernel's x). */
const splitPairs = `
  (func (export "split_pairs") (param $x i32) (param $n i32)
    (local $end i32) (local $v0 v128) (local $v1 v128)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (block $done (loop $blocks
      (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
      (local.set $v0 (v128.load (local.get $x)))
      (local.set $v1 (v128.load offset=16 (local.get $x)))
      (v128.store (local.get $x) (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $v0) (local.get $v1)))
      (v128.store offset=16 (local.get $x) (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $v0) (local.get $v1)))
      (local.set $x (i32.add (local.get $x) (i32.const 32)))
      (br $blocks))))`;

/** Q8_0 weights (34-byte blocks: f16 d, 32 int8), $n = blocks per row; x = Q8_0 quants [M, K] int8 with scales $xd [M, nb] f32. */
function q8_0(R) {
  const body = `
        ${rep(R, (i) => `(local.set $a${i} (v128.const f32x4 0 0 0 0))`)}
        (local.set $bi (i32.mul (local.get $m) (local.get $n)))
        (local.set $end (i32.add (local.get $bi) (local.get $n)))
        (local.set $off (i32.const 0))
        (loop $blocks
          (local.set $v (v128.load (i32.add (local.get $x) (i32.shl (local.get $bi) (i32.const 5)))))
          (local.set $x0 (i16x8.extend_low_i8x16_s (local.get $v)))
          (local.set $x1 (i16x8.extend_high_i8x16_s (local.get $v)))
          (local.set $v (v128.load offset=16 (i32.add (local.get $x) (i32.shl (local.get $bi) (i32.const 5)))))
          (local.set $x2 (i16x8.extend_low_i8x16_s (local.get $v)))
          (local.set $x3 (i16x8.extend_high_i8x16_s (local.get $v)))
          (local.set $dx (f32.load (i32.add (local.get $xd) (i32.shl (local.get $bi) (i32.const 2)))))
          ${rep(R, (i) => `(local.set $p (i32.add (local.get $w${i}) (local.get $off)))
          (local.set $a${i} (f32x4.add (local.get $a${i}) (f32x4.mul
            (f32x4.convert_i32x4_s (i32x4.add ${dotx('(v128.load offset=2 (local.get $p))', '$x0', '$x1')} ${dotx('(v128.load offset=18 (local.get $p))', '$x2', '$x3')}))
            (f32x4.splat (f32.mul ${f16('(i32.load16_u (local.get $p))')} (local.get $dx))))))`)}
          (local.set $off (i32.add (local.get $off) (i32.const 34)))
          (br_if $blocks (i32.lt_u (local.tee $bi (i32.add (local.get $bi) (i32.const 1))) (local.get $end))))
        ${rep(R, (i) => `(local.set $out${i} ${fsum(`(local.get $a${i})`)})`)}`;
  return kernel(`q8_0_${R}`, R, '(param $xd i32)', `(local $bi i32) (local $end i32) (local $off i32) (local $p i32) (local $dx f32) (local $v v128) (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128) ${locals(R, 'a', 'v128')}`, body);
}

const scaleOf = (j) => `(i8x16.extract_lane_u ${j} (local.get $scm))`;
/** Mins 0–3 (half 0) or 4–7 (half 1) of $scm as i32x4. */
const minsI32 = (half) => `(i32x4.extend_${half ? 'high' : 'low'}_i16x8_u (i16x8.extend_high_i8x16_u (local.get $scm)))`;

/** Activation quants of a Q8_K super-block at $xb, bytes [o, o + 32), sign-extended into $x0 … $x3. */
const loadX32 = (o) => `(local.set $v (v128.load offset=${o} (local.get $xb)))
          (local.set $x0 (i16x8.extend_low_i8x16_s (local.get $v)))
          (local.set $x1 (i16x8.extend_high_i8x16_s (local.get $v)))
          (local.set $v (v128.load offset=${o + 16} (local.get $xb)))
          (local.set $x2 (i16x8.extend_low_i8x16_s (local.get $v)))
          (local.set $x3 (i16x8.extend_high_i8x16_s (local.get $v)))`;

/**
 * Q4_K weights (144-byte super-blocks: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of
 * nibbles), $n = super-blocks per row; x = Q8_K quants [M, K] int8, $xd [M, nb] f32, $xs [M, K/32] i32 sums:
 * y += d8·(d·Σ_j scale_j·isum_j − dmin·Σ_j min_j·bsum_j).
 */
function q4_k(R) {
  const sub = [];
  for (let j = 0; j < 8; j++) {
    const c = j >> 1, half = j & 1;
    const q = (k) => half === 0
      ? `(v128.and (v128.load offset=${16 + 32 * c + 16 * k} (local.get $p)) (i8x16.splat (i32.const 15)))`
      : `(i8x16.shr_u (v128.load offset=${16 + 32 * c + 16 * k} (local.get $p)) (i32.const 4))`;
    sub.push(`${loadX32(32 * j)}
          ${rep(R, (i) => `(local.set $p (i32.add (local.get $w${i}) (local.get $off)))
          (local.set $s${i} (i32x4.add (local.get $s${i}) (i32x4.mul (i32x4.add ${dotx(q(0), '$x0', '$x1')} ${dotx(q(1), '$x2', '$x3')}) (i32x4.splat (i8x16.extract_lane_u ${j} (local.get $scm${i}))))))`)}`);
  }
  const body = `
        ${rep(R, (i) => `(local.set $a${i} (v128.const f32x4 0 0 0 0)) (local.set $am${i} (v128.const f32x4 0 0 0 0))`)}
        (local.set $bi (i32.mul (local.get $m) (local.get $n)))
        (local.set $end (i32.add (local.get $bi) (local.get $n)))
        (local.set $off (i32.const 0))
        (loop $blocks
          (local.set $xb (i32.add (local.get $x) (i32.shl (local.get $bi) (i32.const 8))))
          (local.set $xsb (i32.add (local.get $xs) (i32.shl (local.get $bi) (i32.const 5))))
          (local.set $d8 (f32.load (i32.add (local.get $xd) (i32.shl (local.get $bi) (i32.const 2)))))
          (local.set $bs0 (v128.load (local.get $xsb)))
          (local.set $bs1 (v128.load offset=16 (local.get $xsb)))
          ${rep(R, (i) => `(local.set $p (i32.add (local.get $w${i}) (local.get $off)))
          ${loadScalesMins}
          (local.set $scm${i} (local.get $scm))
          (local.set $s${i} (v128.const i32x4 0 0 0 0))
          ;; Σ_j min_j·bsum_j in i32 lanes, scaled by dmin·d8.
          (local.set $am${i} (f32x4.add (local.get $am${i}) (f32x4.mul
            (f32x4.convert_i32x4_s (i32x4.add (i32x4.mul ${minsI32(0)} (local.get $bs0)) (i32x4.mul ${minsI32(1)} (local.get $bs1))))
            (f32x4.splat (f32.mul ${f16('(i32.load16_u offset=2 (local.get $p))')} (local.get $d8))))))`)}
          ${sub.join('\n          ')}
          ${rep(R, (i) => `(local.set $p (i32.add (local.get $w${i}) (local.get $off)))
          (local.set $a${i} (f32x4.add (local.get $a${i}) (f32x4.mul (f32x4.convert_i32x4_s (local.get $s${i})) (f32x4.splat (f32.mul ${f16('(i32.load16_u (local.get $p))')} (local.get $d8))))))`)}
          (local.set $off (i32.add (local.get $off) (i32.const 144)))
          (br_if $blocks (i32.lt_u (local.tee $bi (i32.add (local.get $bi) (i32.const 1))) (local.get $end))))
        ${rep(R, (i) => `(local.set $out${i} (f32.sub ${fsum(`(local.get $a${i})`)} ${fsum(`(local.get $am${i})`)}))`)}`;
  return kernel(`q4_k_${R}`, R, '(param $xd i32) (param $xs i32)',
    `(local $bi i32) (local $end i32) (local $off i32) (local $p i32) (local $xb i32) (local $xsb i32) (local $d8 f32) (local $v v128) (local $sv v128) (local $scm v128) (local $bs0 v128) (local $bs1 v128) (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128) ${locals(R, 'a', 'v128')} ${locals(R, 'am', 'v128')} ${locals(R, 's', 'v128')} ${locals(R, 'scm', 'v128')}`, body);
}

/**
 * Q6_K weights (210-byte super-blocks: 128 bytes of low nibbles ql, 64 bytes of 2-bit highs qh,
 * 16 int8 scales, f16 d), $n = super-blocks per row; x = Q8_K quants [M, K] int8, $xd [M, nb] f32:
 * y += d8·d·Σ_j scale_j·Σ (q − 32)·x over sub-blocks of 16 values.
 */
function q6_k(R) {
  const sub = [];
  for (let h = 0; h < 2; h++) {
    for (let l0 = 0; l0 < 32; l0 += 16) {
      for (let s = 0; s < 4; s++) {
        const xo = 128 * h + l0 + 32 * s, ql = 64 * h + l0 + (s & 1 ? 32 : 0), qh = 128 + 32 * h + l0, sc = 192 + 8 * h + (l0 >> 4) + 2 * s;
        const lo = `(v128.load offset=${ql} (local.get $p))`;
        const nib = s < 2 ? `(v128.and ${lo} (i8x16.splat (i32.const 15)))` : `(i8x16.shr_u ${lo} (i32.const 4))`;
        const hi = `(i8x16.shl (v128.and (i8x16.shr_u (v128.load offset=${qh} (local.get $p)) (i32.const ${2 * s})) (i8x16.splat (i32.const 3))) (i32.const 4))`;
        const q = `(i8x16.sub (v128.or ${nib} ${hi}) (i8x16.splat (i32.const 32)))`;
        sub.push(`(local.set $v (v128.load offset=${xo} (local.get $xb)))
          (local.set $x0 (i16x8.extend_low_i8x16_s (local.get $v)))
          (local.set $x1 (i16x8.extend_high_i8x16_s (local.get $v)))
          ${rep(R, (i) => `(local.set $p (i32.add (local.get $w${i}) (local.get $off)))
          (local.set $s${i} (i32x4.add (local.get $s${i}) (i32x4.mul ${dotx(q, '$x0', '$x1')} (i32x4.splat (i32.load8_s offset=${sc} (local.get $p))))))`)}`);
      }
    }
  }
  const body = `
        ${rep(R, (i) => `(local.set $a${i} (v128.const f32x4 0 0 0 0))`)}
        (local.set $bi (i32.mul (local.get $m) (local.get $n)))
        (local.set $end (i32.add (local.get $bi) (local.get $n)))
        (local.set $off (i32.const 0))
        (loop $blocks
          (local.set $xb (i32.add (local.get $x) (i32.shl (local.get $bi) (i32.const 8))))
          (local.set $d8 (f32.load (i32.add (local.get $xd) (i32.shl (local.get $bi) (i32.const 2)))))
          ${rep(R, (i) => `(local.set $s${i} (v128.const i32x4 0 0 0 0))`)}
          ${sub.join('\n          ')}
          ${rep(R, (i) => `(local.set $p (i32.add (local.get $w${i}) (local.get $off)))
          (local.set $a${i} (f32x4.add (local.get $a${i}) (f32x4.mul (f32x4.convert_i32x4_s (local.get $s${i})) (f32x4.splat (f32.mul ${f16('(i32.load16_u offset=208 (local.get $p))')} (local.get $d8))))))`)}
          (local.set $off (i32.add (local.get $off) (i32.const 210)))
          (br_if $blocks (i32.lt_u (local.tee $bi (i32.add (local.get $bi) (i32.const 1))) (local.get $end))))
        ${rep(R, (i) => `(local.set $out${i} ${fsum(`(local.get $a${i})`)})`)}`;
  return kernel(`q6_k_${R}`, R, '(param $xd i32) (param $xs i32)',
    `(local $bi i32) (local $end i32) (local $off i32) (local $p i32) (local $xb i32) (local $d8 f32) (local $v v128) (local $x0 v128) (local $x1 v128) ${locals(R, 'a', 'v128')} ${locals(R, 's', 'v128')}`, body);
}

// Prefill: products of many activation rows. The weights of a chunk of rows are first unpacked
// into int16 (sub-block scales folded in where they are integers: Q4_K q·scale ≤ 945, Q6_K
// (q − 32)·scale ≤ 4064 in magnitude) with a float scale per block (and, for Q4_K, dmin·min per 32
// values); then a kernel over R rows × T activation rows multiplies int16 weights by int8
// activations sign-extended on load (v128.load8x8_s), i32x4.dot_i16x8_s, exact within a block.

/** Q8_0 rows → int16 quants at $dst, f32 d per block at $sw. */
const unpackQ8_0 = `
  (func (export "unpack_q8_0") (param $w i32) (param $rs i32) (param $nr i32) (param $nb i32) (param $dst i32) (param $sw i32) (param $mw i32)
    (local $p i32) (local $end i32) (local $v v128)
    (local.set $end (i32.add (local.get $w) (i32.mul (local.get $nr) (local.get $rs))))
    (local.set $p (local.get $w))
    (loop $blocks
      (f32.store (local.get $sw) ${f16('(i32.load16_u (local.get $p))')})
      (local.set $v (v128.load offset=2 (local.get $p)))
      (v128.store (local.get $dst) (i16x8.extend_low_i8x16_s (local.get $v)))
      (v128.store offset=16 (local.get $dst) (i16x8.extend_high_i8x16_s (local.get $v)))
      (local.set $v (v128.load offset=18 (local.get $p)))
      (v128.store offset=32 (local.get $dst) (i16x8.extend_low_i8x16_s (local.get $v)))
      (v128.store offset=48 (local.get $dst) (i16x8.extend_high_i8x16_s (local.get $v)))
      (local.set $sw (i32.add (local.get $sw) (i32.const 4)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 64)))
      (br_if $blocks (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 34))) (local.get $end)))))`;

/** Q4_K rows → int16 q·scale_j at $dst, f32 d per super-block at $sw, f32 dmin·min_j per 32 values at $mw. */
function unpackQ4_K() {
  const sub = [];
  for (let j = 0; j < 8; j++) {
    const c = j >> 1, half = j & 1;
    const q = (k) => half === 0
      ? `(v128.and (v128.load offset=${16 + 32 * c + 16 * k} (local.get $p)) (i8x16.splat (i32.const 15)))`
      : `(i8x16.shr_u (v128.load offset=${16 + 32 * c + 16 * k} (local.get $p)) (i32.const 4))`;
    sub.push(`(local.set $s (i16x8.splat ${scaleOf(j)}))
      (local.set $v ${q(0)})
      (v128.store offset=${64 * j} (local.get $dst) (i16x8.mul (i16x8.extend_low_i8x16_u (local.get $v)) (local.get $s)))
      (v128.store offset=${64 * j + 16} (local.get $dst) (i16x8.mul (i16x8.extend_high_i8x16_u (local.get $v)) (local.get $s)))
      (local.set $v ${q(1)})
      (v128.store offset=${64 * j + 32} (local.get $dst) (i16x8.mul (i16x8.extend_low_i8x16_u (local.get $v)) (local.get $s)))
      (v128.store offset=${64 * j + 48} (local.get $dst) (i16x8.mul (i16x8.extend_high_i8x16_u (local.get $v)) (local.get $s)))`);
  }
  return `
  (func (export "unpack_q4_k") (param $w i32) (param $rs i32) (param $nr i32) (param $nb i32) (param $dst i32) (param $sw i32) (param $mw i32)
    (local $p i32) (local $end i32) (local $v v128) (local $s v128) (local $sv v128) (local $scm v128) (local $dmin v128)
    (local.set $end (i32.add (local.get $w) (i32.mul (local.get $nr) (local.get $rs))))
    (local.set $p (local.get $w))
    (loop $blocks
      (f32.store (local.get $sw) ${f16('(i32.load16_u (local.get $p))')})
      (local.set $dmin (f32x4.splat ${f16('(i32.load16_u offset=2 (local.get $p))')}))
      ${loadScalesMins}
      (v128.store (local.get $mw) (f32x4.mul (f32x4.convert_i32x4_u ${minsI32(0)}) (local.get $dmin)))
      (v128.store offset=16 (local.get $mw) (f32x4.mul (f32x4.convert_i32x4_u ${minsI32(1)}) (local.get $dmin)))
      ${sub.join('\n      ')}
      (local.set $sw (i32.add (local.get $sw) (i32.const 4)))
      (local.set $mw (i32.add (local.get $mw) (i32.const 32)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 512)))
      (br_if $blocks (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 144))) (local.get $end)))))`;
}

/** Q6_K rows → int16 (q − 32)·scale at $dst, f32 d per super-block at $sw. */
function unpackQ6_K() {
  const sub = [];
  for (let h = 0; h < 2; h++) {
    for (let l0 = 0; l0 < 32; l0 += 16) {
      for (let s = 0; s < 4; s++) {
        const xo = 128 * h + l0 + 32 * s, ql = 64 * h + l0 + (s & 1 ? 32 : 0), qh = 128 + 32 * h + l0, sc = 192 + 8 * h + (l0 >> 4) + 2 * s;
        const lo = `(v128.load offset=${ql} (local.get $p))`;
        const nib = s < 2 ? `(v128.and ${lo} (i8x16.splat (i32.const 15)))` : `(i8x16.shr_u ${lo} (i32.const 4))`;
        const hi = `(i8x16.shl (v128.and (i8x16.shr_u (v128.load offset=${qh} (local.get $p)) (i32.const ${2 * s})) (i8x16.splat (i32.const 3))) (i32.const 4))`;
        sub.push(`(local.set $v (i8x16.sub (v128.or ${nib} ${hi}) (i8x16.splat (i32.const 32))))
      (local.set $s (i16x8.splat (i32.load8_s offset=${sc} (local.get $p))))
      (v128.store offset=${2 * xo} (local.get $dst) (i16x8.mul (i16x8.extend_low_i8x16_s (local.get $v)) (local.get $s)))
      (v128.store offset=${2 * xo + 16} (local.get $dst) (i16x8.mul (i16x8.extend_high_i8x16_s (local.get $v)) (local.get $s)))`);
      }
    }
  }
  return `
  (func (export "unpack_q6_k") (param $w i32) (param $rs i32) (param $nr i32) (param $nb i32) (param $dst i32) (param $sw i32) (param $mw i32)
    (local $p i32) (local $end i32) (local $v v128) (local $s v128)
    (local.set $end (i32.add (local.get $w) (i32.mul (local.get $nr) (local.get $rs))))
    (local.set $p (local.get $w))
    (loop $blocks
      (f32.store (local.get $sw) ${f16('(i32.load16_u offset=208 (local.get $p))')})
      ${sub.join('\n      ')}
      (local.set $sw (i32.add (local.get $sw) (i32.const 4)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 512)))
      (br_if $blocks (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 210))) (local.get $end)))))`;
}

/**
 * int16 weights [nr, K] at $w16 × int8 activations [M, K] at $x: y[m·ldy + r] = Σ_blocks of B
 * values sw[r, b]·xd[m, b]·Σ w16·x, minus (mins) Σ_j mw[r, j]·xsf[m, j] over 32-value groups
 * (xsf = d8·Σ of the 32 quants). R weight rows × T activation rows per tile; nr % R = M % T = 0.
 */
function igemm(B, mins, R, T) {
  const acc = (i, t) => `$i${i}_${t}`, fac = (i, t) => `$f${i}_${t}`, mac = (i, t) => `$g${i}_${t}`;
  const tiles = (f) => rep(R, (i) => rep(T, (t) => f(i, t)));
  const step = (o) => `${rep(T, (t) => `(local.set $x${t} (v128.load8x8_s offset=${o} (local.get $xp${t})))`)}
            ${rep(R, (i) => `(local.set $v (v128.load offset=${2 * o} (local.get $wp${i})))
            ${rep(T, (t) => `(local.set ${acc(i, t)} (i32x4.add (local.get ${acc(i, t)}) (i32x4.dot_i16x8_s (local.get $v) (local.get $x${t}))))`)}`)}`;
  const inner = B === 32
    ? `${[0, 8, 16, 24].map(step).join('\n            ')}`
    : `(local.set $k (i32.const 0))
          (loop $ks
            ${step(0)}
            ${step(8)}
            ${rep(T, (t) => `(local.set $xp${t} (i32.add (local.get $xp${t}) (i32.const 16)))`)}
            ${rep(R, (i) => `(local.set $wp${i} (i32.add (local.get $wp${i}) (i32.const 32)))`)}
            (br_if $ks (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 16))) (i32.const ${B}))))`;
  const adv = B === 32
    ? `${rep(T, (t) => `(local.set $xp${t} (i32.add (local.get $xp${t}) (i32.const 32)))`)}
          ${rep(R, (i) => `(local.set $wp${i} (i32.add (local.get $wp${i}) (i32.const 64)))`)}`
    : '';
  const minsTerm = mins ? tiles((i, t) => `(local.set ${mac(i, t)} (f32x4.add (local.get ${mac(i, t)}) (f32x4.add
            (f32x4.mul (v128.load (i32.add (local.get $mw) (i32.shl (i32.add (i32.mul (i32.add (local.get $r) (i32.const ${i})) (local.get $nsub)) (i32.shl (local.get $b) (i32.const 3))) (i32.const 2)))) (v128.load (i32.add (local.get $xsf) (i32.shl (i32.add (i32.mul (i32.add (local.get $m) (i32.const ${t})) (local.get $nsub)) (i32.shl (local.get $b) (i32.const 3))) (i32.const 2)))))
            (f32x4.mul (v128.load offset=16 (i32.add (local.get $mw) (i32.shl (i32.add (i32.mul (i32.add (local.get $r) (i32.const ${i})) (local.get $nsub)) (i32.shl (local.get $b) (i32.const 3))) (i32.const 2)))) (v128.load offset=16 (i32.add (local.get $xsf) (i32.shl (i32.add (i32.mul (i32.add (local.get $m) (i32.const ${t})) (local.get $nsub)) (i32.shl (local.get $b) (i32.const 3))) (i32.const 2))))))))`) : '';
  return `
  (func (export "igemm${B}${mins ? 'm' : ''}_${R}x${T}") (param $w16 i32) (param $nr i32) (param $K i32) (param $sw i32) (param $mw i32) (param $x i32) (param $xd i32) (param $xsf i32) (param $M i32) (param $y i32) (param $ldy i32)
    (local $r i32) (local $m i32) (local $b i32) (local $k i32) (local $nb i32) (local $nsub i32) (local $v v128)
    ${rep(R, (i) => `(local $wp${i} i32)`)} ${rep(T, (t) => `(local $xp${t} i32) (local $x${t} v128)`)}
    ${tiles((i, t) => `(local ${acc(i, t)} v128) (local ${fac(i, t)} v128) (local ${mac(i, t)} v128)`)}
    (local.set $nb (i32.div_u (local.get $K) (i32.const ${B})))
    (local.set $nsub (i32.shr_u (local.get $K) (i32.const 5)))
    (block $done (loop $rows
      (br_if $done (i32.ge_u (local.get $r) (local.get $nr)))
      (local.set $m (i32.const 0))
      (block $mdone (loop $ms
        (br_if $mdone (i32.ge_u (local.get $m) (local.get $M)))
        ${tiles((i, t) => `(local.set ${fac(i, t)} (v128.const f32x4 0 0 0 0)) (local.set ${mac(i, t)} (v128.const f32x4 0 0 0 0))`)}
        ${rep(R, (i) => `(local.set $wp${i} (i32.add (local.get $w16) (i32.shl (i32.mul (i32.add (local.get $r) (i32.const ${i})) (local.get $K)) (i32.const 1))))`)}
        ${rep(T, (t) => `(local.set $xp${t} (i32.add (local.get $x) (i32.mul (i32.add (local.get $m) (i32.const ${t})) (local.get $K))))`)}
        (local.set $b (i32.const 0))
        (loop $blocks
          ${tiles((i, t) => `(local.set ${acc(i, t)} (v128.const i32x4 0 0 0 0))`)}
          ${inner}
          ${adv}
          ${tiles((i, t) => `(local.set ${fac(i, t)} (f32x4.add (local.get ${fac(i, t)}) (f32x4.mul (f32x4.convert_i32x4_s (local.get ${acc(i, t)}))
            (f32x4.splat (f32.mul (f32.load (i32.add (local.get $sw) (i32.shl (i32.add (i32.mul (i32.add (local.get $r) (i32.const ${i})) (local.get $nb)) (local.get $b)) (i32.const 2))))
              (f32.load (i32.add (local.get $xd) (i32.shl (i32.add (i32.mul (i32.add (local.get $m) (i32.const ${t})) (local.get $nb)) (local.get $b)) (i32.const 2)))))))))`)}
          ${minsTerm}
          (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb))))
        ${tiles((i, t) => `(f32.store (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (i32.add (local.get $m) (i32.const ${t})) (local.get $ldy)) (i32.add (local.get $r) (i32.const ${i}))) (i32.const 2)))
          (f32.sub ${fsum(`(local.get ${fac(i, t)})`)} ${fsum(`(local.get ${mac(i, t)})`)}))`)}
        (local.set $m (i32.add (local.get $m) (i32.const ${T})))
        (br $ms)))
      (local.set $r (i32.add (local.get $r) (i32.const ${R})))
      (br $rows)))
  )`;
}

/** Tiles built: 2 weight rows × 2 activation rows (the fastest measured on Zen 4; 4 × 2 spilled), and the narrower tails. */
const IGEMMS = [[32, false], [256, false], [256, true]].flatMap(([B, mins]) => [[2, 2], [2, 1], [1, 2], [1, 1]].map(([R, T]) => igemm(B, mins, R, T)));

// Activation quantization, as quant/activations.ts (ggml's quantize_row_q8_0 and
// quantize_row_q8_K_ref) with the same float32 operations: products rounded to nearest even
// (f32x4.nearest = rint), then converted and narrowed to int8.

/** f32 ≥ 0 rounded to the nearest f16 value (ties to even; subnormals; ≥ 65520 → ∞), as an f32. */
const roundF16 = (v) => `(if (result f32) (f32.lt ${v} (f32.const 0x1p-14))
      (then (f32.mul (f32.nearest (f32.mul ${v} (f32.const 0x1p24))) (f32.const 0x1p-24)))
      (else (if (result f32) (f32.ge ${v} (f32.const 65520))
        (then (f32.const inf))
        (else (f32.reinterpret_i32 (i32.and (i32.add (i32.reinterpret_f32 ${v}) (i32.add (i32.const 0xfff) (i32.and (i32.shr_u (i32.reinterpret_f32 ${v}) (i32.const 13)) (i32.const 1)))) (i32.const -8192)))))))`;

/** int8x16 of rint(x·s) for the 16 floats at $src + o (clamped to ≤ 127 when clamp). */
const q16 = (o, clamp) => {
  const q = (k) => {
    const t = `(i32x4.trunc_sat_f32x4_s (f32x4.nearest (f32x4.mul (v128.load offset=${o + 16 * k} (local.get $src)) (local.get $sv))))`;
    return clamp ? `(i32x4.min_s ${t} (i32x4.splat (i32.const 127)))` : t;
  };
  return `(i8x16.narrow_i16x8_s (i16x8.narrow_i32x4_s ${q(0)} ${q(1)}) (i16x8.narrow_i32x4_s ${q(2)} ${q(3)}))`;
};

/** max |x| over the n floats at $src (n a multiple of 16) into $amax. */
const absMax = (n) => `(local.set $mv (v128.const f32x4 0 0 0 0))
      ${Array.from({ length: n / 4 }, (_, k) => `(local.set $mv (f32x4.max (local.get $mv) (f32x4.abs (v128.load offset=${16 * k} (local.get $src)))))`).join('\n      ')}
      (local.set $amax (f32.max (f32.max (f32x4.extract_lane 0 (local.get $mv)) (f32x4.extract_lane 1 (local.get $mv))) (f32.max (f32x4.extract_lane 2 (local.get $mv)) (f32x4.extract_lane 3 (local.get $mv)))))`;

/**
 * Q8_0 activations: n floats at $x → per block of 32, d = f16(amax/127) at $d and q = rint(x·127/amax)
 * at $q, 32 bytes per block, or (split ≠ 0) 64: max(q, 0) then max(−q, 0) (the relaxed Q8_0 kernel's form).
 */
const quantQ8_0 = `
  (func (export "quant_q8_0") (param $x i32) (param $n i32) (param $q i32) (param $d i32) (param $split i32)
    (local $src i32) (local $end i32) (local $amax f32) (local $mv v128) (local $sv v128) (local $v v128) (local $w v128)
    (local.set $src (local.get $x))
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (loop $blocks
      ${absMax(32)}
      (f32.store (local.get $d) ${roundF16('(f32.div (local.get $amax) (f32.const 127))')})
      (local.set $sv (f32x4.splat (select (f32.div (f32.const 127) (local.get $amax)) (f32.const 0) (f32.ne (local.get $amax) (f32.const 0)))))
      (local.set $v ${q16(0, false)})
      (local.set $w ${q16(64, false)})
      (if (local.get $split)
        (then
          (v128.store (local.get $q) (i8x16.max_s (local.get $v) (v128.const i32x4 0 0 0 0)))
          (v128.store offset=16 (local.get $q) (i8x16.max_s (local.get $w) (v128.const i32x4 0 0 0 0)))
          (v128.store offset=32 (local.get $q) (i8x16.max_s (i8x16.neg (local.get $v)) (v128.const i32x4 0 0 0 0)))
          (v128.store offset=48 (local.get $q) (i8x16.max_s (i8x16.neg (local.get $w)) (v128.const i32x4 0 0 0 0)))
          (local.set $q (i32.add (local.get $q) (i32.const 64))))
        (else
          (v128.store (local.get $q) (local.get $v))
          (v128.store offset=16 (local.get $q) (local.get $w))
          (local.set $q (i32.add (local.get $q) (i32.const 32)))))
      (local.set $d (i32.add (local.get $d) (i32.const 4)))
      (br_if $blocks (i32.lt_u (local.tee $src (i32.add (local.get $src) (i32.const 128))) (local.get $end)))))`;

/**
 * Q8_K activations: n floats at $x → per super-block of 256, with max the value of largest magnitude
 * (the first), iscale = −127/max, d = 1/iscale at $d, q = min(127, rint(iscale·x)) at $q; the sum of
 * every 32 quants as i32 at $s and, times d, as f32 at $sf (the many-row kernels' form).
 */
const quantQ8_K = `
  (func (export "quant_q8_k") (param $x i32) (param $n i32) (param $q i32) (param $d i32) (param $s i32) (param $sf i32)
    (local $src i32) (local $end i32) (local $j i32) (local $amax f32) (local $max f32) (local $iscale f32) (local $dv f32) (local $mv v128) (local $sv v128) (local $v v128) (local $w v128) (local $sum i32)
    (local.set $src (local.get $x))
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (loop $blocks
      ${absMax(256)}
      ;; the first value whose magnitude is amax
      (local.set $j (i32.const 0))
      (block $found (loop $scan
        (local.set $max (f32.load (i32.add (local.get $src) (i32.shl (local.get $j) (i32.const 2)))))
        (br_if $found (f32.eq (f32.abs (local.get $max)) (local.get $amax)))
        (br_if $scan (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 1))) (i32.const 256)))))
      (local.set $iscale (select (f32.div (f32.const -127) (local.get $max)) (f32.const 0) (f32.ne (local.get $amax) (f32.const 0))))
      (local.set $dv (select (f32.div (f32.const 1) (local.get $iscale)) (f32.const 0) (f32.ne (local.get $amax) (f32.const 0))))
      (f32.store (local.get $d) (local.get $dv))
      (local.set $sv (f32x4.splat (local.get $iscale)))
      (local.set $j (i32.const 0))
      (loop $subs
        (local.set $v ${q16(0, true)})
        (local.set $w ${q16(64, true)})
        (v128.store (local.get $q) (local.get $v))
        (v128.store offset=16 (local.get $q) (local.get $w))
        (local.set $mv (i32x4.extadd_pairwise_i16x8_s (i16x8.add (i16x8.extadd_pairwise_i8x16_s (local.get $v)) (i16x8.extadd_pairwise_i8x16_s (local.get $w)))))
        (local.set $sum (i32.add (i32.add (i32x4.extract_lane 0 (local.get $mv)) (i32x4.extract_lane 1 (local.get $mv))) (i32.add (i32x4.extract_lane 2 (local.get $mv)) (i32x4.extract_lane 3 (local.get $mv)))))
        (i32.store (local.get $s) (local.get $sum))
        (f32.store (local.get $sf) (f32.mul (local.get $dv) (f32.convert_i32_s (local.get $sum))))
        (local.set $src (i32.add (local.get $src) (i32.const 128)))
        (local.set $q (i32.add (local.get $q) (i32.const 32)))
        (local.set $s (i32.add (local.get $s) (i32.const 4)))
        (local.set $sf (i32.add (local.get $sf) (i32.const 4)))
        (br_if $subs (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 1))) (i32.const 8))))
      (local.set $d (i32.add (local.get $d) (i32.const 4)))
      (br_if $blocks (i32.lt_u (local.get $src) (local.get $end)))))`;

/** The module's text: SIMD128 only, or (relaxed) with the relaxed-SIMD matrix-vector kernels. */
const module = (relaxed) => `(module
  (memory (export "memory") 1 65536)
  ${[f32, bf16].map((k) => k(1, relaxed)).join('\n')}
  ${relaxed ? decodeRelaxed() : [q8_0, q4_k, q6_k].map((k) => k(1)).join('\n')}
  ${splitPairs}
  ${quantQ8_0}
  ${quantQ8_K}
  ${unpackQ8_0}
  ${unpackQ4_K()}
  ${unpackQ6_K()}
  ${IGEMMS.join('\n')}
  ${relaxed ? prefillRelaxed() : ''}
)
`;

export const WAT = module(false);
export const WAT_RELAXED = module(true);
