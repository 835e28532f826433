// The WebAssembly text of the relaxed-SIMD matrix-vector (decode) kernels for Q8_0, Q4_K and Q6_K
// weights, one weight row at a time (kernels.wat.mjs's `kernel` loop, R = 1; Q8_0 also two at a
// time), read in their stored blocks. Written for what V8 (Node 20, x64) makes of them (read with --print-wasm-code): every
// vector constant lives in a local set once per call (a v128.const or i8x16.splat inside the loop
// is rebuilt at each use, 3–4 instructions), shifts are i16x8 shifts and a mask (an i8x16 shift is
// emulated with 5), each stored byte is loaded once, no two-operand i8x16.shuffle (two pshufb, an
// or and two 128-bit constants), and few loads per basic block: V8 hoists every load of a block
// to its start and spills what passes 15 registers, so a super-block is a loop over chunks (a
// branch is a barrier) whose block scales were decoded before it into scratch ($sc), read back as
// splats (load16_splat, load32_splat: one instruction each). Instructions per 32 weights in V8's
// code: Q8_0 24, Q4_K 23, Q6_K ≈ 42.
//
// Integer dot products: i16x8.relaxed_dot_i8x16_i7x16_s(a, b) with b's lanes in [0, 127]
// (pmaddubsw; exact on every CPU for such b).
//  - Q8_0: the activation quants split by sign (q⁺, q⁻ both in [0, 127]) as b and the int8
//    weights as a: Σ w·x = dot(w, q⁺) − dot(w, q⁻), pairs ≤ 2·128·127 in i16, summed in i32.
//  - Q4_K: activations as a, nibbles in [0, 15] as b, 32 values per sub-block, pairs summed in
//    i16 (≤ 4·15·128), then × scale_j and summed in i32 by one i32x4.dot_i16x8_s; the mins as one
//    i32x4.dot_i16x8_s of the 6-bit mins with the per-32 activation sums narrowed to i16 (≤ 32·127).
//  - Q6_K: activations as a, the unsigned 6-bit quants q in [0, 63] as b, per 16 values:
//    Σ (q − 32)·x = dot(x, q) − dot(x, 32), × scale (int8) in i32 by i32x4.dot_i16x8_s.
// Per block (Q8_0) or super-block: acc += d_w·d_x·isum in f32x4 lanes, summed across lanes once
// per output: the same integers as ggml's vec_dot kernels, float32 sums in another order.

import { F16X4_CONSTS, f16, f16x4, fsum, kernel, loadScalesMinsWith, SCALES_MINS_MASKS } from './wat.mjs';

/** The constants of f16x4 as locals, set once per call by f16Init ($zero: a local's initial value). */
const F16_LOCALS = { c7fff: '(local.get $c7fff)', c8000: '(local.get $c8000)', bias: '(local.get $bias)', c2m14: '(local.get $c2m14)', zero: '(local.get $zero)' };
const f16Locals = '(local $c7fff v128) (local $c8000 v128) (local $bias v128) (local $c2m14 v128) (local $zero v128)';
const f16Init = Object.entries(F16_LOCALS).filter(([k]) => k !== 'zero').map(([k]) => `(local.set $${k} ${F16X4_CONSTS[k]})`).join('\n    ');

/** The low (high = 0) or high nibbles of the Q4_K bytes in local $q{k}, in [0, 15] ($m15: 15 in every byte; an i16 shift, then the mask). */
const nib = (k, high) => high ? `(v128.and (i16x8.shr_u (local.get $q${k}) (i32.const 4)) (local.get $m15))` : `(v128.and (local.get $q${k}) (local.get $m15))`;

const splat8 = (v) => `(v128.const i8x16 ${Array(16).fill(v).join(' ')})`;

/** The Q4_K kernels' constants in locals ($m15, the f16 widening's, the scale/min masks), and their setting once per call. */
const Q4_K_LOCALS = `${f16Locals} (local $sel v128) (local $low v128) (local $high v128)`;
const Q4_K_INIT = `(local.set $m15 ${splat8(15)})
    ${f16Init}
    (local.set $sel ${SCALES_MINS_MASKS.sel})
    (local.set $low ${SCALES_MINS_MASKS.low})
    (local.set $high ${SCALES_MINS_MASKS.high})`;

