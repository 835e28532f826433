// Pieces of WebAssembly text shared by the kernel modules (kernels.wat.mjs, decode.wat.mjs,
// prefill.wat.mjs): f16 widening, lane sums, the matrix-vector loop over rows and activation rows,
// and the decoding of Q4_K's packed 6-bit scales and mins.

// f16 → f32 without a subnormal operand: the magnitude bits moved to an f32 exponent bias of 127
// (f = bits << 13 + 112 << 23) are the value for a normal f16; a subnormal one (f < 2^-14, the
// f16's exponent field 0) comes out as 2^-15·(1 + m/1024), and f − (2^-14 − f) = 2^-14·m/1024 is
// its value (both steps exact). Scaling the bits as an f32 subnormal by 2^112 gives the same
// numbers, but a multiply with a subnormal operand costs this CPU (Zen 5) ≈ 100 cycles: Q4_K and
// Q8_0 rows of small weights, whose block scales are f16 subnormals, ran at a third of the speed.

/** f16 bits (i32 expression, evaluated four times) → f32. */
export const f16 = (h) => {
  const f = `(f32.reinterpret_i32 (i32.add (i32.shl (i32.and ${h} (i32.const 0x7fff)) (i32.const 13)) (i32.const 0x38000000)))`;
  return `(f32.copysign (f32.sub ${f} (select (f32.sub (f32.const 0x1p-14) ${f}) (f32.const 0) (f32.lt ${f} (f32.const 0x1p-14))))
            (f32.reinterpret_i32 (i32.shl (i32.and ${h} (i32.const 0x8000)) (i32.const 16))))`;
};

/** The constants of {@link f16x4}, as v128.const (a kernel that converts in a loop holds them in locals: V8 rebuilds a v128.const at every use). */
export const F16X4_CONSTS = {
  c7fff: '(v128.const i32x4 0x7fff 0x7fff 0x7fff 0x7fff)',
  c8000: '(v128.const i32x4 0x8000 0x8000 0x8000 0x8000)',
  bias: '(v128.const i32x4 0x38000000 0x38000000 0x38000000 0x38000000)',
  c2m14: '(v128.const f32x4 0x1p-14 0x1p-14 0x1p-14 0x1p-14)',
  zero: '(v128.const i32x4 0 0 0 0)',
};

/** Four f16 (the low halves of the i32 lanes of the v128 expression `h`, evaluated once by V8's value numbering) → f32x4, with the constants `c`. */
export const f16x4 = (h, c = F16X4_CONSTS) => {
  const f = `(i32x4.add (i32x4.shl (v128.and ${h} ${c.c7fff}) (i32.const 13)) ${c.bias})`;
  return `(v128.or
              (f32x4.sub ${f} (f32x4.pmax ${c.zero} (f32x4.sub ${c.c2m14} ${f})))
              (i32x4.shl (v128.and ${h} ${c.c8000}) (i32.const 16)))`;
};

/** Σ over the lanes of an f32x4. */
export const fsum = (v) => `(f32.add (f32.add (f32x4.extract_lane 0 ${v}) (f32x4.extract_lane 1 ${v})) (f32.add (f32x4.extract_lane 2 ${v}) (f32x4.extract_lane 3 ${v})))`;

/** The R texts f(0) … f(R − 1), one a line. */
export const rep = (R, f) => Array.from({ length: R }, (_, i) => f(i)).join('\n');
/** Locals $name0 … $name{R−1} of `type`. */
export const locals = (R, name, type) => rep(R, (i) => `(local $${name}${i} ${type})`);

/**
 * A kernel over rows [0, nr) (nr a multiple of R) and activation rows [0, M):
 * y[m·ldy + r] = Σ_k x[m, k]·W[r, k], W's row r at w + r·rs. `body` computes the R accumulators
 * for activation row m into f32 locals $out0 … $out{R−1}; `extra` are further params and locals,
 * `init` runs once before the loops (constants held in locals: V8 materializes a v128.const
 * at every use inside a loop).
 */
export function kernel(name, R, extraParams, extraLocals, body, init = '') {
  return `
  (func (export "${name}") (param $w i32) (param $rs i32) (param $nr i32) (param $n i32) (param $x i32) (param $M i32) (param $y i32) (param $ldy i32) ${extraParams}
    (local $r i32) (local $m i32) ${locals(R, 'w', 'i32')} ${locals(R, 'out', 'f32')} ${extraLocals}
    ${init}
    (block $done (loop $rows
      (br_if $done (i32.ge_u (local.get $r) (local.get $nr)))
      ${rep(R, (i) => `(local.set $w${i} (i32.add (local.get $w) (i32.mul (i32.add (local.get $r) (i32.const ${i})) (local.get $rs))))`)}
      (local.set $m (i32.const 0))
      (loop $ms
        ${body}
        ${rep(R, (i) => `(f32.store offset=${4 * i} (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (local.get $m) (local.get $ldy)) (local.get $r)) (i32.const 2))) (local.get $out${i}))`)}
        (br_if $ms (i32.lt_u (local.tee $m (i32.add (local.get $m) (i32.const 1))) (local.get $M))))
      (local.set $r (i32.add (local.get $r) (i32.const ${R})))
      (br $rows)))
  )`;
}

/**
 * The eight 6-bit scales and eight 6-bit mins of the Q4_K super-block at $p (12 packed bytes at
 * $p + 4, ggml's get_scale_min_k4) as one i8x16: lanes 0–7 the scales, 8–15 the mins. Scale j < 4
 * is b[j] & 63 and min j < 4 is b[j + 4] & 63; for j ≥ 4 the low four bits come from b[j + 4]
 * (low nibble: scale, high nibble: min) and the high two from the top bits of b[j − 4] (scale) or b[j].
 * Both shuffles move whole 32-bit words (one pshufd), the shifts are i16 shifts whose bits from the
 * neighbouring byte the masks clear (V8 emulates an i8x16 shift with five instructions). `c` holds
 * the three masks: inline constants, or locals set once by a kernel that decodes in a loop (V8
 * rebuilds a v128.const at every use inside a loop).
 */
export const SCALES_MINS_MASKS = {
  sel: '(v128.const i8x16 0 0 0 0 0 0 0 0 0 0 0 0 -1 -1 -1 -1)',
  low: '(v128.const i8x16 63 63 63 63 15 15 15 15 63 63 63 63 15 15 15 15)',
  high: '(v128.const i8x16 0 0 0 0 48 48 48 48 0 0 0 0 48 48 48 48)',
};
const scalesMins = (c) => {
  const words = '(i8x16.shuffle 0 1 2 3 8 9 10 11 4 5 6 7 8 9 10 11 (local.get $sv) (local.get $sv))';
  return `(v128.or
            (v128.and (v128.bitselect (i16x8.shr_u ${words} (i32.const 4)) ${words} ${c.sel}) ${c.low})
            (v128.and (i16x8.shr_u (i8x16.shuffle 0 1 2 3 0 1 2 3 4 5 6 7 4 5 6 7 (local.get $sv) (local.get $sv)) (i32.const 2)) ${c.high}))`;
};

/** Decode the scales and mins of the super-block at $p into $scm (via $sv), with the masks `c`. */
export const loadScalesMinsWith = (c) => `(local.set $sv (v128.load offset=4 (local.get $p)))
          (local.set $scm ${scalesMins(c)})`;
/** Decode the scales and mins of the super-block at $p into $scm (via $sv). */
export const loadScalesMins = loadScalesMinsWith(SCALES_MINS_MASKS);
