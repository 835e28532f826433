// Pieces of WebAssembly text shared by the kernel modules (kernels.wat.mjs, decode.wat.mjs,
// prefill.wat.mjs): f16 widening, lane sums, the matrix-vector loop over rows and activation rows,
// and the decoding of Q4_K's packed 6-bit scales and mins.

/** f16 bits (i32 expression) → f32: magnitude via the exponent shift (exact for normals and subnormals), then the sign. */
export const f16 = (h) => `(f32.copysign (f32.mul (f32.reinterpret_i32 (i32.shl (i32.and ${h} (i32.const 0x7fff)) (i32.const 13))) (f32.const 0x1p112)) (f32.reinterpret_i32 (i32.shl (i32.and ${h} (i32.const 0x8000)) (i32.const 16))))`;

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
