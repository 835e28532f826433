// The WebAssembly text of the quantized matrix-vector kernels (SIMD128). Each kernel computes
// y[m, r] = Σ_blocks (d_w · d_x) · Σ q_w · q_x over integer quants, reading the weight blocks as
// stored; the activations arrive already quantized (int8 + scales, see qmatmul.ts). The integer
// sums stay in i32x4 lanes, are scaled in f32x4 lanes, and are summed across lanes once per row.
// Loops over the sub-blocks of a Q4_K super-block are unrolled here, in JavaScript.

/** f16 bits (i32 expression) → f32: magnitude via the exponent shift (exact for normals and subnormals), then the sign. */
const f16 = (h) => `(f32.copysign (f32.mul (f32.reinterpret_i32 (i32.shl (i32.and ${h} (i32.const 0x7fff)) (i32.const 13))) (f32.const 0x1p112)) (f32.reinterpret_i32 (i32.shl (i32.and ${h} (i32.const 0x8000)) (i32.const 16))))`;

/** Σ over 16 int8 lanes of a·b as an i32x4 (two i16x8 dot products). */
const dot16 = (a, b) => `(i32x4.add
      (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s ${a}) (i16x8.extend_low_i8x16_s ${b}))
      (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s ${a}) (i16x8.extend_high_i8x16_s ${b})))`;

const fsum = (v) => `(f32.add (f32.add (f32x4.extract_lane 0 ${v}) (f32x4.extract_lane 1 ${v})) (f32.add (f32x4.extract_lane 2 ${v}) (f32x4.extract_lane 3 ${v})))`;


/** 6-bit scale (or min) j of the 12 packed bytes at $sc (ggml's get_scale_min_k4). */
function scaleMin(j) {
  const b = (k) => `(i32.load8_u offset=${k} (local.get $sc))`;
  if (j < 4) return [`(i32.and ${b(j)} (i32.const 63))`, `(i32.and ${b(j + 4)} (i32.const 63))`];
  return [
    `(i32.or (i32.and ${b(j + 4)} (i32.const 15)) (i32.shl (i32.shr_u ${b(j - 4)} (i32.const 6)) (i32.const 4)))`,
    `(i32.or (i32.shr_u ${b(j + 4)} (i32.const 4)) (i32.shl (i32.shr_u ${b(j)} (i32.const 6)) (i32.const 4)))`,
  ];
}

/** Q4_K super-block body: accumulates Σ scale_j·isum_j into $vsc and Σ min_j·bsum_j into $im. */
function q4kBody() {
  const out = [];
  for (let c = 0; c < 4; c++) {
    for (const half of [0, 1]) {
      const j = 2 * c + half;
      const [sc, m] = scaleMin(j);
      const q = (k) => half === 0
        ? `(v128.and (v128.load offset=${32 * c + 16 * k} (local.get $qs)) (i8x16.splat (i32.const 15)))`
        : `(i8x16.shr_u (v128.load offset=${32 * c + 16 * k} (local.get $qs)) (i32.const 4))`;
      const x = (k) => `(v128.load offset=${64 * c + 32 * half + 16 * k} (local.get $xb))`;
      out.push(`(local.set $vsc (i32x4.add (local.get $vsc) (i32x4.mul (i32x4.add ${dot16(q(0), x(0))} ${dot16(q(1), x(1))}) (i32x4.splat ${sc}))))`);
      out.push(`(local.set $im (i32.add (local.get $im) (i32.mul ${m} (i32.load offset=${4 * j} (local.get $bs)))))`);
    }
  }
  return out.join('\n          ');
}