/**
 * The first pass of a Q8_0 row (its address in local `w`) for activation row $m: every block's d_w·d_x as f32 to
 * `dst` (four f16 scales widened in one vector, then a leftover block at a time); it also brings
 * the row into L1.
 */
const q8_0Scales = (w, dst) => `
        (local.set $xq (i32.add (local.get $xd) (i32.shl (i32.mul (local.get $m) (local.get $n)) (i32.const 2))))
        (local.set $s ${dst})
        (local.set $p (local.get ${w}))
        (local.set $end (i32.add (local.get $s) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
        (block $scalesDone
          (br_if $scalesDone (i32.ge_u (local.get $s) (local.get $end)))
          (loop $scales
            (local.set $h (v128.load16_lane offset=102 6 (local.get $p) (v128.load16_lane offset=68 4 (local.get $p) (v128.load16_lane offset=34 2 (local.get $p) (v128.load16_lane 0 (local.get $p) (local.get $zero))))))
            (v128.store (local.get $s) (f32x4.mul ${f16x4('(local.get $h)', F16_LOCALS)} (v128.load (local.get $xq))))
            (local.set $p (i32.add (local.get $p) (i32.const 136)))
            (local.set $xq (i32.add (local.get $xq) (i32.const 16)))
            (br_if $scales (i32.lt_u (local.tee $s (i32.add (local.get $s) (i32.const 16))) (local.get $end)))))
        (local.set $end (i32.add ${dst} (i32.shl (local.get $n) (i32.const 2))))
        (block $tailDone
          (br_if $tailDone (i32.ge_u (local.get $s) (local.get $end)))
          (loop $tail
            (f32.store (local.get $s) (f32.mul ${f16('(i32.load16_u (local.get $p))')} (f32.load (local.get $xq))))
            (local.set $p (i32.add (local.get $p) (i32.const 34)))
            (local.set $xq (i32.add (local.get $xq) (i32.const 4)))
            (br_if $tail (i32.lt_u (local.tee $s (i32.add (local.get $s) (i32.const 4))) (local.get $end)))))`;

/**
 * Q8_0 (34-byte blocks: f16 d, 32 int8), $n = blocks per row; x = the activation quants split by
 * sign, 64 bytes per block (quant_q8_0 with split), d_x at $xd ($xs unused), $sc scratch for $n floats. Two
 * passes per row and activation row: the first writes every block's d_w·d_x to $sc (four f16
 * scales widened in one vector; it also brings the row into L1), the second takes blocks in
 * pairs (then a leftover one), each an int8 dot product scaled by its d_w·d_x splat from $sc in
 * one fused multiply-add, two accumulators. Few values live at once: V8 hoists every load of a
 * loop body to its start, and the one-pass form (four blocks and their scales per iteration)
 * spilled a quarter of its instructions.
 */
export function q8_0Decode() {
  // i32x4 of the block at $p + o against the split activations at $xb + xo.
  const block = (o, xo, v) => {
    const half = (h) => `(i32x4.dot_i16x8_s (local.get $ones) (i16x8.sub
              (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $v${v + h}) (v128.load offset=${xo + 16 * h} (local.get $xb)))
              (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $v${v + h}) (v128.load offset=${xo + 32 + 16 * h} (local.get $xb)))))`;
    return `(i32x4.add ${half(0)} ${half(1)})`;
  };
  const loadW = (o, v) => `(local.set $v${v} (v128.load offset=${o + 2} (local.get $p)))
            (local.set $v${v + 1} (v128.load offset=${o + 18} (local.get $p)))`;
  const madd = (a, o, xo, v, so) => `(local.set $a${a} (f32x4.relaxed_madd (f32x4.convert_i32x4_s ${block(o, xo, v)}) (v128.load32_splat offset=${so} (local.get $s)) (local.get $a${a})))`;
  const body = `
        ${q8_0Scales('$w0', '(local.get $sc)')}
        (local.set $a0 (v128.const f32x4 0 0 0 0))
        (local.set $a1 (v128.const f32x4 0 0 0 0))
        (local.set $s (local.get $sc))
        (local.set $p (local.get $w0))
        (local.set $xb (i32.add (local.get $x) (i32.shl (i32.mul (local.get $m) (local.get $n)) (i32.const 6))))
        (local.set $end (i32.add (local.get $sc) (i32.shl (i32.and (local.get $n) (i32.const -2)) (i32.const 2))))
        (block $pairsDone
          (br_if $pairsDone (i32.ge_u (local.get $s) (local.get $end)))
          (loop $pairs
            ${loadW(0, 0)}
            ${loadW(34, 2)}
            ${madd(0, 0, 0, 0, 0)}
            ${madd(1, 34, 64, 2, 4)}
            (local.set $p (i32.add (local.get $p) (i32.const 68)))
            (local.set $xb (i32.add (local.get $xb) (i32.const 128)))
            (br_if $pairs (i32.lt_u (local.tee $s (i32.add (local.get $s) (i32.const 8))) (local.get $end)))))
        (if (i32.and (local.get $n) (i32.const 1)) (then
            ${loadW(0, 0)}
            ${madd(0, 0, 0, 0, 0)}))
        (local.set $out0 ${fsum('(f32x4.add (local.get $a0) (local.get $a1))')})`;
  const init = `(local.set $ones (v128.const i16x8 1 1 1 1 1 1 1 1))
    ${f16Init}`;
  return kernel('q8_0_1', 1, '(param $xd i32) (param $xs i32) (param $sc i32)', `(local $end i32) (local $p i32) (local $xb i32) (local $xq i32) (local $s i32)
    (local $a0 v128) (local $a1 v128) (local $v0 v128) (local $v1 v128) (local $v2 v128) (local $v3 v128) (local $h v128) (local $ones v128) ${f16Locals}`, body, init);
}

/**
 * The start of a two-row kernel's work on activation row $m: `pass(w, dst, i)`, the first pass
 * of row i (its address in local w, its scratch at dst; row 1's at `second`), for both rows, then
 * the two accumulators zeroed and $p, $p1 at the rows.
 */
const twoRowStart = (pass, second) => `
        ${pass('$w0', '(local.get $sc)', 0)}
        ${pass('$w1', second, 1)}
        (local.set $a0 (v128.const f32x4 0 0 0 0))
        (local.set $a1 (v128.const f32x4 0 0 0 0))
        (local.set $p (local.get $w0))
        (local.set $p1 (local.get $w1))`;

/**
 * Q8_0, two weight rows at a time ($w0, $w1; $sc scratch for 2·$n floats): each block's four
 * activation vectors are loaded once for both rows. The scales pass runs per row (row i's d_w·d_x
 * at $sc + 4·i·n), then one block per iteration, an accumulator per row. Live values: 4 activation
 * and 4 weight vectors, the i16 ones and 2 accumulators (V8 keeps 15 in registers). Against the
 * one-row kernel, CPU time on the `small` shapes ([768, 768] to [32768, 768], M = 1): 1.15–1.22×;
 * three and four rows at a time were 0.94–0.96× of two.
 */