export const WAT = `(module
  (memory (export "memory") 1)

  ;; y[m*nr + r] = Σ_b f16(w.d)·xd[m*nb+b] · Σ_j w.q[j]·xq[j] over Q8_0 blocks (34 bytes: f16 d, 32 int8).
  (func (export "q8_0") (param $w i32) (param $nr i32) (param $nb i32) (param $xq i32) (param $xd i32) (param $M i32) (param $y i32)
    (local $r i32) (local $m i32) (local $b i32) (local $row i32) (local $blk i32) (local $xb i32) (local $acc v128) (local $v v128)
    (loop $rows
      (local.set $row (i32.add (local.get $w) (i32.mul (local.get $r) (i32.mul (local.get $nb) (i32.const 34)))))
      (local.set $m (i32.const 0))
      (loop $ms
        (local.set $acc (v128.const f32x4 0 0 0 0))
        (local.set $b (i32.const 0))
        (local.set $blk (local.get $row))
        (local.set $xb (i32.add (local.get $xq) (i32.mul (i32.mul (local.get $m) (local.get $nb)) (i32.const 32))))
        (loop $blocks
          (local.set $v (i32x4.add ${dot16('(v128.load offset=2 (local.get $blk))', '(v128.load (local.get $xb))')} ${dot16('(v128.load offset=18 (local.get $blk))', '(v128.load offset=16 (local.get $xb))')}))
          ;; Per-lane partial sums scaled by d_w·d_x, summed across lanes once per row.
          (local.set $acc (f32x4.add (local.get $acc)
            (f32x4.mul (f32x4.convert_i32x4_s (local.get $v))
              (f32x4.splat (f32.mul ${f16('(i32.load16_u (local.get $blk))')}
                (f32.load (i32.add (local.get $xd) (i32.shl (i32.add (i32.mul (local.get $m) (local.get $nb)) (local.get $b)) (i32.const 2)))))))))
          (local.set $blk (i32.add (local.get $blk) (i32.const 34)))
          (local.set $xb (i32.add (local.get $xb) (i32.const 32)))
          (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb))))
        (f32.store (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (local.get $m) (local.get $nr)) (local.get $r)) (i32.const 2))) ${fsum('(local.get $acc)')})
        (br_if $ms (i32.lt_u (local.tee $m (i32.add (local.get $m) (i32.const 1))) (local.get $M))))
      (br_if $rows (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (local.get $nr)))))

  ;; The same over Q4_K super-blocks (144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins,
  ;; 128 bytes of nibbles) against Q8_K activations (256 int8, f32 d, i32 sums per 32 in $xs):
  ;; y += d8·(d·Σ_j scale_j·isum_j − dmin·Σ_j min_j·bsum_j).
  (func (export "q4_k") (param $w i32) (param $nr i32) (param $nb i32) (param $xq i32) (param $xd i32) (param $xs i32) (param $M i32) (param $y i32)
    (local $r i32) (local $m i32) (local $b i32) (local $row i32) (local $blk i32) (local $xb i32) (local $bs i32) (local $acc v128) (local $accm f32)
    (local $vsc v128) (local $im i32) (local $sc i32) (local $qs i32) (local $xi i32) (local $d8 f32)
    (loop $rows
      (local.set $row (i32.add (local.get $w) (i32.mul (local.get $r) (i32.mul (local.get $nb) (i32.const 144)))))
      (local.set $m (i32.const 0))
      (loop $ms
        (local.set $acc (v128.const f32x4 0 0 0 0))
        (local.set $accm (f32.const 0))
        (local.set $b (i32.const 0))
        (local.set $blk (local.get $row))
        (local.set $xi (i32.mul (local.get $m) (local.get $nb)))
        (loop $blocks
          (local.set $xb (i32.add (local.get $xq) (i32.shl (local.get $xi) (i32.const 8))))
          (local.set $bs (i32.add (local.get $xs) (i32.shl (local.get $xi) (i32.const 5))))
          (local.set $d8 (f32.load (i32.add (local.get $xd) (i32.shl (local.get $xi) (i32.const 2)))))
          (local.set $sc (i32.add (local.get $blk) (i32.const 4)))
          (local.set $qs (i32.add (local.get $blk) (i32.const 16)))
          (local.set $vsc (v128.const i32x4 0 0 0 0))
          (local.set $im (i32.const 0))
          ${q4kBody()}
          ;; Scale lanes by d·d8 (summed across lanes once per row); the mins' term is scalar.
          (local.set $acc (f32x4.add (local.get $acc)
            (f32x4.mul (f32x4.convert_i32x4_s (local.get $vsc)) (f32x4.splat (f32.mul ${f16('(i32.load16_u (local.get $blk))')} (local.get $d8))))))
          (local.set $accm (f32.add (local.get $accm)
            (f32.mul (f32.mul ${f16('(i32.load16_u offset=2 (local.get $blk))')} (local.get $d8)) (f32.convert_i32_s (local.get $im)))))
          (local.set $blk (i32.add (local.get $blk) (i32.const 144)))
          (local.set $xi (i32.add (local.get $xi) (i32.const 1)))
          (br_if $blocks (i32.lt_u (local.tee $b (i32.add (local.get $b) (i32.const 1))) (local.get $nb))))
        (f32.store (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (local.get $m) (local.get $nr)) (local.get $r)) (i32.const 2))) (f32.sub ${fsum('(local.get $acc)')} (local.get $accm)))
        (br_if $ms (i32.lt_u (local.tee $m (i32.add (local.get $m) (i32.const 1))) (local.get $M))))
      (br_if $rows (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (local.get $nr)))))
)
`;