export function q8_0Decode2() {
  const half = (w, x) => `(i32x4.dot_i16x8_s (local.get $ones) (i16x8.sub
              (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $v${w}) (local.get $x${x}))
              (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $v${w}) (local.get $x${x + 2}))))`;
  const madd = (i, s) => `(local.set $a${i} (f32x4.relaxed_madd (f32x4.convert_i32x4_s (i32x4.add ${half(2 * i, 0)} ${half(2 * i + 1, 1)})) (v128.load32_splat ${s}) (local.get $a${i})))`;
  const body = `
        (local.set $n4 (i32.shl (local.get $n) (i32.const 2)))
        ${twoRowStart(q8_0Scales, '(i32.add (local.get $sc) (local.get $n4))')}
        (local.set $s (local.get $sc))
        (local.set $xb (i32.add (local.get $x) (i32.shl (i32.mul (local.get $m) (local.get $n)) (i32.const 6))))
        (local.set $end (i32.add (local.get $sc) (local.get $n4)))
        (loop $blocks
          (local.set $x0 (v128.load (local.get $xb)))
          (local.set $x1 (v128.load offset=16 (local.get $xb)))
          (local.set $x2 (v128.load offset=32 (local.get $xb)))
          (local.set $x3 (v128.load offset=48 (local.get $xb)))
          (local.set $v0 (v128.load offset=2 (local.get $p)))
          (local.set $v1 (v128.load offset=18 (local.get $p)))
          (local.set $v2 (v128.load offset=2 (local.get $p1)))
          (local.set $v3 (v128.load offset=18 (local.get $p1)))
          ${madd(0, '(local.get $s)')}
          ${madd(1, '(i32.add (local.get $s) (local.get $n4))')}
          (local.set $p (i32.add (local.get $p) (i32.const 34)))
          (local.set $p1 (i32.add (local.get $p1) (i32.const 34)))
          (local.set $xb (i32.add (local.get $xb) (i32.const 64)))
          (br_if $blocks (i32.lt_u (local.tee $s (i32.add (local.get $s) (i32.const 4))) (local.get $end))))
        (local.set $out0 ${fsum('(local.get $a0)')})
        (local.set $out1 ${fsum('(local.get $a1)')})`;
  const init = `(local.set $ones (v128.const i16x8 1 1 1 1 1 1 1 1))
    ${f16Init}`;
  return kernel('q8_0_2', 2, '(param $xd i32) (param $xs i32) (param $sc i32)', `(local $end i32) (local $p i32) (local $p1 i32) (local $xb i32) (local $xq i32) (local $s i32) (local $n4 i32)
    (local $a0 v128) (local $a1 v128) (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128) (local $v0 v128) (local $v1 v128) (local $v2 v128) (local $v3 v128) (local $h v128) (local $ones v128) ${f16Locals}`, body, init);
}

/**
 * The loop over a row's super-blocks for activation row $m: $p at the super-block (`bytes` long),
 * $bi its index among x's super-blocks, $xb at its 256 activation quants; `body` per super-block.
 */
const superBlocks = (bytes, body) => `(local.set $bi (i32.mul (local.get $m) (local.get $n)))
        (local.set $end (i32.add (local.get $bi) (local.get $n)))
        (local.set $p (local.get $w0))
        (loop $blocks
          (local.set $xb (i32.add (local.get $x) (i32.shl (local.get $bi) (i32.const 8))))
          ${body}
          (local.set $p (i32.add (local.get $p) (i32.const ${bytes})))
          (br_if $blocks (i32.lt_u (local.tee $bi (i32.add (local.get $bi) (i32.const 1))) (local.get $end))))`;

/**
 * Q4_K (144-byte super-blocks: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of
 * nibbles), $n = super-blocks per row; x = Q8_K quants [M, K] int8, $xd [M, nb] f32, $xs [M, K/32]
 * i32 sums, $sc 32 bytes of scratch: y += d8·(d·Σ_j scale_j·isum_j − dmin·Σ_j min_j·bsum_j).
 * Per super-block: the scales and mins decoded and stored as i16 at $sc (each scale then read as
 * a splat: one instruction, no shuffle); a loop over the four 32-byte chunks of nibbles
 * (sub-blocks 2c and 2c + 1); then d and dmin widened together and the mins term. Nothing but the
 * accumulators lives across the loop: V8 hoists every load of an unrolled super-block to its
 * start and spills them.
 */
export function q4_kDecode() {
  const sub = (high) => `(local.set $s (i32x4.add (local.get $s) (i32x4.dot_i16x8_s
              (i16x8.add (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load offset=${32 * high} (local.get $xq)) ${nib(0, high)}) (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load offset=${32 * high + 16} (local.get $xq)) ${nib(1, high)}))
              (v128.load16_splat offset=${2 * high} (local.get $sq)))))`;
  // d and dmin (f16 bits in i32 lanes 0, 1) → f32, times d8.
  const dd = `(f32x4.mul ${f16x4('(local.get $h)', F16_LOCALS)} (v128.load32_splat (i32.add (local.get $xd) (i32.shl (local.get $bi) (i32.const 2)))))`;
  const body = `
        (local.set $a0 (v128.const f32x4 0 0 0 0))
        (local.set $am (v128.const f32x4 0 0 0 0))
        (local.set $end4 (i32.add (local.get $sc) (i32.const 16)))
        ${superBlocks(144, `
          ${loadScalesMinsWith({ sel: '(local.get $sel)', low: '(local.get $low)', high: '(local.get $high)' })}
          (v128.store (local.get $sc) (i16x8.extend_low_i8x16_u (local.get $scm)))
          (v128.store offset=16 (local.get $sc) (i16x8.extend_high_i8x16_u (local.get $scm)))
          (local.set $s (v128.const i32x4 0 0 0 0))
          (local.set $wq (i32.add (local.get $p) (i32.const 16)))
          (local.set $xq (local.get $xb))
          (local.set $sq (local.get $sc))
          (loop $chunks
            (local.set $q0 (v128.load (local.get $wq)))
            (local.set $q1 (v128.load offset=16 (local.get $wq)))
            ${sub(0)}
            ${sub(1)}
            (local.set $wq (i32.add (local.get $wq) (i32.const 32)))
            (local.set $xq (i32.add (local.get $xq) (i32.const 64)))
            (br_if $chunks (i32.lt_u (local.tee $sq (i32.add (local.get $sq) (i32.const 4))) (local.get $end4))))
          (local.set $h (i32x4.extend_low_i16x8_u (v128.load32_zero (local.get $p))))
          (local.set $dd ${dd})
          (local.set $a0 (f32x4.relaxed_madd (f32x4.convert_i32x4_s (local.get $s)) (f32x4.splat (f32x4.extract_lane 0 (local.get $dd))) (local.get $a0)))
          ;; Σ_j min_j·bsum_j, times dmin·d8 (lane 1 of $dd).
          (local.set $xsb (i32.add (local.get $xs) (i32.shl (local.get $bi) (i32.const 5))))
          (local.set $am (f32x4.relaxed_madd
            (f32x4.convert_i32x4_s (i32x4.dot_i16x8_s (v128.load offset=16 (local.get $sc)) (i16x8.narrow_i32x4_s (v128.load (local.get $xsb)) (v128.load offset=16 (local.get $xsb)))))
            (f32x4.splat (f32x4.extract_lane 1 (local.get $dd))) (local.get $am)))
          `)}
        (local.set $out0 (f32.sub ${fsum('(local.get $a0)')} ${fsum('(local.get $am)')}))`;
  return kernel('q4_k_1', 1, '(param $xd i32) (param $xs i32) (param $sc i32)', `(local $bi i32) (local $end i32) (local $end4 i32) (local $p i32) (local $xb i32) (local $xsb i32) (local $wq i32) (local $xq i32) (local $sq i32)
    (local $sv v128) (local $scm v128) (local $h v128) (local $dd v128) (local $s v128) (local $q0 v128) (local $q1 v128) (local $a0 v128) (local $am v128) (local $m15 v128)
    ${Q4_K_LOCALS}`, body, Q4_K_INIT);
}

/**
 * The first pass of a Q4_K row (its address in local `w`) for activation row $m, its scratch at
 * `base` (24·n bytes): per super-block b its eight scales as i16 (base + 16·b) and d·d8, dmin·d8
 * (base + 16·n + 8·b); the mins term Σ_j min_j·bsum_j·dmin·d8 summed into local `am` in f32x4 lanes.
 * It also loads a vector from each 64 bytes of the super-block: the row comes into L1 front to
 * back, one stream, and the second pass reads both rows from there (two rows read side by side
 * streamed from memory at 0.79× the speed of one row at K = 5120).
 */
const q4kPre = (w, base, am) => `
        (local.set ${am} (v128.const f32x4 0 0 0 0))
        (local.set $bi (i32.mul (local.get $m) (local.get $n)))
        (local.set $end (i32.add (local.get $bi) (local.get $n)))
        (local.set $p (local.get ${w}))
        (local.set $q ${base})
        (local.set $f (i32.add (local.get $q) (i32.shl (local.get $n) (i32.const 4))))
        (loop $pre
          ${loadScalesMinsWith({ sel: '(local.get $sel)', low: '(local.get $low)', high: '(local.get $high)' })}
          (v128.store (local.get $q) (i16x8.extend_low_i8x16_u (local.get $scm)))
          (drop (v128.load offset=64 (local.get $p)))
          (drop (v128.load offset=128 (local.get $p)))
          (local.set $h (i32x4.extend_low_i16x8_u (v128.load32_zero (local.get $p))))
          (local.set $dd (f32x4.mul ${f16x4('(local.get $h)', F16_LOCALS)} (v128.load32_splat (i32.add (local.get $xd) (i32.shl (local.get $bi) (i32.const 2))))))
          (v128.store64_lane 0 (local.get $f) (local.get $dd))
          (local.set $xsb (i32.add (local.get $xs) (i32.shl (local.get $bi) (i32.const 5))))
          (local.set ${am} (f32x4.relaxed_madd
            (f32x4.convert_i32x4_s (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $scm)) (i16x8.narrow_i32x4_s (v128.load (local.get $xsb)) (v128.load offset=16 (local.get $xsb)))))
            (f32x4.splat (f32x4.extract_lane 1 (local.get $dd))) (local.get ${am})))
          (local.set $p (i32.add (local.get $p) (i32.const 144)))
          (local.set $q (i32.add (local.get $q) (i32.const 16)))
          (local.set $f (i32.add (local.get $f) (i32.const 8)))
          (br_if $pre (i32.lt_u (local.tee $bi (i32.add (local.get $bi) (i32.const 1))) (local.get $end))))`;

/**
 * Q4_K, two weight rows at a time ($w0, $w1; $sc scratch for 48·$n bytes), in two passes per
 * activation row as Q8_0: the first pass decodes every super-block's scales, d and dmin of a row
 * ({@link q4kPre}, per row), the second is the chunk loop of {@link q4_kDecode} over both rows with
 * each chunk's four activation vectors loaded once, and one fused multiply-add per super-block and
 * row after it. The same integers and float operations per row as the one-row kernel. Against it,
 * CPU time on the `small` shapes ([768, 768] to [32768, 768], M = 1): 1.08–1.14× (the two passes on
 * one row 1.05–1.09×).
 */
export function q4_kDecode2() {
  // Row r's nibbles in $q{2r}, $q{2r+1}; the chunk's activations in $x0 … $x3.
  const sub = (r, high) => `(local.set $s${r} (i32x4.add (local.get $s${r}) (i32x4.dot_i16x8_s
              (i16x8.add (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $x${2 * high}) ${nib(2 * r, high)}) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $x${2 * high + 1}) ${nib(2 * r + 1, high)}))
              (v128.load16_splat offset=${2 * high} (local.get $sq${r})))))`;
  const body = `
        (local.set $n24 (i32.mul (local.get $n) (i32.const 24)))
        ${twoRowStart((w, base, i) => q4kPre(w, base, `$am${i}`), '(i32.add (local.get $sc) (local.get $n24))')}
        (local.set $sq0 (local.get $sc))
        (local.set $sq1 (i32.add (local.get $sc) (local.get $n24)))
        (local.set $f (i32.add (local.get $sc) (i32.shl (local.get $n) (i32.const 4))))
        (local.set $end (i32.add (local.get $f) (i32.shl (local.get $n) (i32.const 3))))
        (local.set $xb (i32.add (local.get $x) (i32.shl (i32.mul (local.get $m) (local.get $n)) (i32.const 8))))
        (loop $blocks
          (local.set $s0 (v128.const i32x4 0 0 0 0))
          (local.set $s1 (v128.const i32x4 0 0 0 0))
          (local.set $wq (i32.add (local.get $p) (i32.const 16)))
          (local.set $wq1 (i32.add (local.get $p1) (i32.const 16)))
          (local.set $xq (local.get $xb))
          (local.set $end4 (i32.add (local.get $sq0) (i32.const 16)))
          (loop $chunks
            (local.set $x0 (v128.load (local.get $xq)))
            (local.set $x1 (v128.load offset=16 (local.get $xq)))
            (local.set $x2 (v128.load offset=32 (local.get $xq)))
            (local.set $x3 (v128.load offset=48 (local.get $xq)))
            (local.set $q0 (v128.load (local.get $wq)))
            (local.set $q1 (v128.load offset=16 (local.get $wq)))
            (local.set $q2 (v128.load (local.get $wq1)))
            (local.set $q3 (v128.load offset=16 (local.get $wq1)))
            ${sub(0, 0)}
            ${sub(0, 1)}
            ${sub(1, 0)}
            ${sub(1, 1)}
            (local.set $wq (i32.add (local.get $wq) (i32.const 32)))
            (local.set $wq1 (i32.add (local.get $wq1) (i32.const 32)))
            (local.set $xq (i32.add (local.get $xq) (i32.const 64)))
            (local.set $sq1 (i32.add (local.get $sq1) (i32.const 4)))
            (br_if $chunks (i32.lt_u (local.tee $sq0 (i32.add (local.get $sq0) (i32.const 4))) (local.get $end4))))
          (local.set $a0 (f32x4.relaxed_madd (f32x4.convert_i32x4_s (local.get $s0)) (v128.load32_splat (local.get $f)) (local.get $a0)))
          (local.set $a1 (f32x4.relaxed_madd (f32x4.convert_i32x4_s (local.get $s1)) (v128.load32_splat (i32.add (local.get $f) (local.get $n24))) (local.get $a1)))
          (local.set $p (i32.add (local.get $p) (i32.const 144)))
          (local.set $p1 (i32.add (local.get $p1) (i32.const 144)))
          (local.set $xb (i32.add (local.get $xb) (i32.const 256)))
          (br_if $blocks (i32.lt_u (local.tee $f (i32.add (local.get $f) (i32.const 8))) (local.get $end))))
        (local.set $out0 (f32.sub ${fsum('(local.get $a0)')} ${fsum('(local.get $am0)')}))
        (local.set $out1 (f32.sub ${fsum('(local.get $a1)')} ${fsum('(local.get $am1)')}))`;
  return kernel('q4_k_2', 2, '(param $xd i32) (param $xs i32) (param $sc i32)', `(local $bi i32) (local $end i32) (local $end4 i32) (local $p i32) (local $p1 i32) (local $q i32) (local $f i32) (local $n24 i32) (local $xb i32) (local $xsb i32) (local $wq i32) (local $wq1 i32) (local $xq i32) (local $sq0 i32) (local $sq1 i32)
    (local $sv v128) (local $scm v128) (local $h v128) (local $dd v128) (local $s0 v128) (local $s1 v128) (local $q0 v128) (local $q1 v128) (local $q2 v128) (local $q3 v128) (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128) (local $a0 v128) (local $a1 v128) (local $am0 v128) (local $am1 v128) (local $m15 v128)
    ${Q4_K_LOCALS}`, body, Q4_K_INIT);
}

/**
 * Q6_K (210-byte super-blocks: 128 bytes of low nibbles ql, 64 bytes of 2-bit highs qh, 16 int8
 * scales, f16 d), $n = super-blocks per row; x = Q8_K quants [M, K] int8, $xd [M, nb] f32, $sc 32
 * bytes of scratch: y += d8·d·Σ_j scale_j·Σ (q − 32)·x over sub-blocks of 16 values. Value
 * 128h + l0 + 32s + i (i < 16) is nibble (s < 2: low, else high) of ql[64h + l0 + 32(s & 1) + i]
 * with bits 2s, 2s + 1 of qh[32h + l0 + i] above it; its scale is sc[8h + l0/16 + 2s]. Per
 * super-block the sixteen scales are stored as i16 at $sc (each then read as a splat), then a
 * loop over h and one over l0 take 64 values an iteration: few live values (V8 hoists every load
 * of an unrolled super-block and spills them).
 */
export function q6_kDecode() {
  const sub = [];
  for (let s = 0; s < 4; s++) {
    const ql = s & 1 ? '(local.get $qb)' : '(local.get $qa)';
    const nib = s < 2 ? `(v128.and ${ql} (local.get $m15))` : `(v128.and (i16x8.shr_u ${ql} (i32.const 4)) (local.get $m15))`;
    // Bits 2s, 2s + 1 of each qh byte moved to bits 4, 5 (i16 shifts by ≤ 4 keep them in their byte).
    const shifted = ['(i16x8.shl (local.get $qh) (i32.const 4))', '(i16x8.shl (local.get $qh) (i32.const 2))', '(local.get $qh)', '(i16x8.shr_u (local.get $qh) (i32.const 2))'][s];
    sub.push(`(local.set $v (v128.load offset=${32 * s} (local.get $xq)))
              (local.set $s (i32x4.add (local.get $s) (i32x4.dot_i16x8_s
                (i16x8.sub (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $v) (v128.or ${nib} (v128.and ${shifted} (local.get $m48)))) (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $v) (local.get $m32)))
                (v128.load16_splat offset=${4 * s} (local.get $sq)))))`);
  }
  const body = `
        (local.set $a0 (v128.const f32x4 0 0 0 0))
        ${superBlocks(210, `
          (local.set $v (v128.load offset=192 (local.get $p)))
          (v128.store (local.get $sc) (i16x8.extend_low_i8x16_s (local.get $v)))
          (v128.store offset=16 (local.get $sc) (i16x8.extend_high_i8x16_s (local.get $v)))
          (local.set $s (v128.const i32x4 0 0 0 0))
          (local.set $h (i32.const 0))
          (loop $halves
            (local.set $l0 (i32.const 0))
            (loop $quarters
              (local.set $wq (i32.add (local.get $p) (i32.add (i32.shl (local.get $h) (i32.const 6)) (local.get $l0))))
              (local.set $xq (i32.add (local.get $xb) (i32.add (i32.shl (local.get $h) (i32.const 7)) (local.get $l0))))
              (local.set $sq (i32.add (local.get $sc) (i32.add (i32.shl (local.get $h) (i32.const 4)) (i32.shr_u (local.get $l0) (i32.const 3)))))
              (local.set $qa (v128.load (local.get $wq)))
              (local.set $qb (v128.load offset=32 (local.get $wq)))
              (local.set $qh (v128.load offset=128 (i32.sub (local.get $wq) (i32.shl (local.get $h) (i32.const 5)))))
              ${sub.join('\n              ')}
              (br_if $quarters (i32.lt_u (local.tee $l0 (i32.add (local.get $l0) (i32.const 16))) (i32.const 32))))
            (br_if $halves (i32.lt_u (local.tee $h (i32.add (local.get $h) (i32.const 1))) (i32.const 2))))
          (local.set $a0 (f32x4.relaxed_madd (f32x4.convert_i32x4_s (local.get $s))
            (f32x4.splat (f32.mul ${f16('(i32.load16_u offset=208 (local.get $p))')} (f32.load (i32.add (local.get $xd) (i32.shl (local.get $bi) (i32.const 2))))))
            (local.get $a0)))
          `)}
        (local.set $out0 ${fsum('(local.get $a0)')})`;
  return kernel('q6_k_1', 1, '(param $xd i32) (param $xs i32) (param $sc i32)', `(local $bi i32) (local $end i32) (local $p i32) (local $xb i32) (local $h i32) (local $l0 i32) (local $wq i32) (local $xq i32) (local $sq i32)
    (local $v v128) (local $s v128) (local $qa v128) (local $qb v128) (local $qh v128) (local $a0 v128) (local $m15 v128) (local $m32 v128) (local $m48 v128)`,
  body, `(local.set $m15 ${splat8(15)})
    (local.set $m32 ${splat8(32)})
    (local.set $m48 ${splat8(48)})`);
}

/** The relaxed module's quantized matrix-vector kernels. */
export const decodeRelaxed = () => [q8_0Decode(), q8_0Decode2(), q4_kDecode(), q4_kDecode2(), q6_kDecode()].join('\n');
